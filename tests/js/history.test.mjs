// The durable history meeting the live conversation (web/js/conversation.js): a line of the
// message log, the session's turn and the live message are one entry, however they arrive;
// a reset ends the session, not the history; the tabs of one browser are one person.
import assert from "node:assert/strict";
import { test } from "node:test";

import { Conversation } from "../../web/js/conversation.js";
import { ws } from "./wire.mjs";

const ORIGINS = { antwort: "reply", fortsetzung: "continue", eigener_impuls: "own_impulse" };


/** A line of `GET …/history`. */
const line = (role, text, at, { turn = "t1", ids = ["m1"], origin = "", day = "2026-01-01", source = "chat", id = null } = {}) => ({
  cursor: `c${at}`, source, role, text, at, sort_at: at, calendar_date: day, turn_id: turn,
  message_ids: ids, origin, character_id: source === "import" ? null : "nova",
  conversation_id: source === "import" ? "conv1" : null, message_id: id,
});

function shown(c) {
  return c.ordered().map((e) => {
    if (e.kind === "user") return `user ${e.ids.join("+")} ${e.status}${e.sameBrowser ? " browser" : ""}${e.archived ? " log" : ""}: ${e.text}`;
    if (e.kind === "character") return `nova ${e.turnId} ${e.origin}${e.answersOther ? " answers-other" : ""}: ${e.text}`;
    if (e.kind === "imported") return `imported ${e.role}: ${e.text}`;
    return `failure ${e.turnId} ${e.reason}`;
  });
}

function sharedStorage() {
  const data = new Map();
  return { getItem: (k) => (data.has(k) ? data.get(k) : null), setItem: (k, v) => data.set(k, String(v)),
           removeItem: (k) => data.delete(k) };
}

test("a live exchange and the same lines from the log are shown once", () => {
  const c = new Conversation();
  const key = c.beginSend("Hallo");
  c.sendAccepted(key, "m1", 10);
  c.apply(ws.response("t1", ["m1"], "Hallo zurück", 12));
  c.mergeHistory([line("user", "Hallo", 10), line("assistant", "Hallo zurück", 11.5, { origin: "antwort" })], ORIGINS);
  c.mergeHistory([line("user", "Hallo", 10), line("assistant", "Hallo zurück", 11.5, { origin: "antwort" })], ORIGINS);
  assert.deepEqual(shown(c), ["user m1 answered log: Hallo", "nova t1 reply: Hallo zurück"]);
  assert.deepEqual(c.openIds(), []);
});

test("lines from the log first, then the session and the live messages: nothing twice", () => {
  const c = new Conversation();
  c.mergeHistory([
    line("user", "alt", 5, { turn: "t0", ids: ["m0"] }),
    line("assistant", "alte Antwort", 6, { turn: "t0", ids: ["m0"], origin: "antwort" }),
    line("assistant", "weiter", 7, { turn: "t0", ids: ["m0"], origin: "fortsetzung" }),
    line("assistant", "von mir aus", 8, { turn: "t9", ids: [], origin: "eigener_impuls" }),
  ], ORIGINS);
  c.mergeSession({ origins: ORIGINS, turns: [
    { turn_id: "t0", rolle: "user", inhalt: "alt", zeit: 5, nachrichten_ids: ["m0"] },
    { turn_id: "t0", rolle: "assistant", inhalt: "alte Antwort", zeit: 6, herkunft: "antwort", nachrichten_ids: ["m0"] },
    { turn_id: "t0", rolle: "assistant", inhalt: "weiter", zeit: 7, herkunft: "fortsetzung", nachrichten_ids: ["m0"] },
    { turn_id: "t9", rolle: "assistant", inhalt: "von mir aus", zeit: 8, herkunft: "eigener_impuls", nachrichten_ids: [] },
  ] });
  c.apply(ws.accepted("m0", "alt", 5));
  c.apply(ws.response("t9", [], "von mir aus", 8.2, "own_impulse"));
  assert.deepEqual(shown(c), ["user m0 answered log: alt", "nova t0 reply: alte Antwort",
    "nova t0 continue: weiter", "nova t9 own_impulse: von mir aus"]);
});

test("a block of the log meets the messages the tab saw: each shown once", () => {
  const whole = new Conversation(); // the tab saw both: they stay as they were sent
  whole.apply(ws.accepted("m1", "erste", 10));
  whole.apply(ws.accepted("m2", "zweite", 11));
  whole.mergeHistory([line("user", "erste\nzweite", 10, { ids: ["m1", "m2"] })], ORIGINS);
  whole.apply(ws.response("t1", ["m1", "m2"], "beides gelesen", 13));
  assert.deepEqual(shown(whole), ["user m1 answered log: erste", "user m2 answered log: zweite",
    "nova t1 reply answers-other: beides gelesen"]);
  const part = new Conversation(); // the tab saw one: the block takes its place
  part.apply(ws.accepted("m1", "erste", 10));
  part.mergeHistory([line("user", "erste\nzweite", 10, { ids: ["m1", "m2"] })], ORIGINS);
  part.apply(ws.accepted("m2", "zweite", 11));
  assert.deepEqual(shown(part), ["user m1+m2 pending log: erste\nzweite"]);
});

