// The Journal view (design §8, issues 13 and 22): a month calendar and the month's days, any
// day opened — its conversations, "write an entry" with progress for both stages (optionally
// starting from the stored text), the draft beside the lines it was built from (each
// sentence shows its lines; the model's sentences left out are listed with why:
// journal-provenance.js), the entry (journal-entry.js) written by hand or taken over from a
// draft, as the first entry or as its next version — the export of the whole journal, the import of a diary the user already
// has (Day One, Markdown) told back as what it added, and the trash, whose one irreversible
// action asks first. Progress arrives over the WebSocket (`journal_progress`); the view also
// asks for the job itself, so a missed message never leaves it waiting.

import { api } from "./api.js";
import { $, h, setStatus } from "./dom.js";
import { countText, errorText, formatDate, formatMonth, formatTime, lang, reasonText, t } from "./i18n.js";
import { Calendar, isoDate } from "./journal-calendar.js";
import { EntryView } from "./journal-entry.js";
import { dayLines, draftView, leftOutView, renderSentences } from "./journal-provenance.js";

const JOB_POLL_MS = 1500;
const FINAL = new Set(["done", "failed"]);
const STEPS = ["reconstruct", "narrate", "done"];
// A job's states in the order it goes through them (app/journal/jobs.py); failed ends any.
const ORDER = ["queued", ...STEPS, "failed"];

/** Today in the browser's zone (until the server says what today is in the user's). */
function localToday() {
  const now = new Date();
  return isoDate(new Date(Date.UTC(now.getFullYear(), now.getMonth(), now.getDate())));
}

export class JournalView {
  /** `nameOf(characterId)`: what a day's conversation partner is called; `name`: the
   * page's character's (for the texts about no day in particular). */
  constructor({ root, nameOf, name, onError }) {
    this.root = root;
    this.nameOf = nameOf;
    this.name = name;
    this.onError = onError;
    this.date = null;
    this.day = null;
    this.draft = null;
    this.job = null;
    this.pollTimer = 0;
    this.opened = false;
    this.calendar = new Calendar({
      table: $("#journal-calendar", root),
      title: $("#journal-month-title", root),
      prev: $("#journal-month-prev", root),
      next: $("#journal-month-next", root),
      onMonth: (month) => this.loadMonth(month),
      onOpen: (date) => this.openDay(date),
    });
    this.entryView = new EntryView({ root, onChanged: () => this.changed() });
    $("#journal-write", root).addEventListener("click", () => this.write());
    $("#journal-draft-accept", root).addEventListener("click", () => this.accept());
    $("#journal-trash-open", root).addEventListener("click", () => this.showTrash());
    $("#journal-new", root).addEventListener("submit", (event) => {
      event.preventDefault();
      this.newEntry($("#journal-new-date", root).value);
    });
    for (const input of root.querySelectorAll("#journal-export input")) {
      input.addEventListener("change", () => this.exportLink());
    }
    this.exportLink();
    $("#journal-diary-form", root).addEventListener("submit", (event) => {
      event.preventDefault();
      this.importDiary();
    });
    this.purgeDialog = $("#journal-purge-dialog");
    this.purgeDialog.addEventListener("close", () => this.purgeClosed());
  }

  async show() {
    if (!this.opened) {
      this.opened = true;
      const today = localToday();
      $("#journal-new-date", this.root).value = today;
      await this.calendar.show(today);
      // Open where something is: the newest day of all (else today, to write by hand).
      const start = this.latest || this.calendar.today || today;
      await this.calendar.show(start);
      await this.openDay(start);
      return;
    }
    await this.calendar.refresh();
    if (this.date) await this.openDay(this.date);
  }

  fail(error) {
    this.onError(t("journal.error", { reason: errorText(error) }));
  }

  // --- the month --------------------------------------------------------------------------

  async loadMonth(month) {
    let answer;
    try {
      answer = await api.journalMonth(month);
    } catch (error) {
      this.fail(error);
      return null;
    }
    this.latest = answer.latest;
    this.renderDays(month, answer.days);
    return answer;
  }

