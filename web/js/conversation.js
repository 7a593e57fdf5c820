// The conversation as this tab knows it: plain data, no DOM, so a test can drive it alone.
//
// Bookkeeping (design §5 "Delivery"):
// - This tab keeps the set of its own open message ids. A sent message is pending until a
//   `character_response` or `turn_failed` names its id; then the id is closed.
// - The ids this tab sent and has not seen answered are kept in a per-tab ledger
//   (sessionStorage), with their text: a reload of the tab keeps them pending, and a message
//   that failed or could not be sent keeps its notice and its resend button.
// - Everything is deduplicated: a user message by `message_id`, a character utterance by
//   `turn_id` and origin (a `continue` run inherits its turn's id), a failure by `turn_id`.
//   The same thing arriving twice (live and again from the session after a reconnect) is
//   shown once.
// - A live answer that names only ids this browser never sent is an answer to another
//   device (or browser), and says so. The tabs of one browser are one person: the ids any
//   of them sent are shared through `browserStorage` (localStorage). History loaded from the
//   session or the message log carries no such label: it is the shared conversation.
// - The durable history (`GET …/history`, web/js/history.js) merges into the same entries
//   by the same keys as the session and the live messages, so a line is shown once however
//   it arrived. `workingSince` says where the character's working memory (the session)
//   begins: older entries are archive. A session reset ends the session, not the history.
//
// It is one class, longer than a module usually is, on purpose: nearly every method reads
// and writes the same state (the entries and their ids, this tab's open and sent ids, the
// running turns, the ledger), and the rules above hold only if one place owns it.

const OPEN_TURN_STATES = new Set(["queued", "path1", "path2"]);
const ACCEPTED = "accepted";

// A user entry's status: sending (POST in flight), pending (accepted, no answer yet),
// answered, failed (turn_failed named it), unsent (the POST itself failed), settled (history
// from the session whose fate this tab does not know: shown without a marker).
const LEDGER_STATUSES = new Set(["sending", "pending", "failed", "unsent"]);

// How many of this browser's sent ids its tabs share (localStorage): enough for every
// message of a long day; older ones are labelled by the history, which carries no label.
const BROWSER_IDS_KEPT = 500;

let localCounter = 0;

/** A history line as the session turn it was stored from (the seeds' field names). */
function turnOfLine(line) {
  return { turn_id: line.turn_id, rolle: line.role, inhalt: line.text, zeit: line.sort_at ?? line.at,
           nachrichten_ids: line.message_ids || [], herkunft: line.origin || "" };
}

function newLocalKey() {
  localCounter += 1;
  const random = Math.random().toString(36).slice(2, 10);
  return `local:${Date.now().toString(36)}${random}${localCounter}`;
}

function sameText(a, b) {
  return String(a).trim() === String(b).trim();
}

export class Conversation {
  /**
   * `storage`: a Storage (sessionStorage in the app) for this tab's ledger, or null.
   * `storageKey`: where in it, one key per user and character.
   */
  constructor({ storage = null, storageKey = "novaberg:ledger", browserStorage = null,
                browserKey = "novaberg:sent" } = {}) {
    this.storage = storage;
    this.storageKey = storageKey;
    this.browserStorage = browserStorage;
    this.browserKey = browserKey;
    this.browserIds = new Set(); // ids any tab of this browser sent (browserStorage)
    this.workingSince = null; // where the session begins (server time), null: not known
    this.sessionEmpty = false;
    this.entries = new Map(); // key -> entry
    this.keyById = new Map(); // message_id -> key of the user entry that shows it
    this.open = new Set(); // this tab's open message ids
    this.sentIds = new Set(); // every id this tab sent (and the restored open ones)
    this.endedByReset = new Set(); // ids a session reset ended: never opened again
    this.heldAccepted = []; // broadcasts of unknown ids that wait for this tab's POSTs
    this.turns = new Map(); // running turn_id -> {state, stage, messageIds, at}
    this.summary = null;
    this.seq = 0;
    this.listeners = new Set();
    this.restore();
    this.readBrowserIds();
  }

