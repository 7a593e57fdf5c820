// web/js/conversation.js has no DOM: its bookkeeping runs under node's own test runner too
// (tests/test_js.py runs `node --test tests/js/` inside `make test`).
import assert from "node:assert/strict";
import { test } from "node:test";

import { Conversation } from "../../web/js/conversation.js";
import { ws } from "./wire.mjs";


function shown(c) {
  return c.ordered().map((e) => {
    if (e.kind === "user") return `user ${e.ids.join("+") || "local"} ${e.status} ${e.mine ? "mine" : "other"}: ${e.text}`;
    if (e.kind === "character") return `nova ${e.turnId} ${e.origin}${e.answersOther ? " answers-other" : ""}: ${e.text}`;
    return `failure ${e.turnId} ${e.reason}: ${e.messageIds.join("+")}`;
  });
}

test("a sent message is pending until the answer names it", () => {
  const c = new Conversation();
  const key = c.beginSend("Hallo");
  c.sendAccepted(key, "m1", 10);
  assert.deepEqual(c.openIds(), ["m1"]);
  c.apply(ws.state("t1", "path1", ["m1"], 11));
  c.apply(ws.response("t1", ["m1"], "Hallo zurück", 12));
  assert.deepEqual(shown(c), ["user m1 answered mine: Hallo", "nova t1 reply: Hallo zurück"]);
  assert.deepEqual(c.openIds(), []);
});

test("our own broadcast before the 202 is matched by id and shown once", () => {
  const c = new Conversation();
  const key = c.beginSend("ja");
  c.apply(ws.accepted("other", "ja", 10)); // another tab said the same text first
  c.apply(ws.accepted("mine", "ja", 11)); // then our own broadcast, before our 202
  assert.deepEqual(shown(c), ["user local sending mine: ja"]); // both wait for the 202
  c.sendAccepted(key, "mine", 11);
  assert.deepEqual(shown(c), ["user other pending other: ja", "user mine pending mine: ja"]);
});

test("a failure closes every id it names, once", () => {
  const c = new Conversation();
  const a = c.beginSend("eins");
  const b = c.beginSend("zwei");
  c.sendAccepted(a, "m1", 10);
  c.sendAccepted(b, "m2", 11);
  c.apply(ws.failed("t1", ["m1", "m2"], "model_unavailable", 12));
  c.apply(ws.failed("t1", ["m1", "m2"], "model_unavailable", 12));
  assert.deepEqual(c.openIds(), []);
  assert.equal(shown(c).filter((line) => line.startsWith("failure")).length, 1);
});

test("a session reset clears the tab and a late 202 does not reopen an ended id", () => {
  const c = new Conversation();
  const a = c.beginSend("vorher");
  c.sendAccepted(a, "m1", 10);
  c.apply(ws.failed("t0", ["m1"], "session_reset", 11));
  c.apply(ws.reset(12));
  assert.deepEqual(shown(c), []);
  c.apply(ws.accepted("m1", "vorher", 10)); // a snapshot naming it again
  assert.deepEqual(shown(c), []);
  assert.deepEqual(c.openIds(), []);
});

test("a stored answer takes its origin from the table the session sends, never a copy of its own", () => {
  const turns = [
    { turn_id: "t1", rolle: "assistant", inhalt: "eins", zeit: 1, herkunft: "antwort", nachrichten_ids: [] },
    { turn_id: "t2", rolle: "assistant", inhalt: "zwei", zeit: 2, herkunft: "eigener_impuls", nachrichten_ids: [] },
  ];
  const c = new Conversation();
  // A table unlike the real one: what shows must be what the server said.
  c.mergeSession({ turns, origins: { antwort: "continue" } });
  assert.deepEqual(shown(c), ["nova t1 continue: eins", "nova t2 unknown: zwei"]);
  const bare = new Conversation();
  bare.mergeSession({ turns });  // no table: the occasion is not known here
  assert.deepEqual(shown(bare), ["nova t1 unknown: eins", "nova t2 unknown: zwei"]);
});
