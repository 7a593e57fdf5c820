// The "Backup" (Sicherung) section of the settings dialog: take a backup and see the ones in
// the data dir (admin only: a backup holds every user's data), download this conversation
// as Markdown or JSON, and import a JSON export (into the signed-in user's own data).

import { api } from "./api.js";
import { $, h, setStatus } from "./dom.js";
import { formatDateTime, errorText, t } from "./i18n.js";

function size(bytes) {
  if (bytes >= 1024 * 1024) return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
  return `${Math.max(1, Math.round(bytes / 1024))} KB`;
}

export class BackupSection {
  constructor({ isAdmin, characterId }) {
    this.isAdmin = isAdmin;
    this.characterId = characterId;
    this.status = $("#backup-status");
    $("#backup-admin").hidden = !isAdmin;
    $("#backup-now").addEventListener("click", () => this.backupNow());
    for (const id of ["#export-from", "#export-to", "#export-format"]) {
      $(id).addEventListener("change", () => this.updateLink());
    }
    $("#import-file").addEventListener("change", (event) => this.importFile(event.target));
    this.updateLink();
  }

  async load() {
    setStatus(this.status, "");
    this.updateLink();
    if (!this.isAdmin) return;
    try {
      this.render((await api.backups()).backups);
    } catch (error) {
      setStatus(this.status, t("error.generic", { reason: errorText(error) }), "error");
    }
  }

  render(backups) {
    const list = $("#backup-list");
    if (!backups.length) {
      list.replaceChildren(h("li", { class: "muted", text: t("backup.none") }));
      return;
    }
    list.replaceChildren(...backups.map((b) => h("li", {
      title: b.path,
      text: t("backup.item", {
        date: formatDateTime(Date.parse(b.created_at) / 1000),
        messages: (b.counts && b.counts.messages) || 0,
        size: size(b.bytes),
      }),
    })));
  }

  updateLink() {
    const params = new URLSearchParams({ character: this.characterId, format: $("#export-format").value });
    if ($("#export-from").value) params.set("from", $("#export-from").value);
    if ($("#export-to").value) params.set("to", $("#export-to").value);
    $("#export-download").href = `/api/exports/chat?${params}`;
  }

  async backupNow() {
    const button = $("#backup-now");
    button.disabled = true;
    setStatus(this.status, t("backup.running"));
    try {
      const made = await api.createBackup();
      setStatus(this.status, t("backup.done", { name: made.name }), "ok");
      this.render((await api.backups()).backups);
    } catch (error) {
      setStatus(this.status, t("error.generic", { reason: errorText(error) }), "error");
    } finally {
      button.disabled = false;
    }
  }

  async importFile(input) {
    const file = input.files && input.files[0];
    if (!file) return;
    let exported;
    try {
      exported = JSON.parse(await file.text());
    } catch {
      setStatus(this.status, t("backup.notJson"), "error");
      input.value = "";
      return;
    }
    try {
      const result = await api.importExport(exported);
      setStatus(this.status, importedText(result), "ok");
    } catch (error) {
      setStatus(this.status, t("error.generic", { reason: errorText(error) }), "error");
    } finally {
      input.value = "";
    }
  }
}

/** What an import added: a chat import that carried lists or reminders names each part
 * (`parts` of `POST /api/imports`), any other the messages. */
function importedText(result) {
  const parts = result && result.parts;
  const carried = (part) => parts && part && part.imported + part.skipped > 0;
  if (!parts || !(carried(parts.lists) || carried(parts.reminders))) return t("backup.imported", result);
  return t("backup.importedChat", {
    messages: parts.messages.imported, items: parts.lists.imported,
    reminders: parts.reminders.imported, skipped: result.skipped,
  });
}
