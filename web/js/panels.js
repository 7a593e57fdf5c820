// The side panels: the character's state, the notes agent's lists, reminders (view, add),
// and the session reset with its confirmation.

import { api } from "./api.js";
import { $, h, setStatus } from "./dom.js";
import { errorText, formatDateTime, formatNumber, labelText, t } from "./i18n.js";

/** `due_at` for the server: ISO 8601 with this browser's UTC offset (SPEC §9). */
export function isoWithOffset(date) {
  const pad = (n) => String(Math.trunc(Math.abs(n))).padStart(2, "0");
  const offset = -date.getTimezoneOffset();
  const sign = offset >= 0 ? "+" : "-";
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}`
    + `T${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}`
    + `${sign}${pad(offset / 60)}:${pad(offset % 60)}`;
}

function textOf(value) {
  return typeof value === "string" ? value : "";
}

export class Panels {
  constructor({ characterId, getName, onReset, onError }) {
    this.characterId = characterId;
    this.getName = getName;
    this.onReset = onReset;
    this.onError = onError;
    this.side = $("#side");
    this.toggle = $("#panel-toggle");
    this.bind();
  }

  bind() {
    this.toggle.addEventListener("click", () => this.setOpen(!this.side.classList.contains("open")));
    $("#panel-close").addEventListener("click", () => this.setOpen(false));
    this.side.addEventListener("keydown", (event) => {
      if (event.key === "Escape" && this.side.classList.contains("open")) this.setOpen(false);
    });
    this.suggestDueTime();
    $("#reminder-form").addEventListener("submit", (event) => {
      event.preventDefault();
      this.addReminder();
    });
    const resetDialog = $("#reset-dialog");
    $("#reset-open").addEventListener("click", () => {
      $("#reset-text").textContent = t("session.confirmText", { name: this.getName() });
      resetDialog.showModal();
    });
    resetDialog.addEventListener("close", () => {
      if (resetDialog.returnValue === "confirm") this.resetSession();
      resetDialog.returnValue = "";
    });
  }

  setOpen(open) {
    this.side.classList.toggle("open", open);
    this.toggle.setAttribute("aria-expanded", String(open));
    if (open) $("#panel-close").focus();
    else this.toggle.focus();
  }

  refreshAll() {
    return Promise.allSettled([this.refreshState(), this.refreshLists(), this.refreshReminders()]);
  }

  // --- state --------------------------------------------------------------------------

  async refreshState() {
    try {
      this.showState(await api.state(this.characterId));
    } catch (error) {
      if (error.status !== 404) console.warn("state", error);
    }
  }

  /** Fill the state panel; fields absent from `state` keep what they show. */
  showState(state) {
    if (!state) return;
    const none = t("state.none");
    // The seeds' German vocabulary ("mitgefuehl", "alltag") shown in the UI's language.
    const label = (value) => (value ? labelText(value) : none);
    if ("emotion" in state) $("#state-emotion").textContent = label(state.emotion);
    if ("mode" in state) $("#state-mode").textContent = label(state.mode);
    if ("tone" in state) $("#state-tone").textContent = label(state.tone);
    if ("arousal" in state) {
      const value = Number.parseFloat(state.arousal);
      const known = Number.isFinite(value);
      $("#state-arousal").value = known ? value : 0;
      $("#state-arousal-text").textContent = known
        ? formatNumber(value, { minimumFractionDigits: 2, maximumFractionDigits: 2 }) : none;
    }
  }

  // --- lists --------------------------------------------------------------------------

  async refreshLists() {
    const root = $("#lists");
    let data;
    try {
      data = await api.lists(this.characterId);
    } catch (error) {
      root.replaceChildren(h("p", { class: "muted", text: error.status === 404 ? t("lists.unavailable") : t("error.generic", { reason: errorText(error) }) }));
      return;
    }
    // `GET …/lists`: [{name, items: [str], created_at, updated_at}] (app/api/lists.py).
    const lists = Array.isArray(data) ? data : [];
    if (!lists.length) {
      root.replaceChildren(h("p", { class: "muted", text: t("lists.empty") }));
      return;
    }
    root.replaceChildren(...lists.map((list) => h("section", { class: "list" },
      h("h3", { text: textOf(list.name) }),
      h("ul", {}, (Array.isArray(list.items) ? list.items : []).map((item) => h("li", {}, textOf(item)))))));
  }

  // --- reminders ----------------------------------------------------------------------

  async refreshReminders() {
    const root = $("#reminders");
    let data;
    try {
      data = await api.reminders(this.characterId);
    } catch (error) {
      const text = error.status === 404 ? t("reminders.unavailable") : t("error.generic", { reason: errorText(error) });
      root.replaceChildren(h("li", { class: "muted", text }));
      $("#reminder-form").hidden = error.status === 404;
      return;
    }
    $("#reminder-form").hidden = false;
    // `GET …/reminders`: [{id, text, due_at (epoch s), status: pending|claimed|fired, …}]
    // (app/api/reminders.py).
    const reminders = Array.isArray(data) ? data : [];
    if (!reminders.length) {
      root.replaceChildren(h("li", { class: "muted", text: t("reminders.empty") }));
      return;
    }
    root.replaceChildren(...reminders.map((reminder) => {
      const due = typeof reminder.due_at === "number" ? reminder.due_at : null;
      const done = reminder.status === "fired";
      return h("li", { class: done ? "done" : "", dataset: { id: textOf(reminder.id) } },
        textOf(reminder.text),
        due ? h("time", { datetime: new Date(due * 1000).toISOString(), text: formatDateTime(due) + (done ? ` · ${t("reminders.done")}` : "") }) : null);
    }));
  }

  /** An empty "when" field suggests the next full hour, in local time. */
  suggestDueTime() {
    const field = $("#reminder-due");
    if (field.value) return;
    const next = new Date();
    next.setHours(next.getHours() + 1, 0, 0, 0);
    field.value = isoWithOffset(next).slice(0, 19);
  }

  async addReminder() {
    const status = $("#reminder-status");
    const text = $("#reminder-text").value;
    const due = $("#reminder-due").value; // local time "YYYY-MM-DDTHH:MM"
    const date = new Date(due);
    // The text is the server's to judge (one place of validation); a date must exist and
    // must not lie in the past (the server refuses more than a minute back, too).
    if (Number.isNaN(date.getTime())) return;
    if (date.getTime() < Date.now() - 60_000) {
      setStatus(status, t("reminders.past"), "error");
      return;
    }
    try {
      await api.addReminder(this.characterId, text, isoWithOffset(date));
    } catch (error) {
      setStatus(status, t("error.generic", { reason: errorText(error) }), "error");
      return;
    }
    $("#reminder-text").value = "";
    $("#reminder-due").value = "";
    this.suggestDueTime();
    setStatus(status, t("reminders.added"), "ok");
    clearTimeout(this.reminderStatusTimer);  // a status line that stays would go stale
    this.reminderStatusTimer = setTimeout(() => setStatus(status, ""), 4000);
    await this.refreshReminders();
  }

  // --- session reset ------------------------------------------------------------------

  async resetSession() {
    try {
      await api.resetSession(this.characterId);
    } catch (error) {
      this.onError(t("error.generic", { reason: errorText(error) }));
      return;
    }
    this.onReset();
    await this.refreshAll();
  }
}
