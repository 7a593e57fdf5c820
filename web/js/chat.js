// The chat view: draws the Conversation's entries (keyed, only what changed is redrawn),
// the stage indicator and the composer. Texts are shown whole: CSS wraps them, nothing cuts.

import { h } from "./dom.js";
import { formatTime, labelText, reasonText, t } from "./i18n.js";

const NEAR_BOTTOM_PX = 120;

// What a stage id means to a person. The ids are the server's table (app/pipeline/stages.py,
// SPEC §9 `character_stage`); tests/pipeline/test_stages.py keeps this map in step with it. Path 1 is
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

export class ChatView {
  /** `name`: what the character is called (its definition's name, web/js/characters.js). */
  constructor({ conversation, name, list, scroller, stage, stageText, summary, summaryText, onRetry, onResend }) {
    this.conversation = conversation;
    this.name = name;
    this.list = list;
    this.scroller = scroller;
    this.stage = stage;
    this.stageText = stageText;
    this.summary = summary;
    this.summaryText = summaryText;
    this.onRetry = onRetry;
    this.onResend = onResend;
    this.nodes = new Map(); // entry key -> {node, version, entry}
    this.frame = 0;
    conversation.subscribe(() => this.schedule());
  }

  /** Coalesce bursts of changes into one redraw per frame. */
  schedule() {
    if (this.frame) return;
    this.frame = requestAnimationFrame(() => {
      this.frame = 0;
      this.render();
    });
  }

  render() {
    const scroller = this.scroller;
    const nearBottom = scroller.scrollHeight - scroller.scrollTop - scroller.clientHeight < NEAR_BOTTOM_PX;
    const alive = new Set();
    let previous = null;
    let appendedMine = false;
    for (const entry of this.conversation.ordered()) {
      alive.add(entry.key);
      let cached = this.nodes.get(entry.key);
      if (!cached || cached.entry !== entry || cached.version !== entry.version) {
        const node = this.build(entry);
        if (cached) cached.node.replaceWith(node);
        else if (entry.mine) appendedMine = true;
        cached = { node, entry, version: entry.version };
        this.nodes.set(entry.key, cached);
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
    this.renderSummary();
    this.renderStage();
    if (nearBottom || appendedMine || this.followOnce) scroller.scrollTop = scroller.scrollHeight;
    this.followOnce = false;
  }

  /** The next render scrolls to the newest message, wherever the reader was (a resend). */
  followNext() {
    this.followOnce = true;
  }

  renderSummary() {
    const summary = this.conversation.summary;
    this.summary.hidden = !summary;
    if (summary && this.summaryText.textContent !== summary) this.summaryText.textContent = summary;
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
    return this.buildFailure(entry);
  }

  buildUser(entry) {
    const other = entry.live && !entry.mine;
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
    return h("li", {
      class: `msg msg-character origin-${entry.origin}${entry.answersOther ? " answers-other" : ""}`,
      dataset: { key: entry.key, turnId: entry.turnId, origin: entry.origin, messageIds: entry.messageIds.join(" ") },
    },
    h("div", { class: "meta" },
      h("span", { class: "who", text: this.name }),
      badges.map(([text, cls]) => h("span", { class: `badge ${cls}`, text })),
      entry.emotion ? h("span", { class: "emotion", text: labelText(entry.emotion) }) : null,
      this.time(entry.at)),
    h("p", { class: "text", text: entry.text }));
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
