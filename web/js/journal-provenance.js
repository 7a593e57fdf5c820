// Where each sentence of the journal came from (issue 40): a draft's sentences each link to
// the user's lines they were drawn from (the draft's `support` map; shown on hover, keyboard
// focus or a tap), the model's sentences the check left out are listed with what no line
// holds ("Not in your words"), and a saved version's sentences say which are the user's own
// edits (its `provenance`). What to show is worked out by DOM-free functions over the API's
// JSON (tested under node: tests/js/provenance.test.mjs); `renderSentences` builds it, every
// text set as text, never as HTML.

import { h } from "./dom.js";
import { formatTime, t } from "./i18n.js";

// The source id of the stored text a redraft revised (app/journal/support.py BASE_ID).
const BASE_ID = "base";

/** `text` cut at its sentences, in order: `[{text, index}]`, `index` the sentence's place in
 * `sentences` (null: what lies between them — spaces, line breaks — or a text no sentence
 * is found in). A sentence not found after the one before is skipped: the text is always
 * whole, joined again it is `text`. */
export function pieces(text, sentences) {
  const found = [];
  let at = 0;
  sentences.forEach((sentence, index) => {
    if (!sentence.text) return;
    const start = text.indexOf(sentence.text, at);
    if (start < 0) return;
    if (start > at) found.push({ text: text.slice(at, start), index: null });
    found.push({ text: sentence.text, index });
    at = start + sentence.text.length;
  });
  if (at < text.length) found.push({ text: text.slice(at), index: null });
  return found;
}

/** The day's lines by message id (`GET /api/journal/days/{date}`'s conversations). */
export function dayLines(day) {
  const lines = new Map();
  for (const conversation of day.conversations) {
    for (const message of conversation.messages) lines.set(message.message_id, message);
  }
  return lines;
}

/** What a sentence's source ids show: `[{id, label, text, messageId}]`, in their order.
 * The ids are those of `draft` (its `sources`; `base`: the stored text it revised). */
export function sourceLines(ids, draft, lines) {
  return ids.map((id) => {
    if (id === BASE_ID) {
      const origin = draft && draft.base ? draft.base.origin : "entry";
      return { id, label: t(origin === "draft" ? "journal.sourceBaseDraft" : "journal.sourceBaseEntry"), text: "", messageId: null };
    }
    const source = draft ? draft.sources.find((s) => s.source_id === id) : null;
    const line = source ? lines.get(source.message_id) : null;
    const label = line && line.at ? `${id} · ${formatTime(line.at)}` : id;
    return { id, label, text: line ? line.text : "", messageId: source ? source.message_id : null };
  });
}

/** A draft as the page shows it: its text's pieces, and each sentence with its lines. A
 * draft from before its map (`support` empty) is its text, whole. */
export function draftView(draft, lines) {
  const sentences = (draft.support && draft.support.sentences) || [];
  return {
    pieces: pieces(draft.text, sentences),
    sentences: sentences.map((s) => ({ text: s.text, origin: "draft", lines: sourceLines(s.sources || [], draft, lines) })),
  };
}

/** The model's sentences the check left out of a draft, each with why: the names, places,
 * numbers or words that none of the user's lines holds. */
export function leftOutView(draft) {
  const left = (draft.support && draft.support.left_out) || [];
  return left.map((s) => ({
    text: s.text,
    why: s.unsupported && s.unsupported.length ? t("journal.notInLines", { words: s.unsupported.join(", ") }) : "",
  }));
}

/** A version's sentences as the versions list marks them: each the draft's (with its lines,
 * from the day's `drafts`) or the user's edit. Null when there is nothing to tell apart: no
 * map (a version from before, an import) or no sentence from a draft (typed by hand). */
export function versionView(version, drafts, lines) {
  const map = version.provenance || [];
  if (!map.some((s) => s.origin === "draft")) return null;
  const byId = new Map(drafts.map((d) => [d.draft_id, d]));
  return {
    pieces: pieces(version.text, map),
    sentences: map.map((s) => ({
      text: s.text, origin: s.origin,
      lines: s.origin === "draft" ? sourceLines(s.sources, byId.get(s.draft_id) || null, lines) : [],
    })),
    edits: map.filter((s) => s.origin === "edit").length,
  };
}

/** The view's pieces into `node`: a sentence with lines is focusable and described by its
 * tooltip (`aria-describedby`; shown on hover, focus and tap, hidden by Escape), the user's
 * edits are marked. `idPrefix` makes the tooltips' ids unique in the page; `onLines(ids,
 * on)` is told which of the day's lines a sentence shown or hidden draws on. */
export function renderSentences(node, view, { idPrefix, onLines = () => {} }) {
  node.replaceChildren(...view.pieces.flatMap((piece) => {
    if (piece.index === null) return [piece.text];
    const sentence = view.sentences[piece.index];
    if (sentence.origin === "edit") {
      return [h("mark", { class: "journal-edit" }, h("span", { class: "visually-hidden", text: `${t("journal.yourEdit")} ` }), piece.text)];
    }
    if (sentence.lines.length === 0) return [piece.text];
    const tipId = `${idPrefix}-${piece.index}`;
    const ids = sentence.lines.map((line) => line.messageId).filter(Boolean);
    const show = (on) => () => onLines(ids, on);
    const span = h("span", {
      class: "journal-sentence", tabindex: "0", "aria-describedby": tipId, dataset: { sentence: String(piece.index) },
      onmouseenter: show(true), onmouseleave: show(false), onfocus: show(true),
      onblur: () => { span.classList.remove("dismissed"); onLines(ids, false); },
      // A tap focuses it (not every touch browser does that for a focusable span itself).
      onclick: () => span.focus(),
      onkeydown: (event) => { if (event.key === "Escape") span.classList.add("dismissed"); },
    }, piece.text);
    const tip = h("span", { id: tipId, role: "tooltip", class: "journal-tip" },
      h("span", { class: "journal-tip-title", text: t("journal.sentenceFrom") }),
      sentence.lines.map((line) => h("span", { class: "journal-tip-line" },
        h("span", { class: "journal-tip-id", text: line.label }), line.text ? ` ${line.text}` : "")));
    return [span, tip];
  }));
}
