// Which character a page is about and what it is called. The name is the character
// definition's (`GET /api/characters`, app/characters/): the UI's texts never assume one.

import { api } from "./api.js";

/** The character that always exists (SPEC §9); what it is called is its definition's. */
export const DEFAULT_CHARACTER_ID = "nova";

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

/** What the UI calls a character: its name, else (a definition without one) its id. */
export function characterName(character) {
  return (character && (character.name || character.id)) || DEFAULT_CHARACTER_ID;
}

/** `id → name` of the known characters, for texts about any of them (the journal's). */
export function namesById(characters) {
  const names = new Map(characters.map((c) => [c.id, characterName(c)]));
  return (id) => names.get(id) || id;
}

/** What the character says first (its definition's `greeting`, or a card's `first_mes`),
 * with a card's `{{char}}` and `{{user}}` filled in; null when it has none. */
export function characterGreeting(character, userName) {
  const text = character && (character.greeting || character.first_mes);
  if (typeof text !== "string" || !text.trim()) return null;
  return text.replace(/\{\{char\}\}/gi, characterName(character)).replace(/\{\{user\}\}/gi, userName);
}
