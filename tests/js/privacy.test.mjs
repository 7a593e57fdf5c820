// The privacy tab's naming of a refused registry (web/js/privacy.js `repeatedName`): which
// name the server's `duplicate_name` is about, by the server's rule (spaces collapsed, any
// case, names and aliases alike); and the preview's telling of each masked part.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import { STRINGS } from "../../web/js/i18n.js";
import { partText, REASONS, repeatedName } from "../../web/js/privacy.js";

test("the name given twice is found as typed the second time", () => {
  assert.equal(repeatedName([{ name: "Anna Schmidt", aliases: ["Anni"] }, { name: "anna  schmidt", aliases: [] }]),
               "anna schmidt");
  assert.equal(repeatedName([{ name: "Anna", aliases: [] }, { name: "Bert", aliases: ["ANNA"] }]), "ANNA");
  assert.equal(repeatedName([{ name: "Paul", aliases: ["Paul"] }]), "Paul");
});

test("a registry without a repeated name has none", () => {
  assert.equal(repeatedName([{ name: "Anna", aliases: ["Anni"] }, { name: "Anne", aliases: [] }]), null);
  assert.equal(repeatedName([]), null);
});

// Issue 39, item 6: the preview names each masked part and why, in both languages; every
// reason the server gives (app/llm/privacy/masking.py `_reason`: "registered",
// "looks_like_name", or a kind of app/llm/privacy/spans.py KINDS) has its words.
test("each masked part is told with its placeholder and its reason", () => {
  const span = { text: "Anna", placeholder: "[PERSON_1]", reason: "registered" };
  assert.equal(partText(span, STRINGS.en), "“Anna” → [PERSON_1]: registered");
  assert.equal(partText(span, STRINGS.de), "„Anna“ → [PERSON_1]: registriert");
  assert.equal(partText({ text: "DE89 3704", placeholder: "[IBAN_1]", reason: "IBAN" }, STRINGS.de),
               "„DE89 3704“ → [IBAN_1]: IBAN");
  assert.equal(partText({ text: "Kowalski", placeholder: "[PERSON_2]", reason: "looks_like_name" }, STRINGS.en),
               "“Kowalski” → [PERSON_2]: looks like a name");
});

test("every reason the server gives has its words in German and English", () => {
  const kinds = readFileSync(new URL("../../app/llm/privacy/spans.py", import.meta.url), "utf8")
    .match(/^KINDS = \(([^)]*)\)/m)[1].match(/"(\w+)"/g).map((kind) => kind.slice(1, -1));
  const reasons = [...kinds.filter((kind) => kind !== "PERSON"), "registered", "looks_like_name"];
  assert.deepEqual([...REASONS].sort(), reasons.sort());
  for (const language of ["en", "de"]) {
    for (const reason of reasons) {
      assert.ok(STRINGS[language][`privacy.reason.${reason}`], `${language}: ${reason}`);
    }
  }
});
