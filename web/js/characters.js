// Which character a page is about, what it is called and how it looks. The name and the
// picture are the character definition's (`GET /api/characters`, app/characters/): the UI's
// texts never assume one. The header's picker lists every character as a link: switching
// is one click, a page load of `/?character=<id>` — each character's conversation keeps its
// own open ids (conversation.js, by character) and the server its session, so nothing is
// lost; the choice is remembered for the next visit of `/`.

import { api } from "./api.js";
import { h } from "./dom.js";
import { t } from "./i18n.js";

/** The character that always exists (design §9); what it is called is its definition's. */
export const DEFAULT_CHARACTER_ID = "nova";
const REMEMBERED = "novaberg:character:";

/** The server's characters; none when it cannot say (the page goes on with the default). */
export async function loadCharacters() {
  try {
    const characters = await api.characters();
    return Array.isArray(characters) ? characters : [];
  } catch {
    return [];
  }
}

/** `?character=<id>` when the server knows it, else the default one, else the first. */
export function pickCharacter(characters, wanted = null) {
  return characters.find((c) => c.id === wanted) || characters.find((c) => c.id === DEFAULT_CHARACTER_ID)
    || characters[0] || { id: DEFAULT_CHARACTER_ID };
}

/** The character a page of `userId` opens with: the URL's, else the one chosen last. */
export function wantedCharacter(search, storage, userId) {
  const asked = new URLSearchParams(search).get("character");
  if (asked) return asked;
  try {
    return storage.getItem(REMEMBERED + userId);
  } catch {
    return null;
  }
}

export function rememberCharacter(storage, userId, characterId) {
  try {
    storage.setItem(REMEMBERED + userId, characterId);
  } catch {
    // Storage may be off (private mode); the URL still says which character.
  }
}

/** What the UI calls a character: its name, else (a definition without one) its id. */
export function characterName(character) {
  return (character && (character.name || character.id)) || DEFAULT_CHARACTER_ID;
}

/** `id → name` of the known characters, for texts about any of them (the journal's). */
export function namesById(characters) {
  const names = new Map(characters.map((c) => [c.id, characterName(c)]));
  return (id) => names.get(id) || id;
}

/** Where the page of a character is. */
export function characterHref(characterId) {
  return `/?character=${encodeURIComponent(characterId)}`;
}

/** The character's picture (its thumbnail of `size` pixels), or its initial on a colour of
 * its own when it has none — into `node` (an `.avatar`), or a new one. */
export function avatar(character, { size = 96, node = null } = {}) {
  const box = node || h("span", { class: "avatar", "aria-hidden": "true" });
  box.replaceChildren();
  box.style.background = "";
  delete box.dataset.initial;
  if (character && character.picture) {
    box.append(h("img", { src: `${character.picture}&size=${size}`, alt: "" }));
  } else {
    // The initial is drawn by the stylesheet (`::before`): the page's text stays the name.
    box.dataset.initial = characterName(character).slice(0, 1).toUpperCase();
    box.style.background = `hsl(${hue(character ? character.id : "")} 45% 75%)`;
  }
  return box;
}

function hue(text) {
  let sum = 0;
  for (const char of text) sum = (sum * 31 + char.codePointAt(0)) % 360;
  return sum;
}

/** The header's picker: one link per character, the current one marked. */
export function renderPicker(list, characters, currentId) {
  list.replaceChildren(...characters.map((character) => {
    const current = character.id === currentId;
    const name = characterName(character);
    return h("li", {}, h("a", {
      class: "picker-chip", href: characterHref(character.id), dataset: { character: character.id },
      "aria-current": current ? "page" : null, title: current ? name : t("picker.switch", { name }),
    }, avatar(character, { size: 48 }), h("span", { text: name })));
  }));
}

/** What the character says first (its definition's `greeting`, or a card's `first_mes`),
 * with a card's `{{char}}` and `{{user}}` filled in; null when it has none. */
export function characterGreeting(character, userName) {
  const text = character && (character.greeting || character.first_mes);
  if (typeof text !== "string" || !text.trim()) return null;
  return text.replace(/\{\{char\}\}/gi, characterName(character)).replace(/\{\{user\}\}/gi, userName);
}
