// A day's entry in the Journal view (design §8): its text (or a new one, written by hand), its
// photos (added, shown as thumbnails, removed), its versions with restore, delete to the trash
// with undo. One section of the page
// (#journal-entry); what an entry holds besides its text gets a part of its own here, each
// rendered by `render(entry)`.

import { api } from "./api.js";
import { $, h, setStatus } from "./dom.js";
import { errorText, formatDateTime, t } from "./i18n.js";

export class EntryView {
  /** `onChanged(entry)`: the day's entry changed (saved, restored, deleted, back). */
  constructor({ root, onChanged }) {
    this.root = root;
    this.onChanged = onChanged;
    this.date = null;
    this.entry = null;
    this.lastDeleted = null;
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

  /** The entry of `date`, or the form for a new one (null). */
  render(date, entry) {
    this.date = date;
    this.entry = entry;
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

  renderVersions(entry) {
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
