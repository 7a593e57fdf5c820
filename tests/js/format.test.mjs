// Numbers, sizes, counts and moments as web/js/i18n.js writes them, in the browser's locale:
// "0,50", "1,4 MB", "1 Tagebucheintrag", "4 Erinnerungen an dich", "heute um 18:34",
// "gestern um …", else the date. i18n.js reads the browser's languages once, when it is
// imported: each locale gets a module instance of its own (a query in the URL).
import assert from "node:assert/strict";
import { test } from "node:test";

async function i18nFor(languages) {
  Object.defineProperty(globalThis, "navigator", { value: { languages, language: languages[0] },
                                                   configurable: true, writable: true });
  return import(`../../web/js/i18n.js?${languages.join(",")}`);
}

const de = await i18nFor(["de-DE", "en"]);
const gb = await i18nFor(["en-GB"]);
const us = await i18nFor(["en-US"]);

const NOW = new Date(2026, 11, 1, 20, 0, 0); // Tuesday, 1 December 2026, 20:00 local time
const at = (day, hour, minute, second = 0) => new Date(2026, 11, day, hour, minute, second).getTime() / 1000;

test("the language and the locale come from the browser", () => {
  assert.equal(de.lang, "de");
  assert.equal(de.locale, "de-DE");
  assert.equal(gb.lang, "en");
  assert.equal(gb.locale, "en-GB");
  assert.equal(de.pickLocale(["fr-FR", "de-AT"], "de"), "de-AT");
  assert.equal(de.pickLocale(["fr-FR"], "en"), "en");
  assert.equal(de.pickLocale(["de-x-!!"], "de"), "de"); // not a tag: the language itself
});

test("today, yesterday and tomorrow are said in words, with the time", () => {
  assert.equal(de.formatDateTime(at(1, 18, 34), { now: NOW }), "heute um 18:34");
  // Yesterday is the calendar day before, however few hours ago it was.
  assert.equal(de.formatDateTime(at(1, 0, 5) - 600, { now: new Date(2026, 11, 1, 0, 1) }), "gestern um 23:55");
  assert.equal(de.formatDateTime(at(0, 23, 50), { now: NOW }), "gestern um 23:50");
  assert.equal(de.formatDateTime(at(2, 9, 0), { now: NOW }), "morgen um 09:00");
  assert.equal(de.formatDateTime(at(1, 18, 34, 5), { now: NOW, seconds: true }), "heute um 18:34:05");
  assert.equal(gb.formatDateTime(at(1, 18, 34), { now: NOW }), "today at 18:34");
  assert.equal(gb.formatDateTime(at(0, 7, 5), { now: NOW }), "yesterday at 07:05");
  assert.equal(us.formatDateTime(at(1, 18, 34), { now: NOW }), "today at 06:34 PM");
});

test("other days are the date with the time, in the locale's order", () => {
  assert.equal(de.formatDateTime(at(-2, 18, 34), { now: NOW }), "28.11.2026, 18:34");
  assert.equal(de.formatDateTime(at(28, 18, 34), { now: NOW }), "28.12.2026, 18:34");
  assert.equal(gb.formatDateTime(at(28, 18, 34), { now: NOW }), "28 Dec 2026, 18:34");
  assert.equal(de.formatDateTime(at(28, 18, 34, 7), { now: NOW, seconds: true }), "28.12.2026, 18:34:07");
});

test("numbers are written in the user's locale", () => {
  const two = { minimumFractionDigits: 2, maximumFractionDigits: 2 };
  assert.equal(de.formatNumber(0.5, two), "0,50");
  assert.equal(gb.formatNumber(0.5, two), "0.50");
  assert.equal(de.formatNumber(32768), "32.768");
  assert.equal(us.formatNumber(32768), "32,768");
});

test("sizes take the largest unit that keeps them at one or more", () => {
  assert.equal(de.formatBytes(1_400_000), "1,4 MB");
  assert.equal(gb.formatBytes(1_400_000), "1.4 MB");
  assert.equal(de.formatBytes(820_000), "820 kB");
  assert.equal(de.formatBytes(25_300_000), "25 MB");
  assert.equal(gb.formatBytes(2_500_000_000), "2.5 GB");
  assert.equal(de.formatBytes(512), "512 Byte");
});

test("a count names its noun in the right plural form", () => {
  assert.equal(de.countText("entries", 1), "1 Tagebucheintrag");
  assert.equal(de.countText("entries", 3), "3 Tagebucheinträge");
  assert.equal(de.countText("memories", 4), "4 Erinnerungen an dich");
  assert.equal(de.countText("memories", 1), "1 Erinnerung an dich");
  assert.equal(de.countText("messages", 1000), "1.000 Nachrichten");
  assert.equal(de.countText("skipped", 1), "1 war schon da");
  assert.equal(gb.countText("entries", 1), "1 journal entry");
  assert.equal(gb.countText("entries", 0), "0 journal entries");
  assert.equal(gb.countText("memories", 2), "2 memories of you");
  assert.equal(gb.countText("skipped", 2), "2 were already here");
});
