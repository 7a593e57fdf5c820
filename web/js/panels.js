// The side panels: the character's state, the notes agent's lists (cross off, edit, rename,
// delete), reminders (add, edit, mark done, delete; snooze or mark done one that has come),
// and the session reset with its confirmation. Crossing off, deleting and marking done wait
// `UNDO_MS` with an undo button instead of asking first; only then (or when the page is
// closed meanwhile) the change goes to the server.

import { api } from "./api.js";
import { $, h, setStatus } from "./dom.js";
import { errorText, formatDateTime, formatNumber, labelText, t } from "./i18n.js";

/** `due_at` for the server: ISO 8601 with this browser's UTC offset (design §9). */
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

export const UNDO_MS = 6000;
const MINUTE = 60_000;

/** The moment a snooze button names: in 10 minutes, in an hour, tomorrow at nine. */
export function snoozeTime(kind, now = new Date()) {
  if (kind === "10") return new Date(now.getTime() + 10 * MINUTE);
  if (kind === "60") return new Date(now.getTime() + 60 * MINUTE);
  const tomorrow = new Date(now);
  tomorrow.setDate(tomorrow.getDate() + 1);
  tomorrow.setHours(9, 0, 0, 0);
  return tomorrow;
}

/** A value for a `datetime-local` field: local wall time, to the minute. */
function localField(epochSeconds) {
  return isoWithOffset(new Date(epochSeconds * 1000)).slice(0, 16);
}

const fold = (text) => text.trim().replace(/\s+/g, " ").toLocaleLowerCase();

/** Changes that wait for their undo time to run out (one per thing changed). */
class PendingChanges {
  constructor(onChange) {
    this.waiting = new Map(); // key → {timer, send, note}
    this.onChange = onChange;
  }

  has(key) {
    return this.waiting.has(key);
  }

  /** Run `send` after UNDO_MS unless undone; `note` is the undo line (an <li>) to remove. */
  add(key, note, send) {
    this.cancel(key);
    const entry = { note, send };
    entry.timer = setTimeout(() => this.flush(key), UNDO_MS);
    this.waiting.set(key, entry);
  }

  cancel(key) {
    const entry = this.waiting.get(key);
    if (!entry) return false;
    clearTimeout(entry.timer);
    entry.note.remove();
    this.waiting.delete(key);
    return true;
  }

  async flush(key, options = {}) {
    const entry = this.waiting.get(key);
    if (!entry) return;
    clearTimeout(entry.timer);
    this.waiting.delete(key);
    entry.note.remove();
    try {
      await entry.send(options);
    } finally {
      if (!options.keepalive) this.onChange();
    }
  }

  /** The page goes away: what waits is sent now (keepalive requests outlive the page). */
  flushAll() {
    for (const key of [...this.waiting.keys()]) this.flush(key, { keepalive: true });
  }
}

export class Panels {
  constructor({ characterId, getName, onReset, onError }) {
    this.characterId = characterId;
    this.getName = getName;
    this.onReset = onReset;
    this.onError = onError;
    this.side = $("#side");
    this.toggle = $("#panel-toggle");
    this.editing = null; // what is being edited: a refresh leaves its section alone
    this.pending = new PendingChanges(() => this.refreshAll());
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
    window.addEventListener("pagehide", () => this.pending.flushAll());
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
    if (this.editing && this.editing.startsWith("list")) return; // an edit is open there
    // `GET …/lists`: [{name, items: [str], created_at, updated_at}] (app/api/lists.py).
    const lists = (Array.isArray(data) ? data : []).filter((list) => !this.pending.has(`list:${fold(textOf(list.name))}`));
    if (!lists.length) {
      root.replaceChildren(h("p", { class: "muted", text: t("lists.empty") }));
      return;
    }
    root.replaceChildren(...lists.map((list) => this.listSection(list)));
  }

