// Where each sentence of the journal came from (web/js/journal-provenance.js, issue 40): a
// draft's text cut into its sentences, each with the user's lines it drew on; the model's
// sentences the check left out, each with what no line holds; a version's sentences told
// apart as the draft's and the user's own edits. The last tests build the DOM on a minimal
// stand-in document: every text goes in as text, and each sentence is described by its
// tooltip.
import assert from "node:assert/strict";
import { test } from "node:test";

import { STRINGS, formatTime } from "../../web/js/i18n.js";
import { dayLines, draftView, leftOutView, pieces, renderSentences, sourceLines, versionView } from "../../web/js/journal-provenance.js";

const TEXT = "Um 6:00 Uhr bin ich müde aufgestanden. Zum Frühstück gab es Brot mit Anna.\n\nGegen 9 habe ich gelesen.";
const SENTENCES = ["Um 6:00 Uhr bin ich müde aufgestanden.", "Zum Frühstück gab es Brot mit Anna.", "Gegen 9 habe ich gelesen."];
const AT = 1772352000; // a line's time (epoch seconds)

/** `GET /api/journal/days/{date}` as the page has it. */
const DAY = {
  date: "2026-03-01",
  conversations: [{ conversation_id: "conv1", character_id: null, source: "import", messages: [
    { message_id: "m0", role: "assistant", text: "Guten Morgen!", at: null, done: false },
    { message_id: "m1", role: "user", text: "Um 6:00 Uhr bin ich aufgestanden, müde.", at: AT, done: false },
    { message_id: "m2", role: "user", text: "Zum Frühstück gab es Brot mit Anna.", at: null, done: false },
    { message_id: "m3", role: "user", text: "Gegen 9 habe ich gelesen. <img src=x onerror=alert(1)>", at: null, done: false },
  ] }],
};
const DRAFT = {
  draft_id: "draft_a", date: "2026-03-01", text: TEXT, status: "current",
  sources: [
    { message_id: "m1", source_id: "u1", conversation_id: "conv1", act: null },
    { message_id: "m2", source_id: "u2", conversation_id: "conv1", act: null },
    { message_id: "m3", source_id: "u3", conversation_id: "conv1", act: null },
  ],
  base: null,
  support: {
    sentences: [{ text: SENTENCES[0], sources: ["u1"] }, { text: SENTENCES[1], sources: ["u2"] }, { text: SENTENCES[2], sources: ["u3", "base"] }],
    left_out: [
      { text: "Am Abend war ich mit Paul im Kino.", sources: [], unsupported: ["Abend", "Paul", "Kino"] },
      { text: "Ich war glücklich.", sources: [], unsupported: ["glücklich"] },
    ],
  },
};

test("a text is cut at its sentences, and joined again it is the text", () => {
  const cut = pieces(TEXT, DRAFT.support.sentences);
  assert.deepEqual(cut, [
    { text: SENTENCES[0], index: 0 }, { text: " ", index: null }, { text: SENTENCES[1], index: 1 },
    { text: "\n\n", index: null }, { text: SENTENCES[2], index: 2 },
  ]);
  assert.equal(cut.map((p) => p.text).join(""), TEXT);
  // A sentence the text does not hold (any more) is skipped; the text stays whole.
  const odd = pieces(TEXT, [{ text: "Nicht da." }, { text: SENTENCES[1] }]);
  assert.equal(odd.map((p) => p.text).join(""), TEXT);
  assert.deepEqual(odd.filter((p) => p.index !== null), [{ text: SENTENCES[1], index: 1 }]);
  // Without a map: the text whole; the same sentence twice is found twice, in order.
  assert.deepEqual(pieces(TEXT, []), [{ text: TEXT, index: null }]);
  assert.deepEqual(pieces("Ja. Ja.", [{ text: "Ja." }, { text: "Ja." }]),
                   [{ text: "Ja.", index: 0 }, { text: " ", index: null }, { text: "Ja.", index: 1 }]);
});