  /** The month's days as a list (newest first), or what to do when it has none. */
  renderDays(month, days) {
    const name = formatMonth(`${month}-01`);
    $("#journal-days-title", this.root).textContent = t("journal.monthDays", { month: name });
    const newest = [...days].reverse();
    $("#journal-days", this.root).replaceChildren(...newest.map((day) => h("li", {},
      h("button", {
        type: "button", class: "journal-day-button", dataset: { date: day.date },
        "aria-current": day.date === this.date ? "date" : false,
        onclick: () => this.pick(day.date),
      },
      h("span", { class: "journal-day-date", text: formatDate(day.date) }),
      day.user_messages ? h("span", { class: "journal-day-meta muted small",
        text: t("journal.yourMessages", { count: day.user_messages }) }) : null,
      day.entry_id ? h("span", { class: "journal-badge", text: t("journal.hasEntry") }) : null,
      !day.entry_id && day.draft_id ? h("span", { class: "journal-badge draft", text: t("journal.hasDraft") }) : null))));
    $("#journal-days-title", this.root).hidden = days.length === 0;
    const empty = $("#journal-days-empty", this.root);
    empty.hidden = days.length > 0;
    empty.textContent = t("journal.monthEmpty", { month: name, name: this.name });
  }

  /** Something of the open day changed: the calendar and the day are read again. */
  async changed() {
    await this.calendar.refresh();
    if (this.date) await this.openDay(this.date, { keepEntryStatus: true });
  }

  // --- a day ------------------------------------------------------------------------------

  /** Open a day from outside the calendar (the month's list, "New entry"). */
  async pick(date) {
    await this.calendar.show(date);
    await this.openDay(date);
  }

  async newEntry(date) {
    if (!date) return;
    await this.pick(date);
    this.entryView.focus();
  }

  async openDay(date, { keepEntryStatus = false } = {}) {
    this.date = date;
    this.calendar.select(date);
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
    if (this.date !== date) return; // another day was opened meanwhile
    $("#journal-day-title", this.root).textContent = formatDate(date);
    if (!keepEntryStatus) setStatus(this.entryView.status, "");
    this.renderConversations();
    this.renderGenerate();
    this.renderDraft(this.day.drafts.find((d) => d.status === "current") || null);
    this.entryView.render(date, this.day.entry, {
      drafts: this.day.drafts, lines: dayLines(this.day), onLines: (ids, on) => this.highlightAll(ids, on) });
    this.renderAccept();
  }

  /** Who a day's chats were with, by the names their definitions give them. */
  partners() {
    const ids = [...new Set(this.day.conversations.map((c) => c.character_id).filter(Boolean))];
    return ids.map((id) => this.nameOf(id)).join(", ") || this.name;
  }

  renderConversations() {
    const conversations = this.day.conversations;
    const none = $("#journal-no-conversation", this.root);
    none.hidden = conversations.length > 0;
    none.textContent = t("journal.noConversation");
    $("#journal-conversations", this.root).replaceChildren(...conversations.map((conversation) => h("section", { class: "journal-conversation" },
      h("h4", { text: conversation.source === "chat"
        ? t("journal.chatWith", { name: this.nameOf(conversation.character_id) })
        : t("journal.imported") }),
      h("ol", { class: "journal-lines" }, conversation.messages.map((message) => h("li", {
        class: `journal-line ${message.role}${message.done ? " done" : ""}`, dataset: { messageId: message.message_id },
      },
      h("span", { class: "journal-line-who muted small",
        text: (message.role === "user" ? t("msg.you")
          : conversation.character_id ? this.nameOf(conversation.character_id) : t("journal.assistant"))
          + (message.at ? ` · ${formatTime(message.at)}` : "") }),
      h("span", { class: "text", text: message.text })))))));
  }

