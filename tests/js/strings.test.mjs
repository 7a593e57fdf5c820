// The UI's string tables (web/js/i18n.js, web/js/profile-strings.js): German and English
// have the same keys and the same {placeholders} per key, and no text assumes what the
// character is called or its gender (the character is configurable: its name comes from its
// definition). Runs under node's own test runner (tests/web/test_js.py).
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { test } from "node:test";

import { STRINGS } from "../../web/js/i18n.js";
import { PROFILE_STRINGS } from "../../web/js/profile-strings.js";

const WEB = new URL("../../web/", import.meta.url);
const JS = new URL("js/", WEB);
const TABLES = { "i18n.js": STRINGS, "profile-strings.js": PROFILE_STRINGS };
const LANGUAGES = ["en", "de"];

const placeholders = (text) => [...new Set([...text.matchAll(/\{(\w+)\}/g)].map((m) => m[1]))].sort();
const entries = () => Object.entries(TABLES).flatMap(([file, table]) =>
  LANGUAGES.flatMap((language) => Object.entries(table[language]).map(([key, text]) => ({ file, language, key, text }))));

test("every module that holds a language table is one this test checks", () => {
  // A table is an object with `en: {` and `de: {` members; a new one must be added to TABLES.
  const holders = readdirSync(JS).filter((name) => name.endsWith(".js"))
    .filter((name) => /^\s*(en|de):\s*\{/m.test(readFileSync(new URL(name, JS), "utf8")));
  assert.deepEqual(holders.sort(), Object.keys(TABLES).sort());
});

test("German and English have the same keys in every table", () => {
  for (const [file, table] of Object.entries(TABLES)) {
    assert.deepEqual(Object.keys(table).sort(), [...LANGUAGES].sort(), `${file}: languages`);
    const [en, de] = LANGUAGES.map((language) => new Set(Object.keys(table[language])));
    assert.deepEqual([...en].filter((key) => !de.has(key)), [], `${file}: keys only in English`);
    assert.deepEqual([...de].filter((key) => !en.has(key)), [], `${file}: keys only in German`);
  }
});

test("a key has the same placeholders in both languages", () => {
  for (const [file, table] of Object.entries(TABLES)) {
    const differing = Object.keys(table.en).filter((key) => key in table.de)
      .filter((key) => placeholders(table.en[key]).join() !== placeholders(table.de[key]).join())
      .map((key) => `${key}: en {${placeholders(table.en[key])}} de {${placeholders(table.de[key])}}`);
    assert.deepEqual(differing, [], file);
  }
});

test("no key is in two tables (addStrings would silently replace it)", () => {
  const [own, profile] = [STRINGS.en, PROFILE_STRINGS.en].map((strings) => Object.keys(strings));
  assert.deepEqual(profile.filter((key) => own.includes(key)), []);
});

test("every text is a string, and none is empty", () => {
  const bad = entries().filter(({ text }) => typeof text !== "string" || !text.trim());
  assert.deepEqual(bad, []);
});

test("no text hard-codes the character's name: it is the {name} placeholder", () => {
  const named = entries().filter(({ text }) => /\bNova\b/.test(text)).map(({ file, language, key }) => `${file} ${language} ${key}`);
  assert.deepEqual(named, []);
  // Nor the pages' text before the script fills it in, nor a name literal in a module.
  for (const page of readdirSync(WEB).filter((name) => name.endsWith(".html"))) {
    assert.doesNotMatch(readFileSync(new URL(page, WEB), "utf8"), /\bNova\b/, page);
  }
  for (const module of readdirSync(JS).filter((name) => name.endsWith(".js"))) {
    assert.doesNotMatch(readFileSync(new URL(module, JS), "utf8"), /["'`]Nova["'`]/, module);
  }
});

test("no text gives the character a gender", () => {
  // English: no third-person pronoun anywhere (the UI speaks to "you" and of the character
  // by name). German: none in a text about the character; "sie"/"ihr" elsewhere can mean a
  // message or the lines of a day.
  const english = /\b(she|her|hers|herself|he|him|his|himself)\b/i;
  const german = /\b(sie|ihr|ihre|ihrem|ihren|ihrer|ihres|er|ihm|ihn|sein|seine|seinem|seinen|seiner|seines)\b/i;
  const gendered = entries().filter(({ language, text }) => (language === "en" ? english.test(text)
    : text.includes("{name}") && german.test(text)))
    .map(({ file, language, key, text }) => `${file} ${language} ${key}: ${text}`);
  assert.deepEqual(gendered, []);
});
