// The Journal view (SPEC §8, issue 13): days, a day's conversations, "write an entry" with
// progress for both stages, the draft beside the lines it was built from, the entry with its
// version history, and the trash. Progress arrives over the WebSocket (`journal_progress`);
// the view also asks for the job itself, so a missed message never leaves it waiting.

import { api } from "./api.js";
import { $, h, setStatus } from "./dom.js";
import { errorText, formatDateTime, formatTime, reasonText, t } from "./i18n.js";

const JOB_POLL_MS = 1500;
const FINAL = new Set(["done", "failed"]);

export class JournalView {
  /** `nameOf(characterId)`: what a day's conversation partner is called. */
  constructor({ root, nameOf, onError }) {
    this.root = root;
    this.nameOf = nameOf;
    this.onError = onError;
    this.date = null;
    this.day = null;
    this.job = null;
    this.pollTimer = 0;
    this.lastDeleted = null;
    $("#journal-write", root).addEventListener("click", () => this.write());
    $("#journal-trash-open", root).addEventListener("click", () => this.showTrash());
    $("#journal-entry-form", root).addEventListener("submit", (event) => {
      event.preventDefault();
      this.save();
    });
    $("#journal-entry-delete", root).addEventListener("click", () => this.remove());
    $("#journal-undo-button", root).addEventListener("click", () => this.undo());
    $("#journal-draft-accept", root).addEventListener("click", () => this.accept());
  }

  async show() {
    await this.refreshDays();
    if (this.date) await this.openDay(this.date);
  }

  fail(error) {
    this.onError(t("journal.error", { reason: errorText(error) }));
  }

  // --- days -----------------------------------------------------------------------------

  async refreshDays() {
    let days;
    try {
      days = await api.journalDays();
    } catch (error) {
      this.fail(error);
      return;
    }
    const list = $("#journal-days", this.root);
    list.replaceChildren(...days.map((day) => h("li", {},
      h("button", {
        type: "button", class: "journal-day-button", dataset: { date: day.date },
        "aria-current": day.date === this.date ? "date" : false,
        onclick: () => this.openDay(day.date),
      },
      h("span", { class: "journal-day-date", text: day.date }),
      h("span", { class: "journal-day-meta muted small",
        text: t("journal.yourMessages", { count: day.user_messages }) }),
      day.entry_id ? h("span", { class: "journal-badge", text: t("journal.hasEntry") }) : null,
      !day.entry_id && day.draft_id ? h("span", { class: "journal-badge draft", text: t("journal.hasDraft") }) : null))));
    $("#journal-days-empty", this.root).hidden = days.length > 0;
    if (!this.date && days.length) await this.openDay(days[0].date);
  }

  async openDay(date) {
    this.date = date;
    $("#journal-trash", this.root).hidden = true;
    $("#journal-day", this.root).hidden = false;
    for (const button of this.root.querySelectorAll(".journal-day-button")) {
      if (button.dataset.date === date) button.setAttribute("aria-current", "date");
      else button.removeAttribute("aria-current");
    }
    try {
      this.day = await api.journalDay(date);
    } catch (error) {
      this.fail(error);
      return;
    }
    $("#journal-day-title", this.root).textContent = t("journal.dayTitle", { date });
    this.renderConversations();
    this.renderDraft(this.day.drafts.find((d) => d.status === "current") || null);
    this.renderEntry(this.day.entry);
  }

  renderConversations() {
    const box = $("#journal-conversations", this.root);
    box.replaceChildren(...this.day.conversations.map((conversation) => h("section", { class: "journal-conversation" },
      h("h4", { text: conversation.source === "chat"
        ? t("journal.chatWith", { name: this.nameOf(conversation.character_id) })
        : t("journal.imported") }),
      h("ol", { class: "journal-lines" }, conversation.messages.map((message) => h("li", {
        class: `journal-line ${message.role}`, dataset: { messageId: message.message_id },
      },
      h("span", { class: "journal-line-who muted small",
        text: (message.role === "user" ? t("msg.you")
          : conversation.character_id ? this.nameOf(conversation.character_id) : t("journal.assistant"))
          + (message.at ? ` · ${formatTime(message.at)}` : "") }),
      h("span", { class: "text", text: message.text })))))));
  }