  /** "Write an entry" only where the day has lines of the user's; with a stored text
   * (the entry, or a draft) it can be the start of the new draft (seed 004
   * `include_existing`, off unless ticked). */
  renderGenerate() {
    const lines = this.day.conversations.some((c) => c.messages.some((m) => m.role === "user" && m.text.trim()));
    const stored = this.day.entry ? "entry" : this.day.drafts.some((d) => d.status === "current") ? "draft" : null;
    $("#journal-generate", this.root).hidden = !lines;
    const write = $("#journal-write", this.root);
    write.textContent = stored ? t("journal.writeAgain") : t("journal.write");
    if (!this.job || FINAL.has(this.job.state)) write.disabled = false;
    $("#journal-include-box", this.root).hidden = !stored;
    $("#journal-include-label", this.root).textContent = stored === "entry" ? t("journal.includeEntry") : t("journal.includeDraft");
    $("#journal-include-existing", this.root).checked = false;
    if (this.job && this.job.date !== this.date) $("#journal-progress", this.root).hidden = true;
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

  highlightAll(messageIds, on) {
    for (const id of messageIds) this.highlight(id, on);
  }

  // --- writing ----------------------------------------------------------------------------

  async write() {
    if (!this.date) return;
    const write = $("#journal-write", this.root);
    write.disabled = true;
    try {
      const started = await api.journalWrite(this.date, {
        includeExisting: $("#journal-include-existing", this.root).checked, language: lang });
      // The job's first progress can arrive over the socket before this answer does (it is
      // then already followed as this day's job): its state must not fall back to queued.
      if (!this.job || this.job.job_id !== started.job_id) {
        this.job = { job_id: started.job_id, date: this.date, state: "queued" };
      }
      this.showProgress(this.job);
      this.pollJob();
    } catch (error) {
      write.disabled = false;
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
    // A poll's answer can be older than what the socket said meanwhile: a job never goes
    // back a stage, and neither does the page.
    if (ORDER.indexOf(message.state) < ORDER.indexOf(this.job.state)) return;
    // The last stage it ran, so a failed job still shows how far it came.
    const stage = STEPS.includes(message.state) ? message.state : this.job.stage;
    // A day in parts says which part of a stage runs; a new state (or a poll's answer of
    // another state) forgets the last stage's part.
    const part = message.parts ? { part: message.part, parts: message.parts }
      : message.state === this.job.state ? { part: this.job.part, parts: this.job.parts }
        : { part: undefined, parts: undefined };
    this.job = { ...this.job, ...message, stage, ...part };
    this.showProgress(this.job);
    if (FINAL.has(message.state)) {
      clearTimeout(this.pollTimer);
      $("#journal-write", this.root).disabled = false;
      if (message.state === "done" && this.job.date === this.date) this.changed();
      else this.calendar.refresh();
    }
  }

  /** Every stage in order: a finished one in the past tense ("Day reconstructed"), the
   * running one in the present ("Reconstructing the day") and marked current, the one a
   * failed job stopped in marked failed. */
  showProgress(job) {
    const node = $("#journal-progress", this.root);
    node.hidden = false;
    node.dataset.state = job.state;
    const failed = job.state === "failed";
    const at = failed ? job.stage : job.state;
    const reached = at === "done" ? STEPS.length : STEPS.indexOf(at);
    const list = STEPS.map((step, index) => {
      const done = index < reached;
      let label = done && step !== "done" ? t(`journal.stageDone.${step}`) : t(`journal.stage.${step}`);
      const mark = done ? "done" : index !== reached ? "" : failed ? "failed" : "current";
      if (mark === "current" && job.parts) {
        label = t("journal.stagePart", { stage: label, part: job.part, parts: job.parts });
      }
      return h("li", { class: mark, text: label });
    });
    node.replaceChildren(h("ol", { class: "journal-steps" }, list));
    if (job.state === "failed") {
      node.append(h("p", { class: "journal-error", role: "alert",
        text: t("journal.failed", { reason: errorText(job.error) }) }));
    }
  }

  /** The notes above a draft: made without a model, revising a stored text, or a stage's
   * fallback — each says what the draft is. */
  draftNotes(draft) {
    const notes = [];
    const stages = Object.fromEntries((draft.trace.stages || []).map((s) => [s.stage, s]));
    const offline = stages.narrate && stages.narrate.outcome === "offline";
    if (offline) notes.push(t("journal.offlineDraft"));
    if (draft.base) notes.push(t(draft.base.origin === "entry" ? "journal.baseEntry" : "journal.baseDraft"));
    if (draft.reconstruction_status === "fallback") {
      notes.push(t("journal.fallbackReconstruct", { why: draft.validation.filter((c) => c !== "reconstruction_invalid").join(", ") || "—" }));
    }
    if (draft.narration === "local" && !offline) {
      notes.push(t("journal.fallbackNarrate", { why: reasonText(stages.narrate && stages.narrate.codes[0]) }));
    }
    return notes;
  }

  renderDraft(draft) {
    this.draft = draft;
    const box = $("#journal-draft", this.root);
    box.hidden = !draft;
    if (!draft) return;
    // Sentence by sentence, each with the lines it came from (its `support` map).
    const view = draftView(draft, dayLines(this.day));
    renderSentences($("#journal-draft-text", this.root), view, {
      idPrefix: "journal-draft-s", onLines: (ids, on) => this.highlightAll(ids, on) });
    $("#journal-draft-hint", this.root).hidden = !view.sentences.some((s) => s.lines.length);
    // What the check left out of the draft, and why: never shown as the user's.
    const left = leftOutView(draft);
    $("#journal-not-in-words", this.root).hidden = left.length === 0;
    $("#journal-not-in-words-list", this.root).replaceChildren(...left.map((s) => h("li", {},
      h("q", { class: "text journal-left-text", text: s.text }),
      s.why ? h("span", { class: "muted small journal-left-why", text: ` — ${s.why}` }) : null)));
    const notes = this.draftNotes(draft);
    const note = $("#journal-fallback", this.root);
    note.hidden = notes.length === 0;
    note.textContent = notes.join(" ");
    $("#journal-draft-sources", this.root).replaceChildren(...draft.sources.map((source) => {
      const text = this.messageText(source.message_id);
      const label = source.act === "done" ? "journal.sourceDone"
        : source.act === "question" ? "journal.sourceQuestion" : "journal.sourceLabel";
      return h("li", {},
        h("button", {
          type: "button", class: `journal-source${source.act ? ` ${source.act}` : ""}`, title: text,
          dataset: { messageId: source.message_id },
          "aria-label": t(label, { id: source.source_id, text }),
          onmouseenter: () => this.highlight(source.message_id, true),
          onmouseleave: () => this.highlight(source.message_id, false),
          onfocus: () => this.highlight(source.message_id, true),
          onblur: () => this.highlight(source.message_id, false),
        }, source.source_id));
    }));
    const questions = draft.sources.filter((s) => s.act === "question").map((s) => s.source_id);
    const leftOut = $("#journal-left-out", this.root);
    leftOut.hidden = questions.length === 0;
    leftOut.textContent = t("journal.leftOut", { ids: questions.join(", "), name: this.partners() });
  }

  /** "Use as entry" for a day without one, "Use as new version" for a day with one — not
   * for the draft the entry's current version already is. */
  renderAccept() {
    const button = $("#journal-draft-accept", this.root);
    if (!this.draft) return;
    const entry = this.day.entry;
    const current = entry && entry.versions.find((v) => v.version_id === entry.current_version_id);
    const taken = Boolean(current && current.draft_id === this.draft.draft_id);
    button.hidden = taken;
    button.textContent = entry ? t("journal.acceptVersion") : t("journal.accept");
  }

  async accept() {
    if (this.draft) await this.entryView.adopt(this.draft);
  }

  // --- export -----------------------------------------------------------------------------

  /** The journal's exporter, as the CLI's `novaberg export journal` (the same documents and
   * file names), its words in the page's language. */
  exportLink() {
    const checked = (name) => this.root.querySelector(`input[name="${name}"]:checked`).value;
    const params = new URLSearchParams({ format: checked("journal-export-format"), lang });
    if (checked("journal-export-per")) params.set("per", "entry");
    $("#journal-export-download", this.root).href = `/api/exports/journal?${params}`;
  }

  // --- a diary the user already has -------------------------------------------------------

  /** Day One's export or Markdown files → entries (`POST /api/journal/import/diary`), told
   * back as entries imported, skipped as already there, photos not imported, days left
   * alone; then the newest imported day opens. A refused file changed nothing. */
  async importDiary() {
    const input = $("#journal-diary-file", this.root);
    const status = $("#journal-diary-status", this.root);
    const result = $("#journal-diary-result", this.root);
    const file = input.files[0];
    if (!file) return;
    const submit = $("#journal-diary-submit", this.root);
    submit.disabled = true;
    result.hidden = true;
    setStatus(status, t("journal.diary.busy"));
    let answer;
    try {
      answer = await api.journalImportDiary(file);
    } catch (error) {
      // The server names the first bad entry ("entries[3] (2025-07-03): …"): shown too.
      const reason = error.code === "invalid_diary"
        ? t("journal.diary.where", { reason: errorText(error), detail: error.message }) : errorText(error);
      setStatus(status, t("journal.diary.failed", { reason }), "error");
      return;
    } finally {
      submit.disabled = false;
    }
    setStatus(status, "");
    const lines = [countText("diaryImported", answer.imported)];
    if (answer.skipped) lines.push(countText("diarySkipped", answer.skipped));
    if (answer.photos.imported) lines.push(countText("photosImported", answer.photos.imported));
    if (answer.photos.not_imported) lines.push(countText("photosNotImported", answer.photos.not_imported));
    if (answer.day_has_entry.length) {
      lines.push(t("journal.diary.dayHasEntry", { days: answer.day_has_entry.map(formatDate).join(", ") }));
    }
    result.replaceChildren(...lines.map((line) => h("li", { text: line })));
    result.hidden = false;
    input.value = "";
    const newest = answer.entries.at(-1);
    if (newest) await this.pick(newest.date);
    else await this.calendar.refresh();
  }

  // --- trash ------------------------------------------------------------------------------

  async showTrash() {
    let entries;
    try {
      entries = await api.journalTrash();
    } catch (error) {
      this.fail(error);
      return;
    }
    $("#journal-day", this.root).hidden = true;
    $("#journal-trash", this.root).hidden = false;
    $("#journal-trash-list", this.root).replaceChildren(...entries.map((entry) => h("li", {},
      h("strong", { text: formatDate(entry.date) }), " ",
      h("span", { class: "text", text: entry.text }), " ",
      h("span", { class: "journal-trash-actions" },
        h("button", { type: "button", class: "button button-small", onclick: async () => {
          await this.entryView.undo(entry.entry_id);
          await this.showTrash();
        } }, t("journal.undelete")),
        h("button", { type: "button", class: "button button-small button-danger journal-purge",
          "aria-haspopup": "dialog", onclick: () => this.askPurge(entry) }, t("journal.purge"))))));
    $("#journal-trash-empty", this.root).hidden = entries.length > 0;
  }

  /** The one irreversible action asks first, in a dialog whose default is to keep. */
  askPurge(entry) {
    this.purging = entry;
    $("#journal-purge-text").textContent = t("journal.purgeText", { date: formatDate(entry.date) });
    this.purgeDialog.showModal();
  }

  async purgeClosed() {
    const entry = this.purging;
    const confirmed = this.purgeDialog.returnValue === "confirm";
    this.purging = null;
    this.purgeDialog.returnValue = "";
    if (!entry || !confirmed) return;
    try {
      await api.journalPurge(entry.entry_id);
    } catch (error) {
      this.fail(error);
    }
    await this.showTrash();
    await this.calendar.refresh();
  }
}
