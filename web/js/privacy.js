// The settings' Privacy tab: the people the user names (the identity registry: for a remote
// model their names, and phone numbers, addresses and the like, are replaced by placeholders
// before a prompt leaves this machine) — add, edit, remove, save — and a preview box that
// shows what would leave this machine for a remote model (POST /api/privacy/preview): the
// masked text, and each masked part with its placeholder and why it was masked.

import { api } from "./api.js";
import { $, h, setStatus } from "./dom.js";
import { errorText, lang, STRINGS, t } from "./i18n.js";

/** The reasons the preview gives (app/llm/privacy/masking.py `_reason`): a registered person,
 * a name read in its context, or the kind of what was found. */
export const REASONS = ["registered", "looks_like_name", "EMAIL", "URL", "IBAN", "TAXID", "PHONE",
                        "ADDRESS", "BIRTHDATE", "PLATE"];

/** One masked part as the preview tells it: “Anna” → [PERSON_1]: registered. */
export function partText(span, strings = STRINGS[lang]) {
  const fill = (key, params) => (strings[key] ?? STRINGS.en[key] ?? key)
    .replace(/\{(\w+)\}/g, (match, name) => (name in params ? String(params[name]) : match));
  const reason = fill(`privacy.reason.${span.reason}`, {});
  return fill("privacy.previewPart", { text: span.text, placeholder: span.placeholder, reason });
}

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
    $("#privacy-preview-parts").replaceChildren();
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
      $("#privacy-preview-parts").replaceChildren();
      return;
    }
    try {
      const result = await api.previewPrivacy(text);
      out.textContent = result.masked;
      $("#privacy-preview-count").textContent = t("privacy.previewCount", { count: result.spans.length });
      $("#privacy-preview-parts").replaceChildren(
        ...result.spans.map((span) => h("li", { text: partText(span) })));
    } catch (error) {
      out.textContent = "";
      $("#privacy-preview-parts").replaceChildren();
      $("#privacy-preview-count").textContent = t("error.generic", { reason: errorText(error) });
    }
  }
}
