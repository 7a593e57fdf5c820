// The settings' Privacy tab: the people the user names (the identity registry: for a remote
// model their names, and phone numbers, addresses and the like, are replaced by placeholders
// before a prompt leaves this machine) — add, edit, remove, save — and a preview box that
// shows what would leave this machine for a remote model (POST /api/privacy/preview).

import { api } from "./api.js";
import { $, h, setStatus } from "./dom.js";
import { errorText, t } from "./i18n.js";

function splitAliases(text) {
  return text.split(",").map((alias) => alias.trim()).filter(Boolean);
}

/** The first name (or alias) that `people` gives twice, as typed the second time; null if
 * none. The server decides (`duplicate_name`, app/api/privacy.py: spaces collapsed, any
 * case); this only finds the name its answer is about, to say it in the UI's language. */
export function repeatedName(people) {
  const seen = new Set();
  for (const person of people) {
    for (const raw of [person.name, ...person.aliases]) {
      const name = raw.split(/\s+/).filter(Boolean).join(" ");
      const key = name.toLocaleLowerCase();
      if (seen.has(key)) return name;
      seen.add(key);
    }
  }
  return null;
}

export class PrivacyPanel {
  constructor() {
    this.list = $("#privacy-people");
    this.status = $("#privacy-status");
    $("#privacy-add").addEventListener("click", () => this.addRow({ name: "", aliases: [] }, true));
    $("#privacy-save").addEventListener("click", () => this.save());
    $("#privacy-preview-run").addEventListener("click", () => this.preview());
  }

  async load() {
    setStatus(this.status, "");
    $("#privacy-preview-out").textContent = "";
    try {
      this.show((await api.identities()).people);
    } catch (error) {
      setStatus(this.status, t("error.generic", { reason: errorText(error) }), "error");
    }
  }

  show(people) {
    this.list.replaceChildren();
    for (const person of people) this.addRow(person, false);
    this.syncEmpty();
  }

  addRow(person, focus) {
    const index = this.list.children.length + 1;
    const name = h("input", { class: "privacy-name", value: person.name, maxlength: 100,
                              "aria-label": t("privacy.nameOf", { n: index }), placeholder: t("privacy.namePlaceholder") });
    const aliases = h("input", { class: "privacy-aliases", value: person.aliases.join(", "),
                                 "aria-label": t("privacy.aliasesOf", { n: index }), placeholder: t("privacy.aliasesPlaceholder") });
    const row = h("li", { class: "privacy-person" }, name, aliases,
      h("button", { type: "button", class: "button button-small", text: t("privacy.remove"),
                    "aria-label": t("privacy.removeOf", { n: index }),
                    onclick: () => { row.remove(); this.syncEmpty(); } }));
    this.list.append(row);
    this.syncEmpty();
    if (focus) name.focus();
  }

  syncEmpty() {
    $("#privacy-empty").hidden = this.list.children.length > 0;
  }

  people() {
    return [...this.list.querySelectorAll(".privacy-person")]
      .map((row) => ({ name: $(".privacy-name", row).value.trim(), aliases: splitAliases($(".privacy-aliases", row).value) }))
      .filter((person) => person.name || person.aliases.length);
  }

  async save() {
    const people = this.people();
    let stored;
    try {
      stored = await api.saveIdentities(people);
    } catch (error) {
      const twice = error.code === "duplicate_name" ? repeatedName(people) : null;
      const reason = twice ? t("privacy.duplicate", { name: twice }) : errorText(error);
      setStatus(this.status, t("privacy.saveFailed", { reason }), "error");
      return;
    }
    this.show(stored.people);
    setStatus(this.status, t("privacy.saved", { count: stored.people.length }), "ok");
  }

  async preview() {
    const text = $("#privacy-preview-text").value;
    const out = $("#privacy-preview-out");
    if (!text.trim()) {
      out.textContent = "";
      return;
    }
    try {
      const result = await api.previewPrivacy(text);
      out.textContent = result.masked;
      $("#privacy-preview-count").textContent = t("privacy.previewCount", { count: result.spans.length });
    } catch (error) {
      out.textContent = "";
      $("#privacy-preview-count").textContent = t("error.generic", { reason: errorText(error) });
    }
  }
}