  // --- observers ----------------------------------------------------------------------

  /** `listener(change)` is called after every change; change.kind names what happened. */
  subscribe(listener) {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  emit(change) {
    for (const listener of this.listeners) listener(change);
  }

  // --- reading ------------------------------------------------------------------------

  /** All entries in display order: by server time, then by arrival. */
  ordered() {
    return [...this.entries.values()].sort((a, b) => a.at - b.at || a.seq - b.seq);
  }

  userEntry(messageId) {
    const key = this.keyById.get(messageId);
    return key ? this.entries.get(key) : undefined;
  }

  /** The running turn shown in the stage indicator: the newest one. */
  activeTurn() {
    let newest = null;
    for (const [turnId, turn] of this.turns) {
      if (!newest || turn.at >= newest.at) newest = { turnId, ...turn };
    }
    return newest;
  }

  openIds() {
    return [...this.open];
  }

  // --- sending ------------------------------------------------------------------------

  /** A message the user just sent: shown at once as "sending"; returns its local key. */
  beginSend(text) {
    const key = newLocalKey();
    this.put({ key, kind: "user", ids: [], text, at: Date.now() / 1000, mine: true, live: true,
               status: "sending" });
    this.persist();
    this.emit({ kind: "entries" });
    return key;
  }

  /** The server accepted it (202): the entry takes the server's id and time. */
  sendAccepted(localKey, messageId, receivedAt) {
    if (this.endedByReset.has(messageId)) {
      // Accepted before a reset that already ended it (its 202 came late): gone with the
      // rest of the session.
      this.entries.delete(localKey);
      this.persist();
      this.emit({ kind: "entries" });
      this.releaseHeld();
      return;
    }
    this.sentIds.add(messageId);
    this.rememberForBrowser(messageId);
    // The answer (or failure) may have overtaken the 202: it was for this tab after all.
    const outcome = this.outcome(messageId);
    if (!outcome) this.open.add(messageId);
    for (const entry of this.entries.values()) {
      if (entry.kind === "character" && entry.answersOther && entry.messageIds.includes(messageId)) {
        entry.answersOther = false;
        this.touch(entry);
      }
    }
    const local = this.entries.get(localKey);
    const existing = this.userEntry(messageId);
    if (existing && existing !== local) {
      // The broadcast `message_accepted` came first and made an entry: keep that one.
      this.entries.delete(localKey);
      existing.mine = true;
      existing.live = true;
      if (existing.status !== "answered" && existing.status !== "failed") existing.status = "pending";
      this.touch(existing);
    } else if (local) {
      this.entries.delete(localKey);
      this.put({ ...local, key: `m:${messageId}`, ids: [messageId], at: receivedAt,
                 status: outcome || "pending", seq: local.seq });
    }
    this.persist();
    this.emit({ kind: "entries" });
    this.releaseHeld();
  }

  /** The POST failed (network, 4xx, 5xx): the text stays, with a retry button. */
  sendFailed(localKey, error) {
    const local = this.entries.get(localKey);
    if (!local) return;
    local.status = "unsent";
    local.error = error;
    this.touch(local);
    this.persist();
    this.emit({ kind: "entries" });
    this.releaseHeld();
  }

  hasSending() {
    for (const entry of this.entries.values()) {
      if (entry.kind === "user" && entry.status === "sending") return true;
    }
    return false;
  }

  /** No POST of this tab is in flight any more: the held broadcasts are shown now. */
  releaseHeld() {
    if (this.hasSending() || !this.heldAccepted.length) return;
    const held = this.heldAccepted;
    this.heldAccepted = [];
    for (const message of held) this.onAccepted(message);
  }

  /** A retry of an unsent message starts: its entry goes back to "sending". */
  retrySend(localKey) {
    const local = this.entries.get(localKey);
    if (!local) return null;
    local.status = "sending";
    local.error = null;
    local.maybeSent = false;
    this.touch(local);
    this.persist();
    this.emit({ kind: "entries" });
    return local.text;
  }

  /** The resend of a failure notice was started: it is not offered twice. */
  markResent(failureKey) {
    const failure = this.entries.get(failureKey);
    if (!failure) return;
    failure.resent = true;
    for (const id of failure.messageIds) {
      const entry = this.userEntry(id);
      if (entry && entry.mine) entry.resent = true;
      this.touch(entry);
    }
    this.touch(failure);
    this.persist();
    this.emit({ kind: "entries" });
  }

  /** The texts a failure notice can resend, in order (those this tab knows). */
  resendTexts(failureKey) {
    const failure = this.entries.get(failureKey);
    if (!failure) return [];
    const texts = [];
    const seen = new Set();
    for (const id of failure.messageIds) {
      const entry = this.userEntry(id);
      if (entry && !seen.has(entry.key) && !entry.placeholder) {
        seen.add(entry.key);
        texts.push(entry.text);
      }
    }
    return texts;
  }

  // --- WebSocket messages (design §9) ---------------------------------------------------

  apply(message) {
    switch (message.type) {
      case "message_accepted":
        return this.onAccepted(message);
      case "turn_state":
        return this.onTurnState(message);
      case "character_stage":
        return this.onStage(message);
      case "character_response":
        return this.onResponse(message);
      case "turn_failed":
        return this.onFailed(message);
      case "session_reset":
        return this.reset(message.at);
      default:
        return undefined; // a newer server may send more; an old client ignores it
    }
  }

  onAccepted({ message_id: id, text, received_at: receivedAt }) {
    if (this.endedByReset.has(id)) return; // a message of the session that was reset
    const existing = this.userEntry(id);
    if (existing) {
      if (existing.placeholder && text) {
        existing.text = text;
        existing.placeholder = false;
        this.touch(existing);
        this.emit({ kind: "entries" });
      }
      return;
    }
    // Matched by id only. Our own broadcast may overtake the 202: while a POST of this tab
    // is in flight, an id it does not know waits until the POSTs are answered (then it is
    // either ours, named by the 202, or another tab's).
    if (this.hasSending()) {
      this.heldAccepted.push({ message_id: id, text, received_at: receivedAt });
      return;
    }
    this.put({ key: `m:${id}`, kind: "user", ids: [id], text, at: receivedAt,
               mine: this.sentIds.has(id), live: true, sameBrowser: this.browserIds.has(id),
               status: this.isAnswered(id) ? "answered" : "pending" });
    this.dropMaybeSent(text);
    this.emit({ kind: "entries" });
  }

  onTurnState({ turn_id: turnId, state, message_ids: messageIds = [], at }) {
    if (OPEN_TURN_STATES.has(state)) {
      const turn = this.turns.get(turnId);
      this.turns.set(turnId, { state, stage: turn ? turn.stage : null, messageIds,
                               at: turn ? turn.at : at || Date.now() / 1000 });
      for (const id of messageIds) {
        const entry = this.userEntry(id);
        if (entry) {
          entry.turnId = turnId;
          // A running turn names it: it waits for an answer (history merged before the
          // snapshot arrived could not know that).
          if (entry.status === "sending" || entry.status === "settled") entry.status = "pending";
          this.touch(entry);
        }
      }
    } else {
      // delivered / failed: the response or failure message closes the ids.
      this.turns.delete(turnId);
    }
    this.emit({ kind: "turns" });
  }

  onStage({ turn_id: turnId, stage, at }) {
    const turn = this.turns.get(turnId);
    if (turn) {
      turn.stage = stage;
    } else {
      // Its turn_state has not come (yet): the stage name alone tells what runs.
      this.turns.set(turnId, { state: null, stage, messageIds: [], at: at || Date.now() / 1000 });
    }
    this.emit({ kind: "turns" });
  }

  onResponse(message) {
    const { turn_id: turnId, message_ids: messageIds = [], text, origin, emotion, arousal, at } = message;
    this.turns.delete(turnId);
    const key = `t:${turnId}:${origin}`;
    if (!this.entries.has(key) && !this.hasCharacterText(turnId, text)) {
      this.put({ key, kind: "character", turnId, origin, text, messageIds, emotion, arousal,
                 at: at || Date.now() / 1000, live: true,
                 answersOther: this.answersOther(messageIds) });
    }
    this.close(messageIds, "answered");
    this.persist();
    this.emit({ kind: "entries", unknownIds: messageIds.filter((id) => !this.keyById.has(id)) });
    this.emit({ kind: "state", emotion, arousal });
  }

  onFailed({ turn_id: turnId, message_ids: messageIds = [], reason, at }) {
    this.turns.delete(turnId);
    this.addFailure(turnId, messageIds, reason, at || Date.now() / 1000);
    this.persist();
    this.emit({ kind: "entries" });
  }

  // --- resync ---------------------------------------------------------------------------

  /**
   * Merge `GET …/session` ({turns, summary}). Known things stay as they are; what the tab
   * missed (while closed or disconnected) is added; ids an answer names are closed.
   */
  mergeSession(session) {
    this.summary = session && session.summary ? session.summary : null;
    const turns = (session && Array.isArray(session.turns)) ? session.turns : [];
    // The server's table from a stored turn's `herkunft` to a live answer's `origin`.
    const origins = (session && session.origins) || {};
    for (const turn of turns) {
      if (turn.rolle === "user") this.mergeUserTurn(turn);
      else if (turn.rolle === "assistant") this.mergeCharacterTurn(turn, origins);
    }
    const times = turns.map((turn) => Number(turn.zeit)).filter((at) => at > 0);
    if (times.length) {
      this.workingSince = Math.min(...times);
      this.sessionEmpty = false;
    } else if (!this.sessionEmpty || this.workingSince === null) {
      // Expired or reset: everything said so far is archive, what comes is in mind.
      this.workingSince = this.lastSettledAt();
      this.sessionEmpty = true;
    }
    this.persist();
    this.emit({ kind: "entries" });
  }

  /**
   * Merge lines of the durable history (`GET …/history`, oldest first) and its `origins`
   * table. A line of the log is the stored turn the session and the live messages show
   * too: it lands on the same entry (by message ids, by turn and origin). A line of an
   * imported conversation is an entry of its own. Every merged entry knows its calendar day
   * and that it is in the log (`archived`).
   */
  mergeHistory(lines, origins = {}) {
    for (const line of Array.isArray(lines) ? lines : []) {
      let keys;
      if (line.source === "import") keys = [this.mergeImported(line)];
      else if (line.role === "user") {
        // A block the tab shows as its single messages stays so: each of them is in the log.
        keys = [this.mergeUserTurn(turnOfLine(line)), ...(line.message_ids || []).map((id) => this.keyById.get(id))];
      } else keys = [this.mergeCharacterTurn(turnOfLine(line), origins)];
      for (const key of new Set(keys)) {
        const entry = this.entries.get(key);
        if (!entry) continue;
        entry.day = line.calendar_date || entry.day;
        entry.archived = true;
        if (line.source === "export") entry.imported = true;
      }
    }
    this.persist();
    this.emit({ kind: "entries" });
  }

  /** The entry key a history line (or a search hit) is shown under. */
  keyOfLine(line, origins = {}) {
    if (line.source === "import") return `i:${line.message_id}`;
    const ids = (line.message_ids || []).filter(Boolean);
    if (line.role === "user") {
      const known = ids.map((id) => this.keyById.get(id)).find(Boolean);
      return known || (ids.length ? `m:${ids[0]}` : `s:${line.turn_id || line.at}:user`);
    }
    const origin = Object.hasOwn(origins, line.origin) ? origins[line.origin] : "unknown";
    const key = `t:${line.turn_id || `s${line.at}`}:${origin}`;
    if (this.entries.has(key)) return key;
    for (const entry of this.entries.values()) {
      if (entry.kind === "character" && entry.turnId === line.turn_id && entry.text === line.text) return entry.key;
    }
    return key;
  }

  mergeImported(line) {
    const key = `i:${line.message_id}`;
    if (!this.entries.has(key)) {
      this.put({ key, kind: "imported", role: line.role === "user" ? "user" : "assistant",
                 text: line.text || "", at: Number(line.sort_at ?? line.at) || 0,
                 timeKnown: line.at !== null && line.at !== undefined,
                 conversationId: line.conversation_id || null, live: false });
    }
    return key;
  }

  /** Entries that came from the log only, from before `at` (history.js drops a window it
   * jumped to when the view returns to the present). */
  dropArchived(before) {
    let dropped = false;
    for (const entry of [...this.entries.values()]) {
      if (!entry.archived || entry.live || entry.at >= before) continue;
      if (entry.kind === "user" && entry.mine && LEDGER_STATUSES.has(entry.status)) continue;
      this.entries.delete(entry.key);
      for (const id of entry.ids || []) if (this.keyById.get(id) === entry.key) this.keyById.delete(id);
      dropped = true;
    }
    if (dropped) this.emit({ kind: "entries" });
  }

  /** The time just after the newest entry already said and settled (not one still open). */
  lastSettledAt() {
    let last = 0;
    for (const entry of this.entries.values()) {
      if (entry.kind === "user" && !["answered", "settled"].includes(entry.status)) continue;
      if (entry.kind === "failure") continue;
      last = Math.max(last, entry.at || 0);
    }
    return last + 0.000001;
  }

  mergeUserTurn(turn) {
    const ids = Array.isArray(turn.nachrichten_ids) ? turn.nachrichten_ids.filter(Boolean) : [];
    const text = turn.inhalt || "";
    const at = Number(turn.zeit) || 0;
    if (!ids.length) {
      // Old data without ids: the turn itself is the unit.
      const key = `s:${turn.turn_id || at}:user`;
      if (!this.entries.has(key)) this.put({ key, kind: "user", ids: [], text, at, mine: false,
                                             live: false, status: "settled" });
      return key;
    }
    const known = ids.filter((id) => this.keyById.has(id));
    for (const id of ids) {
      const entry = this.userEntry(id);
      if (entry && entry.placeholder && ids.length === 1) {
        entry.text = text;
        entry.placeholder = false;
        this.touch(entry);
      }
    }
    if (known.length === ids.length) return this.keyById.get(ids[0]);
    // Some or none of the block's messages are shown: show the block as the session has it
    // (its text is the messages joined by "\n"), in place of the partial ones.
    let mine = ids.some((id) => this.sentIds.has(id));
    let status = null;
    let seq;
    let archived = false;
    for (const id of known) {
      const entry = this.userEntry(id);
      if (!entry) continue;
      mine = mine || entry.mine;
      status = status || entry.status;
      archived = archived || Boolean(entry.archived);
      seq = seq === undefined ? entry.seq : Math.min(seq, entry.seq);
      this.entries.delete(entry.key);
      for (const other of entry.ids) this.keyById.delete(other);
    }
    if (ids.some((id) => this.isAnswered(id))) status = "answered";
    else if (!status) status = ids.some((id) => this.open.has(id)) || this.isRunning(ids) ? "pending" : "settled";
    const key = `m:${ids[0]}`;
    this.put({ key, kind: "user", ids, text, at, mine, live: false, status, seq, archived,
               sameBrowser: ids.some((id) => this.browserIds.has(id)), turnId: turn.turn_id || null });
    this.dropMaybeSent(text);
    return key;
  }

  mergeCharacterTurn(turn, origins) {
    const origin = Object.hasOwn(origins, turn.herkunft) ? origins[turn.herkunft] : "unknown";
    const turnId = turn.turn_id || `s${turn.zeit}`;
    const key = `t:${turnId}:${origin}`;
    const ids = Array.isArray(turn.nachrichten_ids) ? turn.nachrichten_ids.filter(Boolean) : [];
    let shownAs = key;
    if (!this.entries.has(key)) {
      const same = this.characterWithText(turnId, turn.inhalt);
      if (same) shownAs = same.key;
      else {
        this.put({ key, kind: "character", turnId, origin, text: turn.inhalt || "", messageIds: ids,
                   emotion: turn.emotion || "", arousal: turn.arousal ?? null,
                   at: Number(turn.zeit) || 0, live: false, answersOther: false });
      }
    }
    this.close(ids, "answered");
    return shownAs;
  }

  /**
   * What `GET /api/messages/{id}` said about one of this tab's open ids after a reconnect.
   * `record` null: the server does not know it (404). `turn`: `GET /api/turns/{turn_id}`
   * when the message's turn failed (for the reason), else null.
   */
  applyMessageRecord(messageId, record, turn = null) {
    if (!this.open.has(messageId)) return;
    if (!record) {
      this.addFailure(`lost:${messageId}`, [messageId], "not_found", this.userEntry(messageId)?.at);
    } else if (record.state === "failed") {
      const turnId = record.turn_id || `lost:${messageId}`;
      const ids = turn && Array.isArray(turn.message_ids) && turn.message_ids.length ? turn.message_ids : [messageId];
      const reason = (turn && turn.reason) || "unknown";
      this.addFailure(turnId, ids, reason, this.failureTime(turn, ids));
    } else if (record.state === "delivered") {
      // Answered while this tab was away; the answer came with the session (or was
      // summarized away). Either way the id is no longer open.
      this.close([messageId], "answered");
    } else if (record.state === ACCEPTED || OPEN_TURN_STATES.has(record.state)) {
      const entry = this.userEntry(messageId);
      if (entry && entry.status !== "pending") {
        entry.status = "pending";
        this.touch(entry);
      }
      if (record.turn_id && OPEN_TURN_STATES.has(record.state) && !this.turns.has(record.turn_id)) {
        this.turns.set(record.turn_id, { state: record.state, stage: null, messageIds: [messageId],
                                         at: entry ? entry.at : Date.now() / 1000 });
      }
      if (entry && record.turn_id) entry.turnId = record.turn_id;
    }
    this.persist();
    this.emit({ kind: "entries" });
    this.emit({ kind: "turns" });
  }

  /**
   * The session was reset (at `at`, server time): the character's working memory is empty,
   * the history stays. What is in the log stays shown, above the moved marker; what the
   * reset ended without a trace in the log (open and failed messages, failure notices)
   * goes. A message still being sent stays (it may be accepted after the reset, into the
   * new session); the ids the reset ended are remembered, so that a 202 arriving late for
   * one does not open it again.
   */
  reset(at = null) {
    for (const entry of this.entries.values()) {
      for (const id of entry.kind === "user" ? entry.ids : entry.messageIds || []) this.endedByReset.add(id);
    }
    for (const id of this.open) this.endedByReset.add(id);
    for (const held of this.heldAccepted) this.endedByReset.add(held.message_id);
    this.heldAccepted = [];
    for (const entry of [...this.entries.values()]) {
      const kept = entry.kind === "character" || entry.kind === "imported" || entry.archived
        || (entry.kind === "user" && ["sending", "answered", "settled"].includes(entry.status));
      if (kept) continue;
      this.entries.delete(entry.key);
      for (const id of entry.ids || []) if (this.keyById.get(id) === entry.key) this.keyById.delete(id);
    }
    this.open.clear();
    this.turns.clear();
    this.summary = null;
    this.workingSince = Number(at) || this.lastSettledAt();
    this.sessionEmpty = true;
    this.persist();
    this.emit({ kind: "entries" });
    this.emit({ kind: "turns" });
  }

  // --- this browser's other tabs ------------------------------------------------------

  readBrowserIds() {
    if (!this.browserStorage) return;
    let rows = [];
    try {
      rows = JSON.parse(this.browserStorage.getItem(this.browserKey) || "[]");
    } catch {
      rows = [];
    }
    this.browserIds = new Set(Array.isArray(rows) ? rows.map((row) => row && row.id).filter(Boolean) : []);
  }

  rememberForBrowser(messageId) {
    this.browserIds.add(messageId);
    if (!this.browserStorage) return;
    try {
      this.readBrowserIdsKeeping(messageId);
      const rows = [...this.browserIds].slice(-BROWSER_IDS_KEPT).map((id) => ({ id }));
      this.browserStorage.setItem(this.browserKey, JSON.stringify(rows));
    } catch {
      // Storage full or disabled: this tab still knows its own messages.
    }
  }

  readBrowserIdsKeeping(messageId) {
    this.readBrowserIds();
    this.browserIds.delete(messageId);
    this.browserIds.add(messageId); // the newest last: pruning keeps it
  }

  /**
   * Another tab of this browser sent messages (its `storage` event): they are this person's
   * own, not another device's. Labels already shown change.
   */
  syncBrowser() {
    this.readBrowserIds();
    let changed = false;
    for (const entry of this.entries.values()) {
      if (entry.kind === "user" && !entry.sameBrowser && entry.ids.some((id) => this.browserIds.has(id))) {
        entry.sameBrowser = true;
        this.touch(entry);
        changed = true;
      } else if (entry.kind === "character" && entry.answersOther && !this.answersOther(entry.messageIds)) {
        entry.answersOther = false;
        this.touch(entry);
        changed = true;
      }
    }
    if (changed) this.emit({ kind: "entries" });
  }

  /** An answer to messages of which none came from this tab or this browser. */
  answersOther(messageIds) {
    return messageIds.length > 0
      && !messageIds.some((id) => this.isMine(id) || this.browserIds.has(id));
  }

  // --- internals ----------------------------------------------------------------------

  put(entry) {
    const stored = { ...entry, seq: entry.seq ?? ++this.seq, version: 0 };
    this.entries.set(stored.key, stored);
    for (const id of stored.ids || []) this.keyById.set(id, stored.key);
    return stored;
  }

  /** An entry changed: views redraw entries whose version moved. */
  touch(entry) {
    if (entry) entry.version += 1;
  }

  /** Did this tab send it? (Also true before its 202 arrived, once the broadcast named it.) */
  isMine(messageId) {
    return this.sentIds.has(messageId) || Boolean(this.userEntry(messageId)?.mine);
  }

  /** "answered" or "failed" when an answer or a failure notice names the id, else null. */
  outcome(messageId) {
    if (this.isAnswered(messageId)) return "answered";
    for (const entry of this.entries.values()) {
      if (entry.kind === "failure" && entry.messageIds.includes(messageId)) return "failed";
    }
    return null;
  }

  isAnswered(messageId) {
    for (const entry of this.entries.values()) {
      if (entry.kind === "character" && entry.messageIds.includes(messageId)) return true;
    }
    return false;
  }

  isRunning(messageIds) {
    for (const turn of this.turns.values()) {
      if (turn.messageIds.some((id) => messageIds.includes(id))) return true;
    }
    return false;
  }

  hasCharacterText(turnId, text) {
    return Boolean(this.characterWithText(turnId, text));
  }

  characterWithText(turnId, text) {
    for (const entry of this.entries.values()) {
      if (entry.kind === "character" && entry.turnId === turnId && entry.text === text) return entry;
    }
    return null;
  }

  failureTime(turn, ids) {
    const history = turn && Array.isArray(turn.history) ? turn.history : [];
    const last = history.length ? Number(history[history.length - 1].at) : 0;
    if (last) return last;
    const times = ids.map((id) => this.userEntry(id)?.at || 0);
    return Math.max(0, ...times) + 0.001;
  }

  addFailure(turnId, messageIds, reason, at) {
    const key = `f:${turnId}`;
    if (!this.entries.has(key)) {
      this.put({ key, kind: "failure", turnId, messageIds, reason: reason || "unknown",
                 at: at || Date.now() / 1000, resent: false });
    }
    this.close(messageIds, "failed", { turnId, reason });
  }

  /** Close ids that an answer or a failure named. */
  close(messageIds, status, failure = null) {
    for (const id of messageIds) {
      this.open.delete(id);
      const entry = this.userEntry(id);
      if (!entry) continue;
      // An answer beats an earlier failure notice of the same id (a resent turn that ran).
      if (entry.status !== status && !(status === "failed" && entry.status === "answered")) {
        entry.status = status;
        if (failure) {
          entry.failedTurnId = failure.turnId;
          entry.reason = failure.reason;
        }
        this.touch(entry);
      }
    }
  }

  /** A restored "maybe sent" entry (the tab reloaded mid-POST) whose text arrived: drop it. */
  dropMaybeSent(text) {
    for (const entry of this.entries.values()) {
      if (entry.maybeSent && sameText(entry.text, text)) {
        this.entries.delete(entry.key);
        return;
      }
    }
  }

  // --- the per-tab ledger ---------------------------------------------------------------

  ledgerEntries() {
    const rows = [];
    for (const entry of this.entries.values()) {
      if (entry.kind !== "user" || !entry.mine || !LEDGER_STATUSES.has(entry.status)) continue;
      if (entry.status === "failed" && entry.resent) continue;
      rows.push({ key: entry.key, ids: entry.ids, text: entry.text, at: entry.at, status: entry.status,
                  open: entry.ids.filter((id) => this.open.has(id)),
                  failedTurnId: entry.failedTurnId || null, reason: entry.reason || null,
                  error: entry.error || null });
    }
    const failures = [];
    for (const entry of this.entries.values()) {
      if (entry.kind === "failure" && !entry.resent
          && entry.messageIds.some((id) => this.userEntry(id)?.mine)) {
        failures.push({ turnId: entry.turnId, messageIds: entry.messageIds, reason: entry.reason, at: entry.at });
      }
    }
    return { rows, failures };
  }

  persist() {
    if (!this.storage) return;
    try {
      const { rows, failures } = this.ledgerEntries();
      if (!rows.length && !failures.length) this.storage.removeItem(this.storageKey);
      else this.storage.setItem(this.storageKey, JSON.stringify({ version: 1, rows, failures }));
    } catch {
      // Storage full or disabled: the live view still works, a reload just knows less.
    }
  }

  restore() {
    if (!this.storage) return;
    let data;
    try {
      data = JSON.parse(this.storage.getItem(this.storageKey) || "null");
    } catch {
      data = null;
    }
    if (!data || !Array.isArray(data.rows)) return;
    for (const row of data.rows) {
      const ids = Array.isArray(row.ids) ? row.ids : [];
      for (const id of ids) this.sentIds.add(id);
      for (const id of row.open || []) this.open.add(id);
      let status = row.status;
      let maybeSent = false;
      if (status === "sending") {
        // Reloaded while the POST was in flight: it may or may not have arrived.
        status = ids.length ? "pending" : "unsent";
        maybeSent = !ids.length;
      }
      this.put({ key: ids.length ? `m:${ids[0]}` : row.key, kind: "user", ids, text: String(row.text ?? ""),
                 at: Number(row.at) || 0, mine: true, live: false, status, maybeSent,
                 failedTurnId: row.failedTurnId, reason: row.reason, error: row.error });
    }
    for (const failure of data.failures || []) {
      this.put({ key: `f:${failure.turnId}`, kind: "failure", turnId: failure.turnId,
                 messageIds: failure.messageIds || [], reason: failure.reason || "unknown",
                 at: Number(failure.at) || 0, resent: false });
    }
  }
}
