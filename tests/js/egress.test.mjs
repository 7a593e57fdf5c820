// The Privacy tab's "What left this machine" (web/js/egress.js): the day in one line as
// issue 39 item 5 words it, what was masked by kind, and a local endpoint marked local.
import assert from "node:assert/strict";
import { test } from "node:test";

import { callText, KIND_UNITS, maskedText, summaryText } from "../../web/js/egress.js";
import { STRINGS } from "../../web/js/i18n.js";

const SUMMARY = {
  calls: 14, remote_calls: 14, masked: { PERSON: 23, ADDRESS: 2 }, refused: { gate: 0, reply: 0 },
  tokens_in: 9000, tokens_out: 1200,
  endpoints: [{ endpoint: "openrouter.ai", provider: "openai", remote: true, calls: 14 }],
};

test("the day is one line: calls, where to, what was masked, how many refused", () => {
  assert.equal(summaryText("2026-12-07", SUMMARY, "2026-12-07"),
               "Today: 14 calls to OpenRouter; 23 names and 2 addresses masked, 0 refused.");
  const other = { ...SUMMARY, endpoints: [{ ...SUMMARY.endpoints[0], endpoint: "llm.example.net:8443" }] };
  assert.match(summaryText("2026-12-07", other, "2026-12-07"), /^Today: 14 calls to llm\.example\.net:8443;/);
});

test("a local endpoint is marked local, and a day without calls says so", () => {
  const local = { ...SUMMARY, calls: 3, remote_calls: 0, masked: {},
                  endpoints: [{ endpoint: "127.0.0.1:11434", provider: "ollama", remote: false, calls: 1 }] };
  assert.equal(summaryText("2026-12-07", local, "2026-12-07"),
               "Today: 1 call to 127.0.0.1:11434 (local); nothing masked, 0 refused.");
  assert.equal(summaryText("2026-12-07", { ...SUMMARY, calls: 0 }, "2026-12-07"),
               "Today: nothing left this machine.");
  const line = callText({ at: 0, purpose: "responder", endpoint: "127.0.0.1:11434", model: "m",
                          remote: false, tokens_in: 5, tokens_out: 2, masked: {}, refused: null,
                          outcome: "ok", error_code: null });
  assert.match(line, /127\.0\.0\.1:11434 \(local\).*local: nothing masked/);
});

test("three kinds are listed with commas and 'and'; a refusal is named", () => {
  assert.equal(maskedText({ PERSON: 1, PHONE: 2, IBAN: 1 }), "1 name, 2 phone numbers and 1 IBAN");
  const line = callText({ at: 0, purpose: "perception", endpoint: "openrouter.ai", model: null,
                          remote: true, tokens_in: null, tokens_out: null, masked: { PERSON: 2 },
                          refused: "reply", outcome: "error", error_code: "privacy_blocked" });
  assert.match(line, /2 names · reply refused$/);
});

test("every masked kind has its count words in both languages", () => {
  for (const unit of [...Object.values(KIND_UNITS), "egressCalls", "egressOther"]) {
    for (const language of ["en", "de"]) {
      for (const form of ["one", "other"]) {
        assert.ok(STRINGS[language][`count.${unit}.${form}`], `${language} count.${unit}.${form}`);
      }
    }
  }
});