  messageText(messageId) {
    for (const conversation of this.day.conversations) {
      const found = conversation.messages.find((m) => m.message_id === messageId);
      if (found) return found.text;
    }
    return "";
  }

  highlight(messageId, on) {
    const line = this.root.querySelector(`.journal-line[data-message-id="${CSS.escape(messageId)}"]`);
    if (!line) return;
    line.classList.toggle("highlight", on);
    if (on) line.scrollIntoView({ block: "nearest" });
  }

  // --- writing --------------------------------------------------------------------------

  async write() {
    if (!this.date) return;
    $("#journal-write", this.root).disabled = true;
    try {
      const started = await api.journalWrite(this.date);
      // The job's first progress can arrive over the socket before this answer does (it is
      // then already followed as this day's job): its state must not fall back to queued.
      if (!this.job || this.job.job_id !== started.job_id) {
        this.job = { job_id: started.job_id, date: this.date, state: "queued" };
      }
      this.showProgress(this.job);
      this.pollJob();
    } catch (error) {
      $("#journal-write", this.root).disabled = false;
      this.showProgress({ state: "failed", error });
    }
  }

  pollJob() {
    clearTimeout(this.pollTimer);
    this.pollTimer = setTimeout(async () => {
      if (!this.job || FINAL.has(this.job.state)) return;
      try {
        this.onProgress(await api.journalJob(this.job.job_id));
      } catch {
        // The socket or the next poll will tell.
      }
      this.pollJob();
    }, JOB_POLL_MS);
  }

  /** A `journal_progress` message or a polled job. A job started in another tab is
   * followed too, once it concerns the open day. */
  onProgress(message) {
    const other = !this.job || message.job_id !== this.job.job_id;
    if (other && message.date === this.date && (!this.job || FINAL.has(this.job.state))) {
      this.job = { job_id: message.job_id, date: message.date, state: "queued" };
      $("#journal-write", this.root).disabled = true;
    }
    if (!this.job || message.job_id !== this.job.job_id || FINAL.has(this.job.state)) return;
    this.job = { ...this.job, ...message };
    this.showProgress(this.job);
    if (FINAL.has(message.state)) {
      clearTimeout(this.pollTimer);
      $("#journal-write", this.root).disabled = false;
      this.refreshDays();
      if (message.state === "done" && this.job.date === this.date) this.openDay(this.date);
    }
  }

  showProgress(job) {
    const node = $("#journal-progress", this.root);
    node.hidden = false;
    node.dataset.state = job.state;
    const steps = ["reconstruct", "narrate", "done"];
    const reached = steps.indexOf(job.state);
    const list = steps.map((step, index) => h("li", {
      class: index < reached || job.state === "done" ? "done" : index === reached ? "current" : "",
      text: t(`journal.stage.${step}`),
    }));
    node.replaceChildren(h("ol", { class: "journal-steps" }, list));
    if (job.state === "failed") {
      node.append(h("p", { class: "journal-error", role: "alert",
        text: t("journal.failed", { reason: errorText(job.error) }) }));
    }
  }

  renderDraft(draft) {
    this.draft = draft;
    const box = $("#journal-draft", this.root);
    box.hidden = !draft;
    if (!draft) return;
    $("#journal-draft-text", this.root).textContent = draft.text;
    const notes = [];
    if (draft.reconstruction_status === "fallback") {
      notes.push(t("journal.fallbackReconstruct", { why: draft.validation.filter((c) => c !== "reconstruction_invalid").join(", ") || "—" }));
    }
    if (draft.narration === "local") {
      const stage = (draft.trace.stages || []).find((s) => s.stage === "narrate");
      notes.push(t("journal.fallbackNarrate", { why: reasonText(stage && stage.codes[0]) }));
    }
    const note = $("#journal-fallback", this.root);
    note.hidden = notes.length === 0;
    note.textContent = notes.join(" ");
    $("#journal-draft-sources", this.root).replaceChildren(...draft.sources.map((source) => {
      const text = this.messageText(source.message_id);
      return h("li", {},
        h("button", {
          type: "button", class: "journal-source", title: text, dataset: { messageId: source.message_id },
          "aria-label": t("journal.sourceLabel", { id: source.source_id, text }),
          onmouseenter: () => this.highlight(source.message_id, true),
          onmouseleave: () => this.highlight(source.message_id, false),
          onfocus: () => this.highlight(source.message_id, true),
          onblur: () => this.highlight(source.message_id, false),
        }, source.source_id));
    }));
    $("#journal-draft-accept", this.root).hidden = Boolean(this.day && this.day.entry);
  }

