// Wires the page: who is logged in, which character, the conversation, the WebSocket with
// its resync, the panels and the settings. The rules of delivery live in conversation.js.

import { api } from "./api.js";
import { Attention } from "./attention.js";
import {
  DEFAULT_CHARACTER_ID, avatar, characterGreeting, characterName, characterHref, loadCharacters, namesById,
  pickCharacter, rememberCharacter, renderPicker, wantedCharacter,
} from "./characters.js";
import { CharactersDialog } from "./character-editor.js";
import { bindComposer, ChatView } from "./chat.js";
import { Conversation } from "./conversation.js";
import { $ } from "./dom.js";
import { errorText, t, translatePage } from "./i18n.js";
import { JournalView } from "./journal.js";
import { MemoryPanel } from "./memories.js";
import { Panels } from "./panels.js";
import { SettingsDialog } from "./settings.js";
import { PrivacyPanel } from "./privacy.js";
import { BackupSection } from "./backup.js";
import { firstPage, HistoryLoader } from "./history.js";
import { SearchBox } from "./search.js";
import { ReconnectingSocket } from "./socket.js";
import { TopbarMenu } from "./topbar.js";

const SESSION_SYNC_DELAY_MS = 250;
// The offline banner, once hidden, stays hidden in this tab until it closes.
const OFFLINE_DISMISSED_KEY = "novaberg:offline-banner-dismissed";
const PHONE_QUERY = "(max-width: 479.98px)"; // as web/css/app.css
const LOAD_MORE_PX = 300; // this close to the top (or, detached, the bottom) the next page loads
// The model's status is asked again this long after a failed ask (doubling up to the
// longest), and while the server still detects its model (the answer may change then).
const LLM_RETRY_MS = 1000;
const LLM_RETRY_MAX_MS = 15000;

async function whoAmI() {
  try {
    return await api.me();
  } catch (error) {
    if (error.status === 401) {
      window.location.replace("/login");
      return null;
    }
    throw error;
  }
}

class App {
  /** `prefetched`: the first history page's request for `prefetchedFor`, started with the
   * page (the chat opens with it). */
  constructor(me, characters, { prefetched = null, prefetchedFor = null } = {}) {
    this.prefetched = prefetched;
    this.prefetchedFor = prefetchedFor;
    this.me = me;
    this.characters = characters;
    this.character = pickCharacter(characters, wantedCharacter(window.location.search, window.localStorage, me.user_id));
    this.name = characterName(this.character);
    this.nameOf = namesById(characters);
    this.conversation = new Conversation({
      storage: window.sessionStorage,
      storageKey: `novaberg:ledger:${me.user_id}:${this.character.id}`,
      // The tabs of this browser are one person: they share the ids they sent.
      browserStorage: window.localStorage,
      browserKey: `novaberg:sent:${me.user_id}:${this.character.id}`,
    });
    this.syncing = null;
    this.syncAgain = false;
    this.sessionTimer = 0;
    this.llmTimer = 0;
    this.llmDelay = LLM_RETRY_MS;
    this.llmAsk = 0;
  }