test("the key of a line finds the entry that shows it (a search hit)", () => {
  const c = new Conversation();
  const key = c.beginSend("Leipzig");
  c.sendAccepted(key, "m1", 10);
  c.apply(ws.response("t1", ["m1"], "Schöne Stadt", 12));
  const asked = line("user", "Leipzig", 10);
  const answer = line("assistant", "Schöne Stadt", 11, { origin: "antwort" });
  const imported = line("user", "importiert", 3, { source: "import", id: "msg_x", ids: [], turn: null });
  assert.equal(c.keyOfLine(asked, ORIGINS), "m:m1");
  assert.equal(c.keyOfLine(answer, ORIGINS), "t:t1:reply");
  assert.equal(c.keyOfLine(imported, ORIGINS), "i:msg_x");
  c.mergeHistory([imported], ORIGINS);
  assert.deepEqual(shown(c)[0], "imported user: importiert");
});

test("a reset keeps what is in the log, drops what it ended, and moves the marker", () => {
  const c = new Conversation();
  c.mergeHistory([line("user", "gestern", 5, { turn: "t0", ids: ["m0"] }),
                  line("assistant", "ja", 6, { turn: "t0", ids: ["m0"], origin: "antwort" })], ORIGINS);
  c.mergeSession({ origins: ORIGINS, turns: [
    { turn_id: "t0", rolle: "user", inhalt: "gestern", zeit: 5, nachrichten_ids: ["m0"] }] });
  assert.equal(c.workingSince, 5);
  const a = c.beginSend("offen");
  c.sendAccepted(a, "m1", 10);
  c.apply(ws.failed("t1", ["m1"], "session_reset", 11));
  c.apply(ws.reset(12));
  assert.deepEqual(shown(c), ["user m0 answered log: gestern", "nova t0 reply: ja"]);
  assert.equal(c.workingSince, 12); // everything above is archive now
  const b = c.beginSend("neu");
  c.sendAccepted(b, "m2", 13);
  c.apply(ws.accepted("m1", "offen", 10)); // a late echo of the ended one
  assert.deepEqual(shown(c).slice(-1), ["user m2 pending: neu"]);
  assert.equal(shown(c).length, 3);
  assert.deepEqual(c.openIds(), ["m2"]);
});

test("an expired session puts the marker after what was said, before what comes", () => {
  const c = new Conversation();
  c.mergeHistory([line("user", "früher", 5, { turn: "t0", ids: ["m0"] })], ORIGINS);
  c.mergeSession({ origins: ORIGINS, turns: [] });
  const since = c.workingSince;
  assert.ok(since > 5 && since < 5.001);
  c.mergeSession({ origins: ORIGINS, turns: [] }); // found empty again: the marker stays
  assert.equal(c.workingSince, since);
  c.mergeSession({ origins: ORIGINS, turns: [
    { turn_id: "t1", rolle: "user", inhalt: "heute", zeit: 50, nachrichten_ids: ["m1"] }] });
  assert.equal(c.workingSince, 50);
});

test("the tabs of one browser are one person; another device stays another", () => {
  const storage = sharedStorage();
  const options = { browserStorage: storage, browserKey: "sent" };
  const first = new Conversation(options);
  const second = new Conversation(options);
  const key = first.beginSend("aus Tab eins");
  second.apply(ws.accepted("m1", "aus Tab eins", 10)); // the broadcast may come first
  first.sendAccepted(key, "m1", 10);
  second.syncBrowser(); // the storage event
  second.apply(ws.accepted("m9", "vom Telefon", 11));
  second.apply(ws.response("t1", ["m1"], "für Tab eins", 12));
  second.apply(ws.response("t9", ["m9"], "fürs Telefon", 13));
  assert.deepEqual(shown(second), ["user m1 answered browser: aus Tab eins",
    "user m9 answered: vom Telefon", "nova t1 reply: für Tab eins", "nova t9 reply answers-other: fürs Telefon"]);
  // A tab opened later knows them too.
  const third = new Conversation(options);
  third.apply(ws.accepted("m1", "aus Tab eins", 10));
  assert.deepEqual(shown(third), ["user m1 pending browser: aus Tab eins"]);
});

test("an answer that came before the storage event loses its other-device label", () => {
  const storage = sharedStorage();
  const options = { browserStorage: storage, browserKey: "sent" };
  const first = new Conversation(options);
  const second = new Conversation(options);
  const key = first.beginSend("schnell");
  second.apply(ws.accepted("m1", "schnell", 10));
  second.apply(ws.response("t1", ["m1"], "schneller", 11));
  assert.deepEqual(shown(second).slice(-1), ["nova t1 reply answers-other: schneller"]);
  first.sendAccepted(key, "m1", 10);
  second.syncBrowser();
  assert.deepEqual(shown(second), ["user m1 answered browser: schnell", "nova t1 reply: schneller"]);
});

test("dropping a jumped-to window keeps the present and this tab's open messages", () => {
  const c = new Conversation();
  c.mergeHistory([line("user", "vor langer Zeit", 1, { turn: "t0", ids: ["m0"] })], ORIGINS);
  const key = c.beginSend("jetzt");
  c.sendAccepted(key, "m5", 100);
  c.apply(ws.accepted("m6", "auch jetzt", 101));
  c.dropArchived(50);
  assert.deepEqual(shown(c), ["user m5 pending: jetzt", "user m6 pending: auch jetzt"]);
});