test("each sentence of a draft shows the lines it came from", () => {
  const view = draftView(DRAFT, dayLines(DAY));
  assert.deepEqual(view.sentences.map((s) => s.lines.map((l) => [l.id, l.text, l.messageId])), [
    [["u1", "Um 6:00 Uhr bin ich aufgestanden, müde.", "m1"]],
    [["u2", "Zum Frühstück gab es Brot mit Anna.", "m2"]],
    [["u3", "Gegen 9 habe ich gelesen. <img src=x onerror=alert(1)>", "m3"], ["base", "", null]],
  ]);
  // A line with a time says it; the base is the stored text the draft revised.
  assert.equal(view.sentences[0].lines[0].label, `u1 · ${formatTime(AT)}`);
  assert.equal(view.sentences[2].lines[1].label, STRINGS.en["journal.sourceBaseEntry"]);
  const onDraft = sourceLines(["base"], { ...DRAFT, base: { origin: "draft", id: "draft_0" } }, dayLines(DAY));
  assert.equal(onDraft[0].label, STRINGS.en["journal.sourceBaseDraft"]);
  // An id the draft does not name is shown as it is, with no text.
  assert.deepEqual(sourceLines(["u9"], DRAFT, dayLines(DAY)), [{ id: "u9", label: "u9", text: "", messageId: null }]);
});

test("a draft from before its map is its text, whole, with no sentence to point at", () => {
  const view = draftView({ ...DRAFT, support: { sentences: [], left_out: [] } }, dayLines(DAY));
  assert.deepEqual(view, { pieces: [{ text: TEXT, index: null }], sentences: [] });
  assert.deepEqual(leftOutView({ ...DRAFT, support: {} }), []);
});

test("what the check left out is listed with what none of the lines holds", () => {
  assert.deepEqual(leftOutView(DRAFT), [
    { text: "Am Abend war ich mit Paul im Kino.", why: "in none of your lines: Abend, Paul, Kino" },
    { text: "Ich war glücklich.", why: "in none of your lines: glücklich" },
  ]);
  assert.equal(STRINGS.de["journal.notInLines"].replace("{words}", "Paul"), "in keiner deiner Zeilen: Paul");
  assert.deepEqual(leftOutView({ support: { left_out: [{ text: "X.", sources: [] }] } }), [{ text: "X.", why: "" }]);
});

const v = (provenance, text = TEXT) => ({ version_id: "ver_1", origin: "edit", text, draft_id: null, sources: [], provenance });
const fromDraft = (text, sources) => ({ text, sources, origin: "draft", draft_id: "draft_a" });
const edit = (text) => ({ text, sources: [], origin: "edit", draft_id: null });

test("a version marks the user's own edits and keeps the draft's lines for the rest", () => {
  const changed = TEXT.replace(SENTENCES[1], "Zum Frühstück gab es Honig.");
  const view = versionView(v([fromDraft(SENTENCES[0], ["u1"]), edit("Zum Frühstück gab es Honig."),
                              fromDraft(SENTENCES[2], ["u3"])], changed), [DRAFT], dayLines(DAY));
  assert.deepEqual(view.sentences.map((s) => [s.origin, s.lines.map((l) => l.messageId)]),
                   [["draft", ["m1"]], ["edit", []], ["draft", ["m3"]]]);
  assert.equal(view.edits, 1);
  assert.equal(view.pieces.map((p) => p.text).join(""), changed);
  // The draft gone from the day's list: its sentences are still the draft's, shown by id.
  const orphan = versionView(v([fromDraft(SENTENCES[0], ["u1"])], SENTENCES[0]), [], new Map());
  assert.deepEqual(orphan.sentences[0].lines, [{ id: "u1", label: "u1", text: "", messageId: null }]);
});

test("a version with nothing to tell apart is shown as its text", () => {
  assert.equal(versionView(v([]), [DRAFT], dayLines(DAY)), null); // from before, or imported
  assert.equal(versionView(v([edit("Von Hand.")], "Von Hand."), [DRAFT], dayLines(DAY)), null); // typed by hand
  assert.equal(versionView({ ...v([]), provenance: undefined }, [DRAFT], dayLines(DAY)), null);
});