  async start() {
    translatePage(document, { name: this.name });
    $("#character-name").textContent = this.name;
    document.title = `${this.name} · Novaberg`;
    rememberCharacter(window.localStorage, this.me.user_id, this.character.id);
    this.showCharacters();
    this.charactersDialog = new CharactersDialog({
      currentId: this.character.id,
      onChanged: (characters, changed, deletedId) => this.charactersChanged(characters, changed, deletedId),
    });
    $("#characters-open").addEventListener("click", () => this.charactersDialog.open());
    $("#logout").hidden = !this.me.headless;
    $("#logout").addEventListener("click", async () => {
      await api.logout().catch(() => {});
      window.location.replace("/login");
    });

    this.history = new HistoryLoader({
      characterId: this.character.id,
      conversation: this.conversation,
      onChange: () => this.view.schedule(),
      onOlder: () => this.view.keepPosition(),
      onError: (error) => this.notice(t("history.failed", { reason: errorText(error) })),
    });
    this.view = new ChatView({
      conversation: this.conversation,
      name: this.name,
      greeting: characterGreeting(this.character, t("msg.you")),
      history: this.history,
      list: $("#message-list"),
      scroller: $("#messages"),
      stage: $("#stage"),
      stageText: $("#stage-text"),
      onRetry: (key) => this.retry(key),
      onResend: (key) => this.resend(key),
      onExample: (text) => this.fillComposer(text),
      onPresent: () => this.returnToPresent(),
    });
    $("#messages").addEventListener("scroll", () => this.onScroll(), { passive: true });
    this.search = new SearchBox({ characterId: this.character.id, name: this.name,
                                  onOpen: (hit) => this.openHit(hit) });
    this.attention = new Attention({ title: document.title, name: this.name });
    window.addEventListener("storage", (event) => {
      if (event.key === this.conversation.browserKey) this.conversation.syncBrowser();
    });

    // Focus the box itself: a fragment link alone does not move the keyboard focus there.
    $(".skip-link").addEventListener("click", (event) => {
      event.preventDefault();
      $("#composer-input").focus();
    });
    bindComposer({ form: $("#composer"), textarea: $("#composer-input"), onSend: (text) => this.send(text) });
    // A phone's one-line message box has room for the short hint only.
    const phone = window.matchMedia(PHONE_QUERY);
    const hint = () => {
      $("#composer-input").placeholder = t(phone.matches ? "composer.placeholderShort" : "composer.placeholder",
                                           { name: this.name });
    };
    phone.addEventListener("change", hint);
    hint();
    $("#composer-input").addEventListener("input", () => this.showLimit());

    this.panels = new Panels({
      characterId: this.character.id,
      getName: () => this.name,
      onReset: () => {
        this.conversation.reset();
        this.notice(t("session.wasReset"));
      },
      onError: (text) => this.notice(text),
    });
    this.memories = new MemoryPanel({ characterId: this.character.id, getName: () => this.name });
    this.settings = new SettingsDialog({
      isAdmin: this.me.user_id === "local",
      onChanged: (info) => this.showOffline(info),
      sections: {
        privacy: new PrivacyPanel(),
        backup: new BackupSection({ isAdmin: this.me.user_id === "local", characterId: this.character.id }),
      },
    });
    this.menu = new TopbarMenu();
    $("#settings-open").addEventListener("click", () => this.settings.open());
    $("#offline-settings").addEventListener("click", () => this.settings.open("model"));
    $("#offline-dismiss").addEventListener("click", () => this.dismissOffline());

    this.conversation.subscribe((change) => this.onChange(change));
    this.journal = new JournalView({ root: $("#journal-view"), nameOf: (id) => this.nameOf(id), name: this.name,
      onError: (text) => this.notice(text) });
    $("#view-chat").addEventListener("click", () => this.showView("chat"));
    $("#view-journal").addEventListener("click", () => this.showView("journal"));

    const scheme = window.location.protocol === "https:" ? "wss" : "ws";
    this.socket = new ReconnectingSocket({
      url: `${scheme}://${window.location.host}/api/ws`,
      onMessage: (message) => this.onSocketMessage(message),
      onStatus: (status) => this.showConnection(status),
      // A reconnected server may run another model than the one last shown.
      onOpen: (isReconnect) => {
        this.resync();
        if (isReconnect) this.refreshLlm();
      },
      onRepeatedFailure: () => this.checkLogin(),
    });
    // The newest history first: the session merged after it knows what is archive.
    this.conversation.emit({ kind: "entries" });
    await this.history.loadLatest(this.prefetchedFor === this.character.id ? this.prefetched : null);
    this.view.renderNow();
    this.fillScreen();
    this.socket.start();
    window.addEventListener("online", () => this.socket.reconnectNow());
    this.panels.refreshAll();
    this.memories.refresh();
    this.refreshLlm();
    // For the browser tests only (they set the flag before the page loads): the live
    // objects of this page. A normal page exposes nothing.
    if (window.NOVABERG_TEST === true) {
      window.novaberg = { app: this, conversation: this.conversation, socket: this.socket };
    }
    $("#composer-input").focus();
  }

  // --- characters ---------------------------------------------------------------------

  /** The header: the current character's picture and the picker's links to all of them. */
  showCharacters() {
    avatar(this.character, { node: $("#character-avatar"), size: 96 });
    renderPicker($("#picker-list"), this.characters, this.character.id);
  }

  /** After the characters dialog changed one: the picker shows the list as it is now; a
   * change to the current character itself reloads the page (its name is in every text),
   * which keeps the conversation as a reload always does. */
  charactersChanged(characters, changed, deletedId = null) {
    this.characters = characters;
    this.nameOf = namesById(characters);
    const current = characters.find((c) => c.id === this.character.id);
    if (!current) { // the current character itself was deleted
      window.location.assign(characterHref(DEFAULT_CHARACTER_ID));
      return;
    }
    const touched = (changed && changed.id === current.id) || deletedId === current.id;
    if (touched && (current.name !== this.character.name || current.language !== this.character.language)) {
      window.location.reload();
      return;
    }
    this.character = current;
    this.showCharacters();
  }

  // --- sending ------------------------------------------------------------------------

