// The journal calendar's date arithmetic (web/js/journal-calendar.js), DOM-free: a month's
// weeks Monday first, moving by days, weeks and months (kept inside the target month), and
// which key moves where. Calendar days are `YYYY-MM-DD`, never moved by a time zone.
import assert from "node:assert/strict";
import { test } from "node:test";

import { addDays, addMonths, keyTarget, monthOf, monthWeeks, weekday } from "../../web/js/journal-calendar.js";

test("a month's weeks start on Monday and hold every day once", () => {
  const weeks = monthWeeks("2026-12");
  assert.deepEqual(weeks[0], [null, "2026-12-01", "2026-12-02", "2026-12-03", "2026-12-04", "2026-12-05", "2026-12-06"]);
  assert.equal(weeks.length, 5);
  assert.deepEqual(weeks.at(-1), ["2026-12-28", "2026-12-29", "2026-12-30", "2026-12-31", null, null, null]);
  for (const month of ["2026-02", "2028-02", "2024-09", "2027-03", "2015-02", "2021-02", "2026-08"]) {
    const days = monthWeeks(month).flat().filter(Boolean);
    const last = new Date(Date.UTC(Number(month.slice(0, 4)), Number(month.slice(5)), 0)).getUTCDate();
    assert.equal(days.length, last, month);
    assert.ok(days.every((day, n) => day === `${month}-${String(n + 1).padStart(2, "0")}`), month);
    assert.ok(monthWeeks(month).every((week) => week.length === 7), month);
  }
  assert.equal(monthWeeks("2021-02").length, 4); // from a Monday, 28 days: four full weeks
  assert.equal(monthWeeks("2015-02").length, 5); // from a Sunday
  assert.equal(monthWeeks("2026-08").length, 6); // from a Saturday, 31 days
});

test("days move across months, years and leap days", () => {
  assert.equal(addDays("2026-12-31", 1), "2027-01-01");
  assert.equal(addDays("2028-03-01", -1), "2028-02-29");
  assert.equal(addDays("2026-03-29", 1), "2026-03-30"); // a DST night changes nothing
  assert.equal(weekday("2026-12-01"), 1); // a Tuesday
  assert.equal(weekday("2026-11-30"), 0);
  assert.equal(monthOf("2026-12-01"), "2026-12");
});

test("a month later is the same day, or the month's last", () => {
  assert.equal(addMonths("2026-01-31", 1), "2026-02-28");
  assert.equal(addMonths("2028-01-31", 1), "2028-02-29");
  assert.equal(addMonths("2026-12-15", 1), "2027-01-15");
  assert.equal(addMonths("2026-01-15", -1), "2025-12-15");
  assert.equal(addMonths("2026-03-31", -1), "2026-02-28");
});

test("the keys move by a day, a week, to the week's ends and by a month", () => {
  const from = "2026-12-02"; // a Wednesday
  assert.equal(keyTarget(from, "ArrowLeft"), "2026-12-01");
  assert.equal(keyTarget(from, "ArrowRight"), "2026-12-03");
  assert.equal(keyTarget(from, "ArrowUp"), "2026-11-25");
  assert.equal(keyTarget(from, "ArrowDown"), "2026-12-09");
  assert.equal(keyTarget(from, "Home"), "2026-11-30");
  assert.equal(keyTarget(from, "End"), "2026-12-06");
  assert.equal(keyTarget(from, "PageUp"), "2026-11-02");
  assert.equal(keyTarget(from, "PageDown"), "2027-01-02");
  assert.equal(keyTarget(from, "Enter"), null);
  assert.equal(keyTarget(from, "a"), null);
});