  listSection(list) {
    const name = textOf(list.name);
    const items = (Array.isArray(list.items) ? list.items : []).map(textOf)
      .filter((item) => !this.pending.has(`item:${fold(name)}\n${fold(item)}`));
    const section = h("section", { class: "list", dataset: { name } },
      h("div", { class: "list-head" },
        h("h3", { text: name }),
        h("div", { class: "row-actions" },
          this.button(t("lists.rename"), t("lists.renameLabel", { name }), () => this.renameList(section, name)),
          this.button(t("lists.delete"), t("lists.deleteLabel", { name }), () => this.deleteList(name), "button-danger"))),
      h("ul", {}, items.map((item) => h("li", { class: "list-item", dataset: { item } },
        h("span", { class: "item-text", text: item }),
        h("div", { class: "row-actions" },
          this.button(t("lists.edit"), t("lists.editLabel", { item }), (event) => this.editItem(event.target.closest("li"), name, item)),
          this.button(t("lists.remove"), t("lists.removeLabel", { item }), () => this.removeItem(name, item)))))));
    return section;
  }

  button(text, label, onclick, kind = "") {
    return h("button", { type: "button", class: `button button-small ${kind}`.trim(), "aria-label": label, text, onclick });
  }

  /** Replace `row`'s content by a one-line form; `save(value)` sends it. */
  inlineEdit(row, key, { value, label, extra = [], save }) {
    this.closeEdit();
    this.openEdit = { row, before: [...row.childNodes] };
    this.editing = key;
    const field = h("input", { class: "inline-edit", "aria-label": label, maxlength: "2000" });
    field.value = value;
    const done = () => {
      this.closeEdit();
      this.refreshAll();
    };
    const form = h("form", { class: "inline-form" }, field, ...extra,
      h("div", { class: "row-actions" },
        h("button", { type: "submit", class: "button button-small button-primary", text: t("panel.save") }),
        h("button", { type: "button", class: "button button-small", onclick: done, text: t("panel.cancel") })));
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      if (await save(field.value, form)) done();
    });
    form.addEventListener("keydown", (event) => {
      if (event.key === "Escape") done();
    });
    row.replaceChildren(form);
    field.focus();
    return form;
  }

  /** Put the open inline form's row back as it was (at once: a refresh that started
   * before may still be waiting, and another edit may open meanwhile). */
  closeEdit() {
    const open = this.openEdit;
    this.openEdit = null;
    this.editing = null;
    if (open && open.row.isConnected) open.row.replaceChildren(...open.before);
  }

  editItem(row, name, item) {
    if (!row) return;
    this.inlineEdit(row, `list-item:${name}\n${item}`, {
      value: item, label: t("lists.editField"),
      save: (text) => this.attempt($("#lists-status"), () => api.editItem(this.characterId, name, item, text), t("lists.saved")),
    });
  }

  renameList(section, name) {
    const head = section.querySelector(".list-head");
    this.inlineEdit(head, `list:${name}`, {
      value: name, label: t("lists.renameField"),
      save: (newName) => this.attempt($("#lists-status"), () => api.renameList(this.characterId, name, newName), t("lists.saved")),
    });
  }

  /** Run a change now; its error (or `ok`) in `status`. True when it went through. */
  async attempt(status, change, ok) {
    try {
      await change();
    } catch (error) {
      setStatus(status, t("error.generic", { reason: errorText(error) }), "error");
      return false;
    }
    setStatus(status, ok, "ok");
    clearTimeout(this.statusTimer);
    this.statusTimer = setTimeout(() => setStatus(status, ""), 4000);
    return true;
  }

  /** A change that waits `UNDO_MS` with an undo line in `notes` before `send` runs. */
  later(notes, key, what, send, render) {
    const note = h("li", { class: "undo-note" }, h("span", { text: what }));
    note.append(h("button", { type: "button", class: "button button-small", text: t("panel.undo"),
      "aria-label": t("panel.undoLabel", { what }),
      onclick: () => {
        this.pending.cancel(key);
        render();
      } }));
    $(notes).append(note);
    this.pending.add(key, note, async (options) => {
      try {
        await send(options);
      } catch (error) {
        if (error.status !== 404) this.onError(t("error.generic", { reason: errorText(error) }));
      }
    });
    render();
  }

  removeItem(name, item) {
    this.later("#lists-undo", `item:${fold(name)}\n${fold(item)}`, t("lists.removed", { item }),
      (options) => api.removeItem(this.characterId, name, item, options), () => this.refreshLists());
  }

  deleteList(name) {
    this.later("#lists-undo", `list:${fold(name)}`, t("lists.deleted", { name }),
      (options) => api.deleteList(this.characterId, name, options), () => this.refreshLists());
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
    if (this.editing && this.editing.startsWith("reminder")) return;
    // `GET …/reminders`: [{id, text, due_at (epoch s), status: pending|claimed|fired|done,
    // …}] (app/api/reminders.py).
    const reminders = (Array.isArray(data) ? data : [])
      .filter((reminder) => !this.pending.has(`reminder:${reminder.id}`))
      .map((reminder) => (this.pending.has(`done:${reminder.id}`) ? { ...reminder, status: "done" } : reminder));
    if (!reminders.length) {
      root.replaceChildren(h("li", { class: "muted", text: t("reminders.empty") }));
      return;
    }
    root.replaceChildren(...reminders.map((reminder) => this.reminderRow(reminder)));
  }

  reminderRow(reminder) {
    const text = textOf(reminder.text);
    const id = textOf(reminder.id);
    const due = typeof reminder.due_at === "number" ? reminder.due_at : null;
    const status = reminder.status;
    const came = status === "fired";
    const done = status === "done";
    const when = due ? formatDateTime(due) + (done ? ` · ${t("reminders.done")}` : came ? ` · ${t("reminders.came")}` : "") : "";
    const actions = [];
    if (!done && status !== "claimed") {
      if (!came) actions.push(this.button(t("reminders.edit"), t("reminders.editLabel", { text }), (event) => this.editReminder(event.target.closest("li"), reminder)));
      actions.push(this.button(t("reminders.markDone"), t("reminders.markDoneLabel", { text }), () => this.markDone(reminder), "button-primary"));
    }
    actions.push(this.button(t("reminders.delete"), t("reminders.deleteLabel", { text }), () => this.deleteReminder(reminder), "button-danger"));
    const snooze = came ? h("div", { class: "snooze" }, h("span", { class: "muted", text: t("reminders.later") }),
      ...["10", "60", "tomorrow"].map((kind) => {
        const label = t(kind === "tomorrow" ? "reminders.snoozeTomorrow" : `reminders.snooze${kind}`);
        return this.button(label, t("reminders.snoozeLabel", { when: label, text }), () => this.snooze(reminder, kind));
      })) : null;
    return h("li", { class: [done ? "done" : "", came ? "came" : ""].join(" ").trim(), dataset: { id } },
      h("span", { class: "item-text", text }),
      due ? h("time", { datetime: new Date(due * 1000).toISOString(), text: when }) : null,
      snooze,
      h("div", { class: "row-actions" }, actions));
  }

  editReminder(row, reminder) {
    if (!row) return;
    const due = h("input", { type: "datetime-local", class: "inline-edit", "aria-label": t("reminders.editDue") });
    due.value = localField(reminder.due_at);
    this.inlineEdit(row, `reminder:${reminder.id}`, {
      value: textOf(reminder.text), label: t("reminders.editText"), extra: [due],
      save: (text) => {
        const change = { text };
        if (due.value !== localField(reminder.due_at)) {
          const date = new Date(due.value);
          if (Number.isNaN(date.getTime())) return false;
          change.due_at = isoWithOffset(date);
        }
        return this.attempt($("#reminder-status"), () => api.editReminder(this.characterId, reminder.id, change), t("reminders.saved"));
      },
    });
  }

  markDone(reminder) {
    const text = textOf(reminder.text);
    this.later("#reminders-undo", `done:${reminder.id}`, t("reminders.markedDone", { text }),
      (options) => api.editReminder(this.characterId, reminder.id, { done: true }, options), () => this.refreshReminders());
  }

  deleteReminder(reminder) {
    const text = textOf(reminder.text);
    this.later("#reminders-undo", `reminder:${reminder.id}`, t("reminders.deleted", { text }),
      (options) => api.deleteReminder(this.characterId, reminder.id, options), () => this.refreshReminders());
  }

  async snooze(reminder, kind) {
    const when = snoozeTime(kind);
    const text = textOf(reminder.text);
    const ok = await this.attempt($("#reminder-status"),
      () => api.editReminder(this.characterId, reminder.id, { due_at: isoWithOffset(when) }),
      t("reminders.snoozed", { text, when: formatDateTime(when.getTime() / 1000) }));
    if (ok) await this.refreshReminders();
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
