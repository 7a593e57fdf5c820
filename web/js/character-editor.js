// The characters dialog: every character with its picture, kind and actions (talk, edit,
// copy, export as a card, delete one's own), a character card import, and the editor (name,
// picture, persona, greeting, description, language, baseline mood). What the editor sends
// is checked by the server's one validator; its refusal is shown as it comes.

import { api } from "./api.js";
import { avatar, characterHref, characterName } from "./characters.js";
import { $, h, setStatus } from "./dom.js";
import { errorText, labelText, t } from "./i18n.js";

const EMOTIONS = ["neutral", "freude", "ruhe", "neugier", "zuneigung", "fuersorge", "begeisterung",
  "dankbarkeit", "mitgefuehl", "ueberraschung", "trauer", "stress", "erschoepfung", "angst", "wut"];
const MODES = ["alltag", "spiel", "tiefgang", "krise"];
const EXPORTS = [["v3", "png"], ["v3", "json"], ["v2", "png"], ["v2", "json"]];

function fill(select, values) {
  select.replaceChildren(...values.map((value) => h("option", { value, text: labelText(value) })));
}

/** An option for a stored value the list does not have (a hand-written TOML's). */
function choose(select, value) {
  if (![...select.options].some((option) => option.value === value)) {
    select.append(h("option", { value, text: labelText(value) }));
  }
  select.value = value;
}

function detail(error) {
  const text = errorText(error);
  return error.message && error.message !== text ? `${text} (${error.message})` : text;
}

export class CharactersDialog {
  /** `currentId`: the page's character; `onChanged(characters, changed)` after a change. */
  constructor({ currentId, onChanged }) {
    this.currentId = currentId;
    this.onChanged = onChanged;
    this.dialog = $("#characters-dialog");
    this.status = $("#characters-status");
    this.editorStatus = $("#editor-status");
    this.characters = [];
    this.editing = null; // the editor's view of the character being edited; null: a new one
    this.picture = undefined; // a chosen File, null: remove, undefined: leave as it is
    fill($("#editor-emotion"), EMOTIONS);
    fill($("#editor-mode"), MODES);
    $("#characters-close").addEventListener("click", () => this.dialog.close());
    $("#character-new").addEventListener("click", () => this.edit(null));
    $("#character-import").addEventListener("change", (event) => this.importCard(event.target));
    $("#editor-cancel").addEventListener("click", () => this.showList());
    $("#character-editor").addEventListener("submit", (event) => {
      event.preventDefault();
      this.save();
    });
    $("#editor-arousal").addEventListener("input", () => this.showArousal());
    $("#editor-picture").addEventListener("change", (event) => this.choosePicture(event.target));
    $("#editor-picture-remove").addEventListener("click", () => {
      this.picture = null;
      $("#editor-picture").value = "";
      avatar({ id: this.editing ? this.editing.id : "", name: $("#editor-name").value }, { node: $("#editor-avatar") });
    });
  }

  async open() {
    this.showList();
    setStatus(this.status, "");
    if (!this.dialog.open) this.dialog.showModal();
    await this.refresh();
  }

  async refresh() {
    try {
      this.characters = await api.characters();
    } catch (error) {
      setStatus(this.status, t("error.generic", { reason: detail(error) }), "error");
      return;
    }
    this.render();
  }

  showList() {
    $("#characters-list-view").hidden = false;
    $("#character-editor").hidden = true;
  }

  render() {
    $("#characters-list").replaceChildren(...this.characters.map((c) => this.item(c)));
  }

  item(character) {
    const name = characterName(character);
    const kind = character.kind === "own" && character.replaces ? "changed" : character.kind;
    const exports = EXPORTS.map(([spec, format]) => h("a", {
      href: api.cardUrl(character.id, spec, format), download: "",
      dataset: { export: `${spec}-${format}` }, text: `${spec.toUpperCase()} ${format.toUpperCase()}`,
    }));
    const actions = h("div", { class: "character-actions" },
      character.id === this.currentId ? h("span", { class: "badge", text: t("chars.current") })
        : h("a", { class: "button button-small", href: characterHref(character.id), text: t("chars.talk") }),
      h("button", { type: "button", class: "button button-small", text: t("chars.edit"),
        onclick: () => this.edit(character.id) }),
      h("button", { type: "button", class: "button button-small", text: t("chars.copy"),
        onclick: () => this.copy(character) }),
      character.kind === "own" ? h("button", { type: "button", class: "button button-small button-danger",
        text: t("chars.delete"), onclick: () => this.remove(character) }) : null,
      h("span", { class: "muted", text: t("chars.export") }), ...exports);
    return h("li", { class: "character-item", dataset: { character: character.id } },
      avatar(character, { size: 96 }),
      h("h3", {}, h("span", { class: "name", text: name }),
        h("span", { class: "badge", dataset: { kind }, text: t(`chars.kind.${kind}`) })),
      character.description ? h("p", { class: "muted small", text: character.description }) : null,
      actions);
  }

  // --- the editor -------------------------------------------------------------------------

