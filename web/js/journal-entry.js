// A day's entry in the Journal view (design §8): its text (or a new one, written by hand), its
// photos (added, shown as thumbnails, removed), its versions with restore (each marking the
// sentences that are the user's own edits, issue 40), delete to the trash
// with undo. One section of the page
// (#journal-entry); what an entry holds besides its text gets a part of its own here, each
// rendered by `render(entry)`.

import { api } from "./api.js";
import { $, h, setStatus } from "./dom.js";
import { countText, errorText, formatDateTime, t } from "./i18n.js";
import { renderSentences, versionView } from "./journal-provenance.js";

export class EntryView {
  /** `onChanged(entry)`: the day's entry changed (saved, restored, deleted, back). */
  constructor({ root, onChanged }) {
    this.root = root;
    this.onChanged = onChanged;
    this.date = null;
    this.entry = null;
    this.lastDeleted = null;
    // The day's drafts and lines, which a version's sentences name (journal.js's day).
    this.context = { drafts: [], lines: new Map(), onLines: () => {} };
    $("#journal-entry-form", root).addEventListener("submit", (event) => {
      event.preventDefault();
      this.save();
    });
    $("#journal-entry-delete", root).addEventListener("click", () => this.remove());
    $("#journal-undo-button", root).addEventListener("click", () => this.undo());
    $("#journal-photo-input", root).addEventListener("change", (event) => this.addPhotos(event.target));
  }

  get status() {
    return $("#journal-entry-status", this.root);
  }

  /** The entry of `date`, or the form for a new one (null); `context`: the day's drafts,
   * its lines by message id and who is told which lines a sentence shown draws on. */
  render(date, entry, context = this.context) {
    this.date = date;
    this.entry = entry;
    this.context = context;
    $("#journal-entry", this.root).hidden = false;
    $("#journal-entry-text", this.root).value = entry ? entry.text : "";
    $("#journal-entry-delete", this.root).hidden = !entry;
    $("#journal-entry-heading", this.root).textContent = entry ? t("journal.entry") : t("journal.newEntry");
    this.renderPhotos(entry);
    this.renderVersions(entry);
  }

  /** The entry's photos as thumbnails, each opening the photo; a new entry takes photos once
   * it is saved (a photo belongs to an entry). */
  renderPhotos(entry) {
    $("#journal-photos", this.root).hidden = !entry;
    const media = entry ? entry.media || [] : [];
    $("#journal-photo-list", this.root).replaceChildren(...media.map((photo) => h("li", {
      class: "journal-photo", dataset: { assetId: photo.asset_id },
    },
    h("a", { href: photo.url, target: "_blank", rel: "noopener" },
      h("img", { src: photo.thumb_url, alt: photo.name, loading: "lazy", class: "journal-photo-thumb" })),
    h("button", {
      type: "button", class: "button button-small journal-photo-remove",
      "aria-label": t("journal.removePhoto", { name: photo.name }), title: t("journal.removePhoto", { name: photo.name }),
      onclick: () => this.removePhoto(photo.asset_id),
    }, "×"))));
  }

  async addPhotos(input) {
    const files = [...input.files];
    input.value = "";
    if (!this.entry || files.length === 0) return;
    const entryId = this.entry.entry_id;
    setStatus(this.status, "");
    try {
      for (const file of files) await api.journalAddPhoto(entryId, file);
    } catch (error) {
      setStatus(this.status, t("journal.error", { reason: errorText(error, "photo") }), "error");
      await this.reload(entryId);
      return;
    }
    await this.reload(entryId, t("journal.photoAdded"));
  }

  async removePhoto(assetId) {
    const entryId = this.entry.entry_id;
    await this.guard(async () => {
      await api.journalRemovePhoto(assetId);
      await this.reload(entryId, t("journal.photoRemoved"));
    });
  }

  /** The entry as the server has it now (after its photos changed). */
  async reload(entryId, message = null) {
    const entry = await api.journalEntry(entryId);
    this.entry = entry;
    this.renderPhotos(entry);
    await this.onChanged(entry);
    if (message) setStatus(this.status, message, "ok");
  }

  /** Every version, newest first; one taken from a draft marks the sentences that are the
   * user's own edits and shows the lines of the draft's (`provenance`). */
  renderVersions(entry) {
    const versions = entry ? [...entry.versions].reverse() : [];
    $("#journal-versions-box", this.root).hidden = versions.length === 0;
    const { drafts, lines, onLines } = this.context;
    let marked = false;
    $("#journal-versions", this.root).replaceChildren(...versions.map((version) => {
      const view = versionView(version, drafts, lines);
      const text = h("p", { class: "text journal-version-text" });
      if (view) {
        marked = true;
        renderSentences(text, view, { idPrefix: `journal-${version.version_id}-s`, onLines });
      } else {
        text.textContent = version.text;
      }
      const edits = view && view.edits ? ` · ${countText("ownEdits", view.edits)}` : "";
      return h("li", {
        class: version.version_id === entry.current_version_id ? "current" : "",
        dataset: { versionId: version.version_id },
      },
      h("span", { class: "muted small", text: `${formatDateTime(version.created_at)} · ${t(`journal.origin.${version.origin}`)}${edits}` }),
      text,
      version.version_id === entry.current_version_id
        ? h("span", { class: "journal-badge", text: t("journal.current") })
        : h("button", { type: "button", class: "button button-small journal-restore", onclick: () => this.restore(version.version_id) },
          t("journal.restore")));
    }));
    $("#journal-versions-legend", this.root).hidden = !marked;
  }

  focus() {
    $("#journal-entry-text", this.root).focus();
  }

  /** The draft taken over: as the day's first entry, or as the entry's next version. */
  async adopt(draft) {
    await this.guard(async () => {
      const entry = this.entry
        ? await api.journalEdit(this.entry.entry_id, draft.text, draft.draft_id)
        : await api.journalCreate(this.date, draft.text, draft.draft_id);
      await this.changed(entry, t("journal.saved"));
    });
  }

  async save() {
    const text = $("#journal-entry-text", this.root).value;
    await this.guard(async () => {
      const entry = this.entry
        ? await api.journalEdit(this.entry.entry_id, text)
        : await api.journalCreate(this.date, text, null);
      await this.changed(entry, t("journal.saved"));
    });
  }

  async restore(versionId) {
    await this.guard(async () => {
      await this.changed(await api.journalRestore(this.entry.entry_id, versionId), t("journal.restored"));
    });
  }

  async remove() {
    if (!this.entry) return;
    const entryId = this.entry.entry_id;
    await this.guard(async () => {
      await api.journalDelete(entryId);
      this.lastDeleted = entryId;
      $("#journal-undo", this.root).hidden = false;
      await this.changed(null, "");
    });
  }

  /** Back out of the trash: the last deleted one, or `entryId` (from the trash's list). */
  async undo(entryId = this.lastDeleted) {
    if (!entryId) return;
    await this.guard(async () => {
      const entry = await api.journalUndelete(entryId);
      if (entryId === this.lastDeleted) this.lastDeleted = null;
      $("#journal-undo", this.root).hidden = true;
      await this.onChanged(entry);
    });
  }

  async changed(entry, message) {
    this.render(this.date, entry);
    await this.onChanged(entry);
    setStatus(this.status, message, message ? "ok" : "");
  }

  async guard(action) {
    setStatus(this.status, "");
    try {
      await action();
    } catch (error) {
      setStatus(this.status, t("journal.error", { reason: errorText(error) }), "error");
    }
  }
}
