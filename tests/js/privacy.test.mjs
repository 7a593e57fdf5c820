// The privacy tab's naming of a refused registry (web/js/privacy.js `repeatedName`): which
// name the server's `duplicate_name` is about, by the server's rule (spaces collapsed, any
// case, names and aliases alike).
import assert from "node:assert/strict";
import { test } from "node:test";

import { repeatedName } from "../../web/js/privacy.js";

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
