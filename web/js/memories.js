// The panel "What {name} remembers" (German: the character's "Gedächtnis" — "Erinnerungen"
// are the reminders): the character's long-term memories of this user — search, edit, forget
// one, forget everything (with a confirmation). A session reset does not touch them.

import { api } from "./api.js";
import { $, h, setStatus } from "./dom.js";
import { countText, errorText, formatDateTime, t } from "./i18n.js";

const SEARCH_DELAY_MS = 250;
// A memory is written by the background worker a moment after the answer that prompted it.
const AFTER_ANSWER_MS = [1500, 5000];

export class MemoryPanel {
  constructor({ characterId, getName }) {
    this.characterId = characterId;
    this.getName = getName;
    this.list = $("#memories");
    this.query = $("#memory-query");
    this.status = $("#memory-status");
    this.editing = null; // memory_id being edited: a refresh leaves that row alone
    this.timers = [];
    for (const format of ["md", "json"]) {
      const params = new URLSearchParams({ character: characterId, format });
      $(`#memory-export-${format}`).href = `/api/exports/memories?${params}`;
    }
    this.bind();
  }

  bind() {
    let timer = null;
    this.query.addEventListener("input", () => {
      clearTimeout(timer);
      timer = setTimeout(() => this.refresh(), SEARCH_DELAY_MS);
    });
    $("#memory-search").addEventListener("submit", (event) => {
      event.preventDefault();
      this.refresh();
    });
    const dialog = $("#forget-all-dialog");
    $("#forget-all-open").addEventListener("click", () => {
      $("#forget-all-text").textContent = t("memories.forgetAllText", { name: this.getName() });
      dialog.showModal();
    });
    dialog.addEventListener("close", () => {
      if (dialog.returnValue === "confirm") this.forgetAll();
      dialog.returnValue = "";
    });
  }

  /** Look again a little after an answer: its memory may be on its way. */
  refreshSoon() {
    for (const timer of this.timers) clearTimeout(timer);
    this.timers = AFTER_ANSWER_MS.map((ms) => setTimeout(() => this.refresh(), ms));
  }

  async refresh() {
    if (this.editing) return;
    const query = this.query.value.trim();
    let memories;
    try {
      memories = await api.memories(this.characterId, query);
    } catch (error) {
      this.list.replaceChildren(h("li", { class: "muted", text: t("error.generic", { reason: errorText(error) }) }));
      return;
    }
    if (this.editing) return; // an edit began while the list was on its way
    if (!memories.length) {
      const empty = query ? t("memories.noMatch") : t("memories.empty", { name: this.getName() });
      this.list.replaceChildren(h("li", { class: "muted", text: empty }));
      return;
    }
    this.list.replaceChildren(...memories.map((memory) => this.row(memory)));
  }

  row(memory) {
    const date = new Date(memory.created_at * 1000);
    return h("li", { class: "memory", dataset: { id: memory.memory_id } },
      h("p", { class: "memory-text", text: memory.text }),
      h("p", { class: "memory-meta" },
        h("time", { datetime: date.toISOString(), text: formatDateTime(memory.created_at) }),
        ` · ${t(`memories.kind.${memory.kind}`)}`),
      h("div", { class: "memory-actions" },
        h("button", { type: "button", class: "button button-small", onclick: () => this.edit(memory),
          "aria-label": t("memories.editLabel", { text: memory.text }), text: t("memories.edit") }),
        h("button", { type: "button", class: "button button-small button-danger", onclick: () => this.forget(memory),
          "aria-label": t("memories.forgetLabel", { text: memory.text }), text: t("memories.forget") })));
  }

  edit(memory) {
    const row = this.list.querySelector(`li[data-id="${memory.memory_id}"]`);
    if (!row) return;
    this.editing = memory.memory_id;
    const field = h("textarea", { class: "memory-edit", rows: "3", "aria-label": t("memories.editField") });
    field.value = memory.text;
    const done = () => {
      this.editing = null;
      this.refresh();
    };
    const form = h("form", { class: "memory-form" }, field,
      h("div", { class: "memory-actions" },
        h("button", { type: "submit", class: "button button-small button-primary", text: t("memories.save") }),
        h("button", { type: "button", class: "button button-small", onclick: done, text: t("memories.cancel") })));
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      try {
        await api.editMemory(this.characterId, memory.memory_id, field.value);
      } catch (error) {
        setStatus(this.status, t("error.generic", { reason: errorText(error) }), "error");
        return;
      }
      setStatus(this.status, t("memories.saved"), "ok");
      done();
    });
    field.addEventListener("keydown", (event) => {
      if (event.key === "Escape") done();
    });
    row.replaceChildren(form);
    field.focus();
  }

  async forget(memory) {
    try {
      await api.forgetMemory(this.characterId, memory.memory_id);
    } catch (error) {
      setStatus(this.status, t("error.generic", { reason: errorText(error) }), "error");
      return;
    }
    setStatus(this.status, t("memories.forgotten"), "ok");
    await this.refresh();
  }

  async forgetAll() {
    try {
      const result = await api.forgetAllMemories(this.characterId);
      setStatus(this.status, t("memories.allForgotten", { what: countText("memories", result.forgotten) }), "ok");
    } catch (error) {
      setStatus(this.status, t("error.generic", { reason: errorText(error) }), "error");
      return;
    }
    await this.refresh();
  }
}
