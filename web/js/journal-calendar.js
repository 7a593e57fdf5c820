// The journal's month calendar (issue 22): days with an entry, days with a conversation,
// today, the open day. A grid of buttons with one tab stop (roving tabindex): the arrow keys
// move by a day or a week, Home/End to the week's ends, Page Up/Down by a month (across
// months the calendar turns), Enter or Space opens the day. The date arithmetic is DOM-free
// and tested under node (tests/js/calendar.test.mjs).

import { h } from "./dom.js";
import { formatDate, formatMonth, t, weekdayNames } from "./i18n.js";

// --- dates as `YYYY-MM-DD` (calendar days, no time zone) ------------------------------------

const pad = (n) => String(n).padStart(2, "0");

/** `YYYY-MM-DD` of a UTC date. */
export function isoDate(date) {
  return `${date.getUTCFullYear()}-${pad(date.getUTCMonth() + 1)}-${pad(date.getUTCDate())}`;
}

function utc(iso) {
  const [year, month, day] = iso.split("-").map(Number);
  return new Date(Date.UTC(year, month - 1, day));
}

/** The day `days` after (or before) `iso`. */
export function addDays(iso, days) {
  const date = utc(iso);
  date.setUTCDate(date.getUTCDate() + days);
  return isoDate(date);
}

/** The same day `months` later, kept inside the target month (31 Jan + 1 → 28/29 Feb). */
export function addMonths(iso, months) {
  const [year, month, day] = iso.split("-").map(Number);
  const first = new Date(Date.UTC(year, month - 1 + months, 1));
  const last = new Date(Date.UTC(first.getUTCFullYear(), first.getUTCMonth() + 1, 0)).getUTCDate();
  first.setUTCDate(Math.min(day, last));
  return isoDate(first);
}

/** `YYYY-MM` of a date. */
export function monthOf(iso) {
  return iso.slice(0, 7);
}

/** Monday 0 … Sunday 6. */
export function weekday(iso) {
  return (utc(iso).getUTCDay() + 6) % 7;
}

/** The weeks of a month `YYYY-MM`, Monday first: seven dates each, null outside the month. */
export function monthWeeks(month) {
  const first = `${month}-01`;
  const weeks = [];
  let week = Array(weekday(first)).fill(null);
  for (let day = first; monthOf(day) === month; day = addDays(day, 1)) {
    week.push(day);
    if (week.length === 7) {
      weeks.push(week);
      week = [];
    }
  }
  if (week.length) weeks.push([...week, ...Array(7 - week.length).fill(null)]);
  return weeks;
}

/** Where a key moves the focus from `iso`; null for a key the calendar does not take. */
export function keyTarget(iso, key) {
  switch (key) {
    case "ArrowLeft": return addDays(iso, -1);
    case "ArrowRight": return addDays(iso, 1);
    case "ArrowUp": return addDays(iso, -7);
    case "ArrowDown": return addDays(iso, 7);
    case "Home": return addDays(iso, -weekday(iso));
    case "End": return addDays(iso, 6 - weekday(iso));
    case "PageUp": return addMonths(iso, -1);
    case "PageDown": return addMonths(iso, 1);
    default: return null;
  }
}

// --- the widget -------------------------------------------------------------------------

export class Calendar {
  /** `onMonth(month)` → the month's `{today, days}` (GET /api/journal/months/{month});
   * `onOpen(date)`: a day was chosen. */
  constructor({ table, title, prev, next, onMonth, onOpen }) {
    this.table = table;
    this.title = title;
    this.onMonth = onMonth;
    this.onOpen = onOpen;
    this.month = null;
    this.days = new Map();
    this.today = null;
    this.selected = null;
    this.focused = null;
    prev.addEventListener("click", () => this.turn(-1));
    next.addEventListener("click", () => this.turn(1));
    table.addEventListener("keydown", (event) => this.onKey(event));
    table.addEventListener("click", (event) => {
      const button = event.target.closest("button[data-date]");
      if (button) this.choose(button.dataset.date);
    });
  }

  /** Show the month of `date` with `date` as its tab stop (and, with `focus`, focused). */
  async show(date, { focus = false } = {}) {
    const month = monthOf(date);
    if (month !== this.month) {
      const answer = await this.onMonth(month);
      if (!answer) return;
      this.month = month;
      this.today = answer.today;
      this.days = new Map(answer.days.map((day) => [day.date, day]));
    }
    this.focused = date;
    this.render();
    if (focus) this.button(date)?.focus();
  }

  /** Reload the shown month (after a change to one of its days). */
  async refresh() {
    if (!this.month) return;
    const shown = this.month;
    this.month = null;
    await this.show(this.focused && monthOf(this.focused) === shown ? this.focused : `${shown}-01`);
  }

  select(date) {
    this.selected = date;
    this.render();
  }

  async turn(months) {
    await this.show(addMonths(this.focused || `${this.month}-01`, months));
  }

  async choose(date) {
    this.selected = date;
    await this.show(date, { focus: true });
    this.onOpen(date);
  }

  async onKey(event) {
    const from = event.target.closest("button[data-date]")?.dataset.date;
    const to = from && keyTarget(from, event.key);
    if (!to) return;
    event.preventDefault();
    await this.show(to, { focus: true });
  }

  button(date) {
    return this.table.querySelector(`button[data-date="${date}"]`);
  }

  /** What a screen reader says for a day: its date, then what it holds. */
  label(date, day) {
    const parts = [formatDate(date)];
    if (date === this.today) parts.push(t("journal.cal.today"));
    if (day && day.entry_id) parts.push(t("journal.hasEntry"));
    else if (day && day.draft_id) parts.push(t("journal.hasDraft"));
    if (day && day.user_messages) parts.push(t("journal.yourMessages", { count: day.user_messages }));
    if (day && day.photos) parts.push(t("journal.photoCount", { count: day.photos }));
    return parts.join(", ");
  }

  render() {
    this.title.textContent = formatMonth(`${this.month}-01`);
    const weeks = monthWeeks(this.month);
    const stop = monthOf(this.focused || "") === this.month ? this.focused : `${this.month}-01`;
    const head = h("thead", {}, h("tr", {}, weekdayNames().map(({ short, long }) => h("th", {
      scope: "col", abbr: long, text: short,
    }))));
    const body = h("tbody", {}, weeks.map((week) => h("tr", {}, week.map((date) => {
      if (!date) return h("td", { class: "journal-cal-blank" });
      const day = this.days.get(date);
      const classes = ["journal-cal-day",
        day && day.entry_id ? "has-entry" : "",
        day && !day.entry_id && day.draft_id ? "has-draft" : "",
        day && day.messages ? "has-chat" : "",
        date === this.today ? "today" : ""].filter(Boolean).join(" ");
      return h("td", { "aria-selected": date === this.selected ? "true" : "false" },
        h("button", {
          type: "button", class: classes, dataset: { date },
          tabindex: date === stop ? "0" : "-1",
          "aria-label": this.label(date, day),
          "aria-current": date === this.today ? "date" : false,
        }, h("span", { "aria-hidden": "true", text: String(Number(date.slice(8))) }),
        day && day.photo ? h("img", { class: "journal-cal-photo", src: day.photo, alt: "", loading: "lazy" }) : null));
    }))));
    this.table.replaceChildren(head, body);
  }
}
