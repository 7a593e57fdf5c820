// The UI's one fetch (web/js/api.js `request`) against a real HTTP server, and its one error
// text (web/js/i18n.js `errorText`): every way a request can go wrong ends as one ApiError,
// and that error reads as the `reason.<code>` text in the UI's language.
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { after, before, test } from "node:test";

import { ApiError, request } from "../../web/js/api.js";
import { errorText, reasonText, STRINGS } from "../../web/js/i18n.js";

// The answers of the server: [status, content type, body].
const ROUTES = {
  "/ok": [200, "application/json", JSON.stringify({ a: 1 })],
  "/empty": [204, null, ""],
  "/busy": [409, "application/json", JSON.stringify({ error: { code: "journal_busy", message: "a job runs" } })],
  "/odd-code": [400, "application/json", JSON.stringify({ error: { code: "brand_new_code", message: "the new rule" } })],
  "/proxy": [502, "text/html", "<html><body>Bad Gateway</body></html>"],
  "/no-shape": [500, "application/json", JSON.stringify({ detail: "crashed" })],
  "/html-ok": [200, "text/html", "<!doctype html><p>a login portal</p>"],
};

let server;
let base;
let received;

before(async () => {
  server = createServer((req, res) => {
    let body = "";
    req.on("data", (chunk) => { body += chunk; });
    req.on("end", () => {
      received = { method: req.method, type: req.headers["content-type"], body };
      if (req.url === "/echo") {
        res.writeHead(201, { "Content-Type": "application/json" });
        res.end(JSON.stringify(received));
        return;
      }
      const [status, type, answer] = ROUTES[req.url] || [404, "text/plain", "404: Not Found"];
      res.writeHead(status, type ? { "Content-Type": type } : {});
      res.end(answer);
    });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${server.address().port}`;
});

after(() => new Promise((resolve) => server.close(resolve)));

async function failure(path, ...args) {
  try {
    await request("GET", `${base}${path}`, ...args);
  } catch (error) {
    assert.ok(error instanceof ApiError, `${path}: ${error}`);
    return error;
  }
  assert.fail(`${path} did not fail`);
}

test("an answer is its parsed JSON; an empty one is null", async () => {
  assert.deepEqual(await request("GET", `${base}/ok`), { a: 1 });
  assert.equal(await request("DELETE", `${base}/empty`), null);
});

test("a body goes as JSON, a raw body as it is", async () => {
  assert.deepEqual(await request("POST", `${base}/echo`, { text: "ä" }),
    { method: "POST", type: "application/json", body: '{"text":"ä"}' });
  const file = '{"kind": "novaberg.profiles", "profiles": []}';
  assert.deepEqual(await request("POST", `${base}/echo`, file, { raw: true }),
    { method: "POST", type: "application/json", body: file });
});

test("an error answer is an ApiError with the server's status, code and message", async () => {
  const error = await failure("/busy");
  assert.deepEqual([error.status, error.code, error.message], [409, "journal_busy", "a job runs"]);
  assert.equal(errorText(error), STRINGS.en["reason.journal_busy"]);
});

test("an error answer without the error shape keeps its status as the code", async () => {
  for (const [path, status] of [["/proxy", 502], ["/no-shape", 500], ["/nowhere", 404]]) {
    const error = await failure(path);
    assert.deepEqual([error.status, error.code], [status, `http_${status}`], path);
    assert.match(error.message, new RegExp(`^${status}\\b`), path);
    assert.equal(errorText(error), error.message, path); // no text of its own: what happened
  }
});

test("a success answer that is not JSON is an ApiError, not a null", async () => {
  const error = await failure("/html-ok");
  assert.deepEqual([error.status, error.code], [200, "invalid_response"]);
  assert.equal(errorText(error), "the server's answer could not be read");
});

test("a server that cannot be reached is the ApiError `network` with status 0", async () => {
  const closed = createServer();
  await new Promise((resolve) => closed.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${closed.address().port}/ok`;
  await new Promise((resolve) => closed.close(resolve));
  const error = await request("GET", url).catch((e) => e);
  assert.ok(error instanceof ApiError);
  assert.deepEqual([error.status, error.code], [0, "network"]);
  assert.equal(errorText(error), "the server cannot be reached");
  assert.equal(errorText(error, "send"), "the server cannot be reached");
});

test("errorText: the reason text, else the server's message, else the code", () => {
  assert.equal(errorText(new ApiError(400, "invalid_due_at", "due_at lies in the past")), STRINGS.en["reason.invalid_due_at"]);
  assert.equal(errorText(new ApiError(400, "brand_new_code", "the new rule")), "the new rule");
  assert.equal(errorText({ code: "brand_new_code" }), "brand_new_code");
  // A `{code, message}` inside an answer (a job's error, a connection test's) reads the same.
  assert.equal(errorText({ code: "model_unavailable", message: "connect refused" }), STRINGS.en["reason.model_unavailable"]);
  for (const nothing of [undefined, null, {}]) assert.equal(errorText(nothing), STRINGS.en["reason.unknown"]);
  assert.equal(errorText(new TypeError("x is undefined")), "x is undefined"); // a bug, said as it is
});

test("a context's own words for a code come first; other codes fall back to reason.<code>", () => {
  const limited = new ApiError(429, "rate_limited", "too many messages per second");
  assert.equal(errorText(limited), STRINGS.en["reason.rate_limited"]);
  assert.equal(errorText(limited, "send"), STRINGS.en["send.rate_limited"]);
  assert.notEqual(STRINGS.en["send.rate_limited"], STRINGS.en["reason.rate_limited"]);
  assert.equal(errorText(new ApiError(413, "message_too_long", "m"), "send"), STRINGS.en["reason.message_too_long"]);
  assert.equal(errorText(new ApiError(400, "brand_new_code", "the new rule"), "send"), "the new rule");
});

test("reasonText: a failed turn's code as text, an unknown code as it is", () => {
  assert.equal(reasonText("model_timeout"), STRINGS.en["reason.model_timeout"]);
  assert.equal(reasonText("brand_new_code"), "brand_new_code");
  assert.equal(reasonText(undefined), STRINGS.en["reason.unknown"]);
});

test("in a German browser the same error reads in German", async () => {
  // A second instance of the module (another URL), loaded under a German navigator.
  const previous = Object.getOwnPropertyDescriptor(globalThis, "navigator");
  Object.defineProperty(globalThis, "navigator", { value: { languages: ["de-DE"], language: "de-DE" }, configurable: true });
  try {
    const german = await import("../../web/js/i18n.js?lang=de");
    assert.equal(german.lang, "de");
    assert.equal(german.errorText(await failure("/busy")), "es wird bereits ein Eintrag geschrieben");
    assert.equal(german.errorText(new ApiError(0, "network", "fetch failed")), "der Server ist nicht erreichbar");
    assert.equal(german.errorText(new ApiError(429, "rate_limited", "m"), "send"), STRINGS.de["send.rate_limited"]);
  } finally {
    if (previous) Object.defineProperty(globalThis, "navigator", previous);
    else delete globalThis.navigator;
  }
});
