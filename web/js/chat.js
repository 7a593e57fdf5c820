// The chat view: draws the Conversation's entries (keyed, only what changed is redrawn) with
// their day dividers and the marker where the character's working memory begins, the first
// screen, the stage indicator and the composer. Texts are shown whole: CSS wraps them,
// nothing cuts. The character's words are Markdown (markdown.js, sanitized); the user's own
// are text.

import { h } from "./dom.js";
import { formatDay, formatTime, labelText, reasonText, t } from "./i18n.js";
import { renderMarkdown } from "./markdown.js";

const NEAR_BOTTOM_PX = 120;
const HIT_MS = 4000; // how long a search hit stays marked

// What a stage id means to a person. The ids are the server's table (app/pipeline/stages.py,
// design §9 `character_stage`); tests/pipeline/test_stages.py keeps this map in step with it. Path 1 is
// always "perceiving"; an id this map does not know (a newer server) reads as "thinking".
const STAGE_KEYS = Object.freeze({
  perception: "stage.perceiving",
  path1: "stage.perceiving",
  state: "stage.thinking",
  enricher: "stage.thinking",
  ei_calc: "stage.thinking",
  router: "stage.thinking",
  planner: "stage.acting",
  lists: "stage.acting",
  reminders: "stage.acting",
  conversation_vector: "stage.writing",
  responder: "stage.writing",
  thinker: "stage.checking",
  tribunal: "stage.checking",
  salience: "stage.writing",
  dispatcher: "stage.writing",
});

export function stageKey(turn) {
  if (!turn) return null;
  if (turn.state === "queued" && !turn.stage) return "stage.queued";
  if (turn.state === "path1") return "stage.perceiving";
  return (turn.stage && Object.hasOwn(STAGE_KEYS, turn.stage) && STAGE_KEYS[turn.stage]) || "stage.thinking";
}