  // --- the entry ------------------------------------------------------------------------

  renderEntry(entry) {
    this.entry = entry;
    $("#journal-entry", this.root).hidden = false;
    $("#journal-entry-text", this.root).value = entry ? entry.text : "";
    $("#journal-entry-delete", this.root).hidden = !entry;
    $("#journal-entry-heading", this.root).textContent = entry ? t("journal.entry") : t("journal.newEntry");
    const versions = entry ? [...entry.versions].reverse() : [];
    $("#journal-versions-box", this.root).hidden = versions.length === 0;
    $("#journal-versions", this.root).replaceChildren(...versions.map((version) => h("li", {
      class: version.version_id === entry.current_version_id ? "current" : "",
      dataset: { versionId: version.version_id },
    },
    h("span", { class: "muted small", text: `${formatDateTime(version.created_at)} · ${t(`journal.origin.${version.origin}`)}` }),
    h("p", { class: "text journal-version-text", text: version.text }),
    version.version_id === entry.current_version_id
      ? h("span", { class: "journal-badge", text: t("journal.current") })
      : h("button", { type: "button", class: "button button-small journal-restore", onclick: () => this.restore(version.version_id) },
        t("journal.restore")))));
  }

  async accept() {
    if (!this.draft) return;
    await this.guard(async () => {
      this.entry = await api.journalCreate(this.date, this.draft.text, this.draft.draft_id);
      await this.openDay(this.date);
      await this.refreshDays();
      setStatus($("#journal-entry-status", this.root), t("journal.saved"), "ok");
    });
  }

  async save() {
    const text = $("#journal-entry-text", this.root).value;
    await this.guard(async () => {
      if (this.entry) await api.journalEdit(this.entry.entry_id, text);
      else await api.journalCreate(this.date, text, null);
      await this.openDay(this.date);
      await this.refreshDays();
      setStatus($("#journal-entry-status", this.root), t("journal.saved"), "ok");
    });
  }

  async restore(versionId) {
    await this.guard(async () => {
      this.renderEntry(await api.journalRestore(this.entry.entry_id, versionId));
      setStatus($("#journal-entry-status", this.root), t("journal.restored"), "ok");
    });
  }

  async remove() {
    if (!this.entry) return;
    const entryId = this.entry.entry_id;
    await this.guard(async () => {
      await api.journalDelete(entryId);
      this.lastDeleted = entryId;
      $("#journal-undo", this.root).hidden = false;
      await this.openDay(this.date);
      await this.refreshDays();
    });
  }

  async undo() {
    if (!this.lastDeleted) return;
    await this.guard(async () => {
      await api.journalUndelete(this.lastDeleted);
      this.lastDeleted = null;
      $("#journal-undo", this.root).hidden = true;
      await this.show();
      if (!$("#journal-trash", this.root).hidden) await this.showTrash();
    });
  }

  async guard(action) {
    const status = $("#journal-entry-status", this.root);
    setStatus(status, "");
    try {
      await action();
    } catch (error) {
      setStatus(status, t("journal.error", { reason: errorText(error) }), "error");
    }
  }

  // --- trash ----------------------------------------------------------------------------

  async showTrash() {
    let entries;
    try {
      entries = await api.journalTrash();
    } catch (error) {
      this.fail(error);
      return;
    }
    $("#journal-day", this.root).hidden = true;
    const box = $("#journal-trash", this.root);
    box.hidden = false;
    $("#journal-trash-list", this.root).replaceChildren(...entries.map((entry) => h("li", {},
      h("strong", { text: entry.date }), " ",
      h("span", { class: "text", text: entry.text }), " ",
      h("button", { type: "button", class: "button button-small", onclick: async () => {
        this.lastDeleted = entry.entry_id;
        await this.undo();
      } }, t("journal.undelete")),
      h("button", { type: "button", class: "button button-small button-danger", onclick: async () => {
        await api.journalPurge(entry.entry_id).catch((error) => this.fail(error));
        await this.showTrash();
      } }, t("journal.purge")))));
    $("#journal-trash-empty", this.root).hidden = entries.length > 0;
  }
}
