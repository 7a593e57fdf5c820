// The settings' "Backup & export" tab (Sicherung & Export): take a backup and see the ones
// in the data dir — when to the second, how many messages, how big, the folder and the one
// command that restores one (admin only: a backup holds every user's data) — download this
// conversation as Markdown or JSON, and import a JSON export (into the signed-in user's own
// data), told back as what it added.

import { api } from "./api.js";
import { $, h, setStatus } from "./dom.js";
import { countText, errorText, formatBytes, formatDateTime, t } from "./i18n.js";

// What an import of each kind of export adds (`POST /api/imports` → {kind, imported,
// skipped, parts?}): the count words of its parts. A chat import names its parts itself
// (`messages`, `lists` — which counts list items — and `reminders`).
const IMPORT_UNITS = { "novaberg.chat": "messages", "novaberg.journal": "entries",
                       "novaberg.journal_export": "entries", "novaberg.memories": "memories" };
const PART_UNITS = { lists: "listItems" };

/** What an import added, by part: "Importiert: 1 Tagebucheintrag.", "Importiert: 3
 * Nachrichten, 1 Liste; 2 waren schon da.", "Nichts Neues: alles war schon da (2
 * Nachrichten)." */
export function importedText(result) {
  const parts = result.parts ? Object.entries(result.parts)
    : [[IMPORT_UNITS[result.kind] || "items", { imported: result.imported, skipped: result.skipped }]];
  const named = (field) => parts.filter(([, part]) => part[field] > 0)
    .map(([unit, part]) => countText(PART_UNITS[unit] || unit, part[field])).join(", ");
  if (result.imported > 0) {
    return result.skipped > 0
      ? t("import.doneSkipped", { what: named("imported"), skipped: countText("skipped", result.skipped) })
      : t("import.done", { what: named("imported") });
  }
  return result.skipped > 0 ? t("import.nothingNew", { what: named("skipped") }) : t("import.empty");
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
      this.render(await api.backups());
    } catch (error) {
      setStatus(this.status, t("error.generic", { reason: errorText(error) }), "error");
    }
  }

  /** `GET /api/backups`: {directory, backups: [{name, created_at, bytes, counts,
   * restore_command}]}, newest first. */
  render({ directory, backups }) {
    const list = $("#backup-list");
    $("#backup-folder").textContent = t("backup.folder", { path: directory });
    const newest = backups[0];
    $("#backup-restore").hidden = !newest;
    $("#backup-restore-command").textContent = newest ? newest.restore_command : "";
    if (!newest) {
      list.replaceChildren(h("li", { class: "muted", text: t("backup.none") }));
      return;
    }
    list.replaceChildren(...backups.map((b) => h("li", {
      title: b.name,
      text: t("backup.item", {
        when: formatDateTime(Date.parse(b.created_at) / 1000, { seconds: true }),
        messages: countText("messages", (b.counts && b.counts.messages) || 0),
        size: formatBytes(b.bytes),
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
      this.render(await api.backups());
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