  send(text) {
    // The server keeps the message trimmed (design §9); show it as it will be stored.
    const clean = text.trim();
    if (this.history.detached) this.returnToPresent();
    this.view.followNext();
    const key = this.conversation.beginSend(clean);
    this.post(key, clean);
  }

  async post(key, text) {
    try {
      const accepted = await api.send(this.character.id, text);
      this.conversation.sendAccepted(key, accepted.message_id, accepted.received_at);
    } catch (error) {
      // The "not sent" line of its bubble, in the message box's own words where it has them.
      this.conversation.sendFailed(key, errorText(error, "send"));
    }
  }

  retry(key) {
    const text = this.conversation.retrySend(key);
    if (text !== null) this.post(key, text);
  }

  /** A failure notice's resend: its messages go out again as new messages, in order. */
  async resend(failureKey) {
    const texts = this.conversation.resendTexts(failureKey);
    this.view.followNext(); // the resent messages appear at the end: show them
    this.conversation.markResent(failureKey);
    for (const text of texts) {
      const key = this.conversation.beginSend(text);
      await this.post(key, text); // in order: the server keeps the order it receives
    }
  }

  // --- receiving ----------------------------------------------------------------------

  /** The chat or the journal; the other one is hidden, not torn down. */
  showView(name) {
    const journal = name === "journal";
    $("#chat-layout").hidden = journal;
    $("#journal-view").hidden = !journal;
    $("#panel-toggle").hidden = journal; // the chat's side panels are not part of the journal
    $("#view-chat").setAttribute("aria-pressed", String(!journal));
    $("#view-journal").setAttribute("aria-pressed", String(journal));
    if (journal) this.journal.show();
  }

  onSocketMessage(message) {
    if (message.type === "journal_progress") {
      this.journal.onProgress(message);
      return;
    }
    if (message.character_id && message.character_id !== this.character.id) return;
    const known = message.type === "character_response"
      && this.conversation.entries.has(`t:${message.turn_id}:${message.origin}`);
    this.conversation.apply(message);
    if (message.type === "character_response" && !known) {
      this.attention.arrived({ key: `t:${message.turn_id}:${message.origin}`, origin: message.origin,
                               text: message.text });
    }
    if (message.type === "session_reset") {
      // Reset here or in another tab: every tab clears its conversation and says so.
      this.notice(t("session.wasReset"));
      this.panels.refreshAll();
    }
    if (message.type === "turn_state" && message.state === "path2"
        && (message.message_ids || []).some((id) => !this.conversation.userEntry(id))) {
      // A turn of messages this tab has not seen (sent elsewhere while it was away): its
      // user turn is in the session now.
      this.scheduleSessionSync();
    }
  }

  onChange(change) {
    if (change.kind === "state") {
      this.panels.showState({ emotion: change.emotion, arousal: change.arousal });
      // An answer may have come from an agent that changed lists or reminders.
      this.panels.refreshLists();
      this.panels.refreshReminders();
      this.memories.refreshSoon();
    }
    if (change.kind === "entries" && change.unknownIds && change.unknownIds.length) {
      this.scheduleSessionSync();
    }
  }

  scheduleSessionSync() {
    clearTimeout(this.sessionTimer);
    this.sessionTimer = setTimeout(() => this.resync(), SESSION_SYNC_DELAY_MS);
  }

  /**
   * After every (re)connect: merge the session, then ask the server about every id this tab
   * still holds open. Runs one at a time; a request during a run makes it run once more.
   */
  resync() {
    if (this.syncing) {
      this.syncAgain = true;
      return this.syncing;
    }
    this.syncing = (async () => {
      do {
        this.syncAgain = false;
        try {
          await this.resyncOnce();
        } catch (error) {
          console.warn("resync failed", error);
          if (error.status === 401) this.checkLogin();
        }
      } while (this.syncAgain);
      this.syncing = null;
    })();
    return this.syncing;
  }

  async resyncOnce() {
    this.conversation.mergeSession(await api.session(this.character.id));
    for (const id of this.conversation.openIds()) {
      if (this.conversation.isRunning([id])) continue;
      let record = null;
      try {
        record = await api.message(id);
      } catch (error) {
        if (error.status !== 404) throw error;
      }
      let turn = null;
      if (record && record.state === "failed" && record.turn_id) {
        turn = await api.turn(record.turn_id).catch(() => null);
      }
      this.conversation.applyMessageRecord(id, record, turn);
    }
    this.panels.refreshState();
  }

  async checkLogin() {
    try {
      await api.me();
    } catch (error) {
      if (error.status === 401) window.location.replace("/login");
    }
  }

  // --- the history ----------------------------------------------------------------------