  async edit(characterId) {
    setStatus(this.editorStatus, "");
    this.picture = undefined;
    $("#editor-picture").value = "";
    let view = null;
    if (characterId !== null) {
      try {
        view = await api.character(characterId);
      } catch (error) {
        setStatus(this.status, t("error.generic", { reason: detail(error) }), "error");
        return;
      }
    }
    this.editing = view;
    const name = view ? characterName(view) : "";
    $("#editor-title").textContent = view ? t("editor.edit", { name }) : t("editor.new");
    $("#editor-name").value = name;
    $("#editor-persona").value = view ? view.persona : "";
    $("#editor-greeting").value = view ? view.greeting : "";
    $("#editor-description").value = view ? view.description || "" : "";
    $("#editor-language").value = view ? view.language : (document.documentElement.lang === "de" ? "de" : "en");
    choose($("#editor-emotion"), view ? view.baseline.emotion : "neutral");
    choose($("#editor-mode"), view ? view.baseline.mode : "alltag");
    $("#editor-arousal").value = String(view ? view.baseline.arousal : 0.5);
    this.showArousal();
    avatar(view || { id: "", name: "?" }, { node: $("#editor-avatar"), size: 192 });
    $("#editor-picture-remove").hidden = !(view && view.picture);
    const note = $("#editor-note");
    const builtIn = view && view.kind !== "own";
    note.hidden = !(builtIn || (view && view.from_card));
    note.textContent = builtIn ? t("editor.builtIn", { name }) : view && view.from_card ? t("editor.fromCard") : "";
    $("#characters-list-view").hidden = true;
    $("#character-editor").hidden = false;
    $("#editor-name").focus();
  }

  showArousal() {
    $("#editor-arousal-value").textContent = Number($("#editor-arousal").value).toFixed(2);
  }

  choosePicture(input) {
    const file = input.files && input.files[0];
    if (!file) return;
    this.picture = file;
    const box = $("#editor-avatar");
    box.replaceChildren(h("img", { src: URL.createObjectURL(file), alt: "" }));
    $("#editor-picture-remove").hidden = false;
  }

  fields() {
    return {
      name: $("#editor-name").value,
      persona: $("#editor-persona").value,
      greeting: $("#editor-greeting").value,
      description: $("#editor-description").value,
      language: $("#editor-language").value,
      baseline: {
        emotion: $("#editor-emotion").value,
        mode: $("#editor-mode").value,
        arousal: Number($("#editor-arousal").value),
      },
    };
  }

  async save() {
    const button = $("#editor-save");
    button.disabled = true;
    setStatus(this.editorStatus, "");
    try {
      let saved = this.editing ? await api.saveCharacter(this.editing.id, this.fields())
        : await api.createCharacter(this.fields());
      if (this.picture) saved = await api.setPicture(saved.id, this.picture);
      else if (this.picture === null && saved.picture) saved = await api.removePicture(saved.id);
      this.editing = saved;
      this.picture = undefined;
      setStatus(this.status, t("editor.saved", { name: characterName(saved) }), "ok");
      await this.refresh();
      this.showList();
      this.onChanged(this.characters, saved);
    } catch (error) {
      setStatus(this.editorStatus, t("error.generic", { reason: detail(error) }), "error");
    } finally {
      button.disabled = false;
    }
  }

  async copy(character) {
    try {
      const made = await api.copyCharacter(character.id);
      setStatus(this.status, t("chars.copied", { name: characterName(made) }), "ok");
      await this.refresh();
      this.onChanged(this.characters, made);
    } catch (error) {
      setStatus(this.status, t("error.generic", { reason: detail(error) }), "error");
    }
  }

  remove(character) {
    const name = characterName(character);
    const confirm = $("#character-delete-dialog");
    $("#character-delete-title").textContent = t("chars.deleteTitle", { name });
    $("#character-delete-text").textContent = t(character.replaces ? "chars.deleteRevert" : "chars.deleteText", { name });
    confirm.addEventListener("close", async () => {
      if (confirm.returnValue !== "confirm") return;
      try {
        await api.deleteCharacter(character.id);
        setStatus(this.status, t("chars.deleted", { name }), "ok");
        await this.refresh();
        this.onChanged(this.characters, null, character.id);
      } catch (error) {
        setStatus(this.status, t("error.generic", { reason: detail(error) }), "error");
      }
    }, { once: true });
    confirm.showModal();
  }

  async importCard(input) {
    const file = input.files && input.files[0];
    if (!file) return;
    setStatus(this.status, t("chars.importing"));
    try {
      const result = await api.importCard(file);
      const lines = [t("chars.imported", { name: characterName(result.character) }),
        ...result.warnings.map((note) => t("chars.importNote", { note }))];
      setStatus(this.status, lines.join(" "), "ok");
      await this.refresh();
      this.onChanged(this.characters, result.character);
    } catch (error) {
      // A card imported twice: say so in the user's language (the server's English detail
      // asks to "choose another id", which an import does not let the user do).
      const text = error.code === "character_exists" ? t("chars.importExists")
        : t("error.generic", { reason: detail(error) });
      setStatus(this.status, text, "error");
    } finally {
      input.value = "";
    }
  }
}
