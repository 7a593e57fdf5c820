// The durable history on the chat page (design §5 "The chat page"): the newest page of the
// message log first, older pages as the reader scrolls up (a cursor each, never all at
// once), and a jump to any line (a search hit) with paging forward from there until the
// view meets the present again. What it loads goes into the Conversation, which shows every
// line once, however it arrived.
//
// The loaded lines are one window without gaps. "Attached": the window reaches the present
// (the session and the live messages follow it). After a jump to a line older than the
// window, the view is "detached": it shows the jumped-to window only (`visibleUntil`), pages
// forward from its newer end, and is attached again when that meets what was loaded before
// — or when the reader asks for the present, which drops the jumped-to window.

import { api } from "./api.js";

export const HISTORY_PAGE = 50;

/** The first page's request, for a page that starts it before it knows more. */
export function firstPage(characterId) {
  return api.history(characterId, { limit: HISTORY_PAGE });
}

export class HistoryLoader {
  /** `onOlder()`: older lines are about to come in above (the view keeps the reader's place). */
  constructor({ characterId, conversation, onChange = () => {}, onOlder = () => {}, onError = () => {} }) {
    this.characterId = characterId;
    this.conversation = conversation;
    this.onChange = onChange;
    this.onOlder = onOlder;
    this.onError = onError;
    this.origins = {};
    this.older = null; // cursor of the page before the window; null: the beginning
    this.newer = null; // detached only: cursor of the page after the window
    this.loaded = false; // the first page came
    this.loading = null; // the request in flight
    this.detached = null; // {until, saved: {older, from}} while a jumped-to window is shown
  }

  /** The time up to which the view shows entries (Infinity: everything, attached). */
  get visibleUntil() {
    return this.detached ? this.detached.until : Infinity;
  }

  get atBeginning() {
    return this.loaded && this.older === null;
  }

  /** The newest page: the first screen (`prefetched`: its request, started early). */
  async loadLatest(prefetched = null) {
    const page = (prefetched && await prefetched.catch(() => null)) || await this.fetch({});
    if (!page) return;
    this.older = page.older;
    this.loaded = true;
    this.merge(page);
  }

  /** The page before the window (scrolling up); false when there is none or one runs. */
  async loadOlder() {
    if (this.loading || !this.loaded || this.older === null) return false;
    const page = await this.fetch({ before: this.older });
    if (!page) return false;
    this.older = page.older;
    this.onOlder();
    this.merge(page);
    return true;
  }

  /** Detached: the page after the window (scrolling down toward the present). */
  async loadNewer() {
    if (this.loading || !this.detached) return false;
    const page = await this.fetch({ after: this.newer });
    if (!page) return false;
    this.newer = page.newer;
    const lines = page.messages || [];
    const last = lines.length ? Number(lines[lines.length - 1].sort_at) : Infinity;
    if (page.newer === null || last >= this.detached.saved.from) {
      this.detached = null; // met what was loaded before: one window again
    } else {
      this.detached.until = last;
    }
    this.merge(page);
    return true;
  }

  /**
   * Show the place of a history line (a search hit): loaded already, or a window around
   * it. Answers the entry key to scroll to.
   */
  async open(line) {
    const key = this.conversation.keyOfLine(line, this.origins);
    if (this.conversation.entries.has(key) && this.isVisible(this.conversation.entries.get(key))) return key;
    const page = await this.fetch({ around: line.cursor });
    if (!page) return null;
    const lines = page.messages || [];
    const saved = this.detached ? this.detached.saved : { older: this.older, from: this.windowStart() };
    this.older = page.older;
    this.newer = page.newer;
    const last = lines.length ? Number(lines[lines.length - 1].sort_at) : Infinity;
    this.detached = page.newer === null || last >= saved.from ? null : { until: last, saved };
    this.merge(page);
    return this.conversation.keyOfLine(line, this.origins);
  }

  /** Back to the present: the jumped-to window goes, the window before it is shown again. */
  returnToPresent() {
    if (!this.detached) return;
    const { saved } = this.detached;
    this.detached = null;
    this.conversation.dropArchived(saved.from);
    this.older = saved.older;
    this.newer = null;
    this.onChange();
  }

  isVisible(entry) {
    return entry.at <= this.visibleUntil;
  }

  /** The time of the oldest entry shown (the window's older end). */
  windowStart() {
    let first = Infinity;
    for (const entry of this.conversation.entries.values()) first = Math.min(first, entry.at || Infinity);
    return first;
  }

  merge(page) {
    this.origins = page.origins || this.origins;
    this.conversation.mergeHistory(page.messages || [], this.origins);
    this.onChange();
  }

  async fetch(params) {
    if (this.loading) await this.loading.catch(() => {});
    this.loading = api.history(this.characterId, { ...params, limit: HISTORY_PAGE });
    try {
      return await this.loading;
    } catch (error) {
      this.onError(error);
      return null;
    } finally {
      this.loading = null;
    }
  }
}
