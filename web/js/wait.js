// How long the person has waited for the character's answer, and whether that is longer than
// usual (issue 36 item 5): the stage indicator shows the seconds once the wait is noticeable,
// and says so when a turn takes longer than this browser's recent turns did. DOM-free: the
// clock and the storage are given (tests/js/wait.test.mjs).

export const SHOW_SECONDS_AFTER = 3; // a shorter wait needs no number
export const SLOW_FLOOR_SECONDS = 5; // never "longer than usual" below this
export const SLOW_FACTOR = 2; // longer than usual: more than twice the recent median
export const USUAL_WITHOUT_HISTORY = 10; // seconds, before this browser has seen a turn
const KEPT = 20; // recent waits remembered
const STORAGE_KEY = "novaberg.waitSeconds";

export class WaitClock {
  /** `now()`: seconds (monotonic); `storage`: localStorage-like, shared by the tabs. */
  constructor({ now = () => performance.now() / 1000, storage = null } = {}) {
    this.now = now;
    this.storage = storage;
    this.since = null; // when the current wait began
  }

  /** The person is waiting (a message sent, a turn running); idempotent. */
  waiting() {
    if (this.since === null) this.since = this.now();
  }

  /** The wait ended with an answer: remembered as one of the usual ones. */
  answered() {
    if (this.since === null) return;
    this.remember(this.now() - this.since);
    this.since = null;
  }

  /** The wait ended otherwise (a failure, a reset): not a usual wait. */
  ended() {
    this.since = null;
  }

  elapsed() {
    return this.since === null ? 0 : this.now() - this.since;
  }

  /** Seconds to show, or null while the wait is short. */
  shownSeconds() {
    const elapsed = this.elapsed();
    return elapsed >= SHOW_SECONDS_AFTER ? Math.floor(elapsed) : null;
  }

  /** The median of the recent waits (or the default before there are any). */
  usual() {
    const recent = this.recent();
    if (!recent.length) return USUAL_WITHOUT_HISTORY;
    const sorted = [...recent].sort((a, b) => a - b);
    const middle = Math.floor(sorted.length / 2);
    return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
  }

  slow() {
    return this.since !== null
      && this.elapsed() > Math.max(SLOW_FLOOR_SECONDS, SLOW_FACTOR * this.usual());
  }

  recent() {
    try {
      const stored = JSON.parse(this.storage?.getItem(STORAGE_KEY) || "[]");
      return Array.isArray(stored) ? stored.filter((v) => Number.isFinite(v) && v >= 0) : [];
    } catch {
      return []; // another version's or a broken value: start again
    }
  }

  remember(seconds) {
    if (!this.storage) return;
    const recent = [...this.recent(), Math.round(seconds * 10) / 10].slice(-KEPT);
    try {
      this.storage.setItem(STORAGE_KEY, JSON.stringify(recent));
    } catch {
      // storage full or denied: the default "usual" holds
    }
  }
}