  /** Near the top the older page loads (the reader's place kept); detached, near the bottom
   * the newer one. */
  async onScroll() {
    const scroller = $("#messages");
    if (scroller.scrollTop < LOAD_MORE_PX && !this.history.atBeginning && !this.history.loading) {
      if (await this.history.loadOlder()) this.fillScreen();
    } else if (this.history.detached && !this.history.loading
               && scroller.scrollHeight - scroller.scrollTop - scroller.clientHeight < LOAD_MORE_PX) {
      await this.history.loadNewer();
    }
  }

  /** Older pages until the list fills the screen (a short page would leave no scrollbar). */
  fillScreen() {
    requestAnimationFrame(() => requestAnimationFrame(async () => {
      const scroller = $("#messages");
      if (scroller.scrollHeight <= scroller.clientHeight + LOAD_MORE_PX && !this.history.atBeginning) {
        if (await this.history.loadOlder()) this.fillScreen();
      }
    }));
  }

  async openHit(hit) {
    const key = await this.history.open(hit);
    this.search.panel.hidden = true;
    if (key) this.view.highlight(key);
  }

  returnToPresent() {
    this.history.returnToPresent();
    this.view.followNext();
    this.view.schedule();
  }

  /** A first-screen phrase goes into the message box, to be changed or sent. */
  fillComposer(text) {
    const box = $("#composer-input");
    box.value = text;
    box.dispatchEvent(new Event("input"));
    box.focus();
  }

  // --- status lines -------------------------------------------------------------------

  showConnection(status) {
    const node = $("#connection");
    node.dataset.state = status;
    $("#connection-text").textContent = t(`conn.${status}`);
  }

  /** The model's status for the offline banner and the message limit: asked at the start
   * and at every reconnect; a failed ask is tried again with a growing delay, and an answer
   * given while the server still detects its model is asked again shortly. */
  async refreshLlm() {
    clearTimeout(this.llmTimer);
    const ask = ++this.llmAsk; // only the newest ask's answer is shown
    let info;
    try {
      info = await api.llm();
    } catch (error) {
      if (ask !== this.llmAsk) return;
      // The server is away (the connection line says so) or not ready yet; an ended
      // session sends the page to the login (checkLogin).
      if (error.status === 401) {
        this.checkLogin();
        return;
      }
      this.llmTimer = setTimeout(() => this.refreshLlm(), this.llmDelay);
      this.llmDelay = Math.min(LLM_RETRY_MAX_MS, this.llmDelay * 2);
      return;
    }
    if (ask !== this.llmAsk) return;
    this.llmDelay = LLM_RETRY_MS;
    this.showOffline(info);
    if (info.detecting) this.llmTimer = setTimeout(() => this.refreshLlm(), LLM_RETRY_MS);
  }

  showOffline(info) {
    const banner = $("#offline-banner");
    banner.hidden = !info.offline || window.sessionStorage.getItem(OFFLINE_DISMISSED_KEY) === "1";
    $("#offline-text").textContent = t("offline.banner", { name: this.name });
    this.messageLimit = info.message_limit || null;
    this.showLimit();
  }

  /** The offline banner is hidden for the rest of this tab's session (sessionStorage). */
  dismissOffline() {
    window.sessionStorage.setItem(OFFLINE_DISMISSED_KEY, "1");
    $("#offline-banner").hidden = true;
    $("#composer-input").focus();
  }

  /** The current model's message limit, shown before sending once a message nears it. */
  showLimit() {
    const node = $("#composer-limit");
    const count = $("#composer-input").value.length;
    const limit = this.messageLimit;
    node.hidden = !limit || count < limit * 0.8;
    if (node.hidden) return;
    node.dataset.over = String(count > limit);
    node.textContent = t(count > limit ? "composer.overLimit" : "composer.limit", { count, limit });
  }

  notice(text) {
    const node = $("#notice");
    node.textContent = text;
    node.hidden = false;
    clearTimeout(this.noticeTimer);
    this.noticeTimer = setTimeout(() => { node.hidden = true; }, 6000);
  }
}

async function main() {
  // The page is translated once the character's name is known (App.start): its texts name it.
  // The chat's first history page is asked for at once, beside who is logged in.
  const prefetchedFor = new URLSearchParams(window.location.search).get("character") || DEFAULT_CHARACTER_ID;
  const prefetched = firstPage(prefetchedFor);
  prefetched.catch(() => {}); // not logged in, an unknown character: asked again or moot
  const [me, characters] = await Promise.all([whoAmI(), loadCharacters()]);
  if (!me) return;
  await new App(me, characters, { prefetched, prefetchedFor }).start();
}

main().catch((error) => {
  console.error(error);
  const node = document.getElementById("notice");
  node.textContent = t("error.generic", { reason: errorText(error) });
  node.hidden = false;
});