// --- the DOM, on a stand-in document ------------------------------------------------------

class FakeNode {}
class FakeText extends FakeNode {
  constructor(text) { super(); this.data = text; }
  get textContent() { return this.data; }
}
class FakeElement extends FakeNode {
  constructor(tag) {
    super();
    this.tagName = tag.toUpperCase();
    this.attributes = new Map();
    this.childNodes = [];
    this.dataset = {};
    this.listeners = {};
    this.className = "";
    const classes = new Set();
    this.classList = { add: (c) => classes.add(c), remove: (c) => classes.delete(c), contains: (c) => classes.has(c) };
  }
  setAttribute(name, value) { this.attributes.set(name, value); }
  getAttribute(name) { return this.attributes.get(name) ?? null; }
  addEventListener(type, listener) { this.listeners[type] = listener; }
  append(...nodes) { this.childNodes.push(...nodes); }
  replaceChildren(...nodes) { this.childNodes = nodes.map((n) => (n instanceof FakeNode ? n : new FakeText(String(n)))); }
  set textContent(text) { this.childNodes = [new FakeText(text)]; }
  get textContent() { return this.childNodes.map((n) => n.textContent).join(""); }
  get children() { return this.childNodes.filter((n) => n instanceof FakeElement); }
}
globalThis.Node = FakeNode;
globalThis.document = { createElement: (tag) => new FakeElement(tag), createTextNode: (text) => new FakeText(text) };

test("the draft's sentences are focusable, each described by its tooltip, all as text", () => {
  const node = new FakeElement("p");
  const shown = [];
  renderSentences(node, draftView(DRAFT, dayLines(DAY)), { idPrefix: "jd", onLines: (ids, on) => shown.push([ids, on]) });
  // Joined again, the visible text is the draft's (the tooltips aside).
  const visible = node.childNodes.filter((n) => !(n instanceof FakeElement && n.getAttribute("role") === "tooltip"));
  assert.equal(visible.map((n) => n.textContent).join(""), TEXT);
  const sentences = node.children.filter((n) => n.className === "journal-sentence");
  assert.equal(sentences.length, 3);
  for (const sentence of sentences) {
    assert.equal(sentence.getAttribute("tabindex"), "0");
    const tip = node.children.find((n) => n.getAttribute("id") === sentence.getAttribute("aria-describedby"));
    assert.equal(tip.getAttribute("role"), "tooltip");
  }
  // A line's markup stays text: no element is made of it.
  const third = node.children.find((n) => n.getAttribute("id") === "jd-2");
  assert.match(third.textContent, /<img src=x onerror=alert\(1\)>/);
  const elements = (n) => (n instanceof FakeElement ? [n, ...n.childNodes.flatMap(elements)] : []);
  assert.deepEqual([...new Set(elements(node).map((n) => n.tagName))].sort(), ["P", "SPAN"]);
  // Focus tells which lines to highlight; Escape hides the tooltip until the sentence is left.
  sentences[0].listeners.focus();
  sentences[0].listeners.keydown({ key: "Escape" });
  assert.ok(sentences[0].classList.contains("dismissed"));
  sentences[0].listeners.blur();
  assert.ok(!sentences[0].classList.contains("dismissed"));
  assert.deepEqual(shown, [[["m1"], true], [["m1"], false]]);
});

test("a version's own edits are marked, with a word for those who do not see the mark", () => {
  const node = new FakeElement("p");
  const text = `${SENTENCES[0]} Honig!`;
  renderSentences(node, versionView(v([fromDraft(SENTENCES[0], ["u1"]), edit("Honig!")], text), [DRAFT], dayLines(DAY)),
                  { idPrefix: "jv" });
  const [mark] = node.children.filter((n) => n.tagName === "MARK");
  assert.equal(mark.className, "journal-edit");
  assert.equal(mark.textContent, `${STRINGS.en["journal.yourEdit"]} Honig!`);
  assert.equal(mark.children[0].className, "visually-hidden");
});