/** The local calendar day of epoch seconds, as the log writes it ("2026-01-31"). */
export function localDay(epochSeconds) {
  const date = new Date(epochSeconds * 1000);
  const pad = (n) => String(n).padStart(2, "0");
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}`;
}

export function entryDay(entry) {
  return entry.day || localDay(entry.at || 0);
}

/** What the first screen offers to type: a list, a reminder, a day for the journal. */
const EXAMPLES = ["example.list", "example.reminder", "example.journal"];

export class ChatView {
  /**
   * `name`: what the character is called (its definition's name, web/js/characters.js);
   * `greeting`: its definition's greeting, or null. `history`: the HistoryLoader (what is
   * loaded, what the view shows). `onExample(text)`: a first-screen phrase was picked.
   */
  constructor({ conversation, name, greeting = null, history = null, list, scroller, stage,
                stageText, onRetry, onResend, onExample = () => {}, onPresent = () => {} }) {
    this.conversation = conversation;
    this.name = name;
    this.greeting = greeting;
    this.history = history;
    this.list = list;
    this.scroller = scroller;
    this.stage = stage;
    this.stageText = stageText;
    this.onRetry = onRetry;
    this.onResend = onResend;
    this.onExample = onExample;
    this.onPresent = onPresent;
    this.nodes = new Map(); // item key -> {node, version, entry}
    this.frame = 0;
    this.keepOffset = null; // distance from the bottom to keep while older lines come in
    this.highlightKey = null;
    this.pinned = true; // the reader is at the newest line: growth below keeps them there
    conversation.subscribe(() => this.schedule());
    scroller.addEventListener("scroll", () => { this.pinned = this.distanceFromBottom() < NEAR_BOTTOM_PX; },
                              { passive: true });
    // A line that grows after it is drawn (a font, a wrapped reply) or a composer that takes
    // more room changes the height without a render: keep a pinned reader at the bottom.
    if (typeof ResizeObserver === "function") {
      const follow = new ResizeObserver(() => {
        if (this.pinned && this.keepOffset === null && !this.highlightKey) this.toBottom();
      });
      follow.observe(scroller);
      follow.observe(list);
    }
  }

  distanceFromBottom() {
    return this.scroller.scrollHeight - this.scroller.scrollTop - this.scroller.clientHeight;
  }

  toBottom() {
    this.scroller.scrollTo({ top: this.scroller.scrollHeight, behavior: "instant" });
  }

  /** Coalesce bursts of changes into one redraw per frame. */
  schedule() {
    if (this.frame) return;
    this.frame = requestAnimationFrame(() => {
      this.frame = 0;
      this.render();
    });
  }

  /** Draw now, not at the next frame (the first screen). */
  renderNow() {
    if (this.frame) cancelAnimationFrame(this.frame);
    this.frame = 0;
    this.render();
  }

  /** The next render keeps what the reader sees where it is (older lines come in above). */
  keepPosition() {
    this.keepOffset = this.scroller.scrollHeight - this.scroller.scrollTop;
  }

  /** Everything the list shows, in order: entries, day dividers, the working-memory marker,
   * the head (older history, its beginning, or the first screen) and, detached, the foot. */
  items() {
    const history = this.history;
    const until = history ? history.visibleUntil : Infinity;
    const entries = this.conversation.ordered().filter((entry) => entry.at <= until);
    const items = [];
    if (!entries.length && (!history || history.atBeginning)) {
      items.push({ key: "welcome", version: "1", build: () => this.buildWelcome() });
      return items;
    }
    const head = history && !history.atBeginning ? "more" : "start";
    items.push({ key: `head:${head}`, version: head, build: () => this.buildHead(head) });
    const since = this.conversation.workingSince;
    const summary = this.conversation.summary || "";
    const marker = { key: "working", version: `${summary}`, build: () => this.buildMarker(summary) };
    let day = null;
    let placed = since === null;
    for (const entry of entries) {
      const entryDate = entryDay(entry);
      if (entryDate !== day) {
        day = entryDate;
        items.push({ key: `day:${day}`, version: day, build: () => this.buildDay(entryDate) });
      }
      if (!placed && entry.at >= since) {
        // At the very beginning of the history the marker would say nothing: all is in mind.
        if (items.length > 2 || head === "more") items.push(marker);
        placed = true;
      }
      items.push({ key: entry.key, version: entry.version, entry, build: () => this.build(entry) });
    }
    if (!placed && until === Infinity) items.push(marker);
    if (until !== Infinity) items.push({ key: "foot", version: "1", build: () => this.buildFoot() });
    return items;
  }

  render() {
    const scroller = this.scroller;
    const nearBottom = this.distanceFromBottom() < NEAR_BOTTOM_PX;
    const alive = new Set();
    let previous = null;
    let appendedMine = false;
    for (const item of this.items()) {
      alive.add(item.key);
      let cached = this.nodes.get(item.key);
      if (!cached || cached.entry !== item.entry || cached.version !== item.version) {
        const node = item.build();
        if (cached) cached.node.replaceWith(node);
        else if (item.entry && item.entry.mine && item.entry.live) appendedMine = true;
        cached = { node, entry: item.entry, version: item.version };
        this.nodes.set(item.key, cached);
      }
      const expected = previous ? previous.nextSibling : this.list.firstChild;
      if (cached.node !== expected) this.list.insertBefore(cached.node, expected);
      previous = cached.node;
    }
    for (const [key, cached] of this.nodes) {
      if (!alive.has(key)) {
        cached.node.remove();
        this.nodes.delete(key);
      }
    }
    this.renderStage();
    // A search hit or an older page leaves the reader where they were put; later growth
    // pulls only a reader who was at the newest line.
    if (this.keepOffset !== null) {
      scroller.scrollTo({ top: scroller.scrollHeight - this.keepOffset, behavior: "instant" });
      this.pinned = false;
    } else if (this.highlightKey) {
      this.showHighlight();
      this.pinned = false;
    } else if (nearBottom || appendedMine || this.followOnce) {
      this.toBottom();
      this.pinned = true;
    }
    this.keepOffset = null;
    this.followOnce = false;
  }

  /** The next render scrolls to the newest message, wherever the reader was (a resend). */
  followNext() {
    this.followOnce = true;
  }

  /** The next render scrolls to the entry `key` and marks it for a moment (a search hit). */
  highlight(key) {
    this.highlightKey = key;
    this.schedule();
  }

  showHighlight() {
    const key = this.highlightKey;
    this.highlightKey = null;
    const cached = this.nodes.get(key);
    if (!cached) return;
    for (const node of this.list.querySelectorAll(".msg.hit")) node.classList.remove("hit");
    cached.node.classList.add("hit");
    cached.node.scrollIntoView({ block: "center", behavior: "instant" });
    clearTimeout(this.hitTimer);
    this.hitTimer = setTimeout(() => cached.node.classList.remove("hit"), HIT_MS);
  }

  renderStage() {
    const key = stageKey(this.conversation.activeTurn());
    this.stage.hidden = !key;
    const text = key ? t(key, { name: this.name }) : "";
    if (this.stageText.textContent !== text) this.stageText.textContent = text;
    this.stage.dataset.stage = key ? key.slice("stage.".length) : "";
  }

  build(entry) {
    if (entry.kind === "user") return this.buildUser(entry);
    if (entry.kind === "character") return this.buildCharacter(entry);
    if (entry.kind === "imported") return this.buildImported(entry);
    return this.buildFailure(entry);
  }

  buildWelcome() {
    const text = this.greeting || t("welcome.greeting", { name: this.name });
    return h("li", { class: "welcome", dataset: { key: "welcome" } },
      h("p", { class: "who", text: this.name }),
      h("div", { class: "text md" }, renderMarkdown(text)),
      h("p", { class: "welcome-try", text: t("welcome.try") }),
      h("ul", { class: "examples" }, EXAMPLES.map((key) => h("li", {},
        h("button", { type: "button", class: "example", dataset: { example: key.slice("example.".length) },
                      onclick: () => this.onExample(t(key, { name: this.name })) },
          h("span", { class: "example-kind", text: t(`${key}.kind`) }),
          h("span", { class: "example-text", text: t(key, { name: this.name }) }))))));
  }

  buildHead(state) {
    const text = state === "more" ? t("history.loading") : t("history.start");
    return h("li", { class: `history-head ${state}`, dataset: { key: "head" }, role: "presentation" },
      h("span", { text }));
  }

  buildFoot() {
    return h("li", { class: "history-foot", dataset: { key: "foot" } },
      h("span", { class: "muted", text: t("history.newerLoading") }),
      h("button", { type: "button", class: "button button-small", text: t("history.present"),
                    onclick: () => this.onPresent() }));
  }

  buildDay(day) {
    const [year, month, date] = day.split("-").map(Number);
    const local = new Date(year, month - 1, date);
    return h("li", { class: "day-divider", dataset: { key: `day:${day}`, day }, role: "separator" },
      h("time", { datetime: day, text: formatDay(local) }));
  }

  buildMarker(summary) {
    return h("li", { class: "working-memory", dataset: { key: "working" }, role: "note" },
      h("p", { class: "working-title", text: t("history.workingMemory", { name: this.name }) }),
      summary
        ? h("details", { class: "summary" },
          h("summary", { text: t("summary.title") }),
          h("p", { class: "text", text: summary }))
        : null);
  }

  buildUser(entry) {
    const other = entry.live && !entry.mine && !entry.sameBrowser;
    const statusText = {
      sending: t("msg.sending"),
      pending: t("msg.pending"),
      failed: t("msg.failed"),
      unsent: entry.error ? `${t("msg.unsent")}: ${entry.error}` : t("msg.unsent"),
    }[entry.status];
    return h("li", {
      class: `msg msg-user ${other ? "other" : "mine"}`,
      dataset: { key: entry.key, status: entry.status, messageIds: entry.ids.join(" ") },
    },
    h("div", { class: "meta" },
      h("span", { class: "who", text: other ? t("msg.otherDevice") : t("msg.you") }),
      entry.imported ? h("span", { class: "badge badge-source", text: t("history.fromExport") }) : null,
      statusText ? h("span", { class: "status", text: statusText }) : null,
      this.time(entry.at)),
    h("p", { class: `text${entry.placeholder ? " muted" : ""}`, text: entry.text }),
    entry.status === "unsent"
      ? h("div", { class: "actions" },
        h("button", { type: "button", class: "button button-small retry", text: t("msg.retry"),
                      onclick: () => this.onRetry(entry.key) }))
      : null);
  }

  buildCharacter(entry) {
    const badges = [];
    if (entry.origin === "own_impulse") badges.push([t("msg.ownImpulse", { name: this.name }), "badge-impulse"]);
    if (entry.origin === "continue") badges.push([t("msg.continue", { name: this.name }), "badge-impulse"]);
    if (entry.origin === "unknown") badges.push([t("msg.unknownOrigin"), ""]);
    if (entry.answersOther) badges.push([t("msg.answerOther"), "badge-other"]);
    if (entry.imported) badges.push([t("history.fromExport"), "badge-source"]);
    return h("li", {
      class: `msg msg-character origin-${entry.origin}${entry.answersOther ? " answers-other" : ""}`,
      dataset: { key: entry.key, turnId: entry.turnId, origin: entry.origin, messageIds: entry.messageIds.join(" ") },
    },
    h("div", { class: "meta" },
      h("span", { class: "who", text: this.name }),
      badges.map(([text, cls]) => h("span", { class: `badge ${cls}`, text })),
      entry.emotion ? h("span", { class: "emotion", text: labelText(entry.emotion) }) : null,
      this.time(entry.at)),
    h("div", { class: "text md" }, renderMarkdown(entry.text)));
  }

  /** A line of a conversation imported into the journal: neither this character nor live. */
  buildImported(entry) {
    const user = entry.role === "user";
    return h("li", {
      class: `msg msg-imported ${user ? "msg-user mine" : "msg-character"}`,
      dataset: { key: entry.key, role: entry.role, conversationId: entry.conversationId || "" },
    },
    h("div", { class: "meta" },
      h("span", { class: "who", text: user ? t("msg.you") : t("history.otherSide") }),
      h("span", { class: "badge badge-source", text: t("history.imported") }),
      entry.timeKnown ? this.time(entry.at) : null),
    user ? h("p", { class: "text", text: entry.text }) : h("div", { class: "text md" }, renderMarkdown(entry.text)));
  }
  buildFailure(entry) {
    const count = entry.messageIds.length;
    const title = count === 0 ? t("failure.impulse", { name: this.name })
      : count === 1 ? t("failure.title") : t("failure.titleMany", { count });
    const reason = reasonText(entry.reason);
    const reasonLine = reason === entry.reason ? reason : `${reason} (${entry.reason})`;
    const canResend = count > 0 && this.conversation.resendTexts(entry.key).length > 0;
    let action = null;
    if (entry.resent) action = h("span", { class: "resent", text: t("failure.resent") });
    else if (canResend) {
      action = h("button", { type: "button", class: "button button-small resend", text: t("failure.resend"),
                             onclick: () => this.onResend(entry.key) });
    }
    return h("li", {
      class: "msg msg-failure",
      dataset: { key: entry.key, turnId: entry.turnId, reason: entry.reason, messageIds: entry.messageIds.join(" ") },
    },
    h("p", { class: "title", text: title }),
    h("p", { class: "reason", text: t("failure.reason", { reason: reasonLine }) }),
    action);
  }

  time(at) {
    if (!at) return null;
    return h("time", { datetime: new Date(at * 1000).toISOString(), text: formatTime(at) });
  }
}

/** Enter sends; Shift+Enter (and IME composition) keeps the default: a new line. */
export function bindComposer({ form, textarea, onSend }) {
  const autosize = () => {
    textarea.style.height = "auto";
    textarea.style.height = `${textarea.scrollHeight + 2}px`;
  };
  textarea.addEventListener("keydown", (event) => {
    if (event.key !== "Enter" || event.shiftKey || event.isComposing || event.altKey || event.ctrlKey || event.metaKey) return;
    event.preventDefault();
    form.requestSubmit();
  });
  textarea.addEventListener("input", autosize);
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const text = textarea.value;
    if (!text.trim()) return;
    textarea.value = "";
    autosize();
    onSend(text);
    textarea.focus();
  });
}
