// The search box of the chat page: every message of the user's history with this character
// and their imported conversations (`GET …/history/search`), newest first, paged; a hit
// opens its day in the chat (history.js) and marks the line.

import { api } from "./api.js";
import { $, h, setStatus } from "./dom.js";
import { errorText, formatDay, formatTime, t } from "./i18n.js";

const DEBOUNCE_MS = 300;
const CONTEXT_CHARS = 60; // characters of a hit's text shown on each side of the match

/** Where the first word of `query` occurs in `text` (casefolded), else -1. */
function firstMatch(text, query) {
  const lower = text.toLowerCase();
  const words = query.toLowerCase().split(/\s+/).filter(Boolean).sort((a, b) => b.length - a.length);
  for (const word of [query.toLowerCase().trim(), ...words]) {
    for (let size = word.length; size >= Math.min(3, word.length); size -= 1) {
      const at = lower.indexOf(word.slice(0, size));
      if (at >= 0) return { at, length: size };
    }
  }
  return { at: -1, length: 0 };
}

/** The part of a hit's text around its match, the match marked (as text nodes, never HTML). */
export function snippet(text, query) {
  const { at, length } = firstMatch(text, query);
  if (at < 0) return [text.length > 2 * CONTEXT_CHARS ? `${text.slice(0, 2 * CONTEXT_CHARS)}…` : text];
  const start = Math.max(0, at - CONTEXT_CHARS);
  const end = Math.min(text.length, at + length + CONTEXT_CHARS);
  return [start > 0 ? "…" : "", text.slice(start, at), h("mark", { text: text.slice(at, at + length) }),
    text.slice(at + length, end), end < text.length ? "…" : ""];
}

export class SearchBox {
  /** `onOpen(hit)`: a hit was chosen. `name`: what the character is called. */
  constructor({ characterId, name, onOpen }) {
    this.characterId = characterId;
    this.name = name;
    this.onOpen = onOpen;
    this.form = $("#history-search");
    this.input = $("#history-query");
    this.panel = $("#search-results");
    this.list = $("#search-hits");
    this.more = $("#search-more");
    this.status = $("#search-status");
    this.query = "";
    this.next = null;
    this.timer = 0;
    this.generation = 0;
    this.input.addEventListener("input", () => {
      clearTimeout(this.timer);
      this.timer = setTimeout(() => this.run(this.input.value), DEBOUNCE_MS);
    });
    this.form.addEventListener("submit", (event) => {
      event.preventDefault();
      clearTimeout(this.timer);
      this.run(this.input.value);
    });
    this.input.addEventListener("keydown", (event) => {
      if (event.key === "Escape") this.close();
    });
    $("#search-close").addEventListener("click", () => this.close());
    this.more.addEventListener("click", () => this.loadMore());
  }

  close() {
    this.input.value = "";
    this.query = "";
    this.panel.hidden = true;
    this.list.replaceChildren();
  }

  async run(text) {
    const query = text.trim();
    this.query = query;
    this.next = null;
    this.list.replaceChildren();
    this.panel.hidden = !query;
    this.more.hidden = true;
    setStatus(this.status, "");
    if (!query) return;
    await this.fetch(query, null);
  }

  async loadMore() {
    if (this.next) await this.fetch(this.query, this.next);
  }

  async fetch(query, before) {
    const generation = ++this.generation;
    let page;
    try {
      page = await api.searchHistory(this.characterId, query, before ? { before } : {});
    } catch (error) {
      if (generation === this.generation) setStatus(this.status, t("search.failed", { reason: errorText(error) }), "error");
      return;
    }
    if (generation !== this.generation || query !== this.query) return; // a newer search runs
    this.next = page.next;
    this.more.hidden = !page.next;
    this.list.append(...page.hits.map((hit) => this.buildHit(hit, query)));
    if (!this.list.children.length) setStatus(this.status, t("search.none"));
  }

  buildHit(hit, query) {
    const [year, month, day] = hit.calendar_date.split("-").map(Number);
    const who = hit.role === "user" ? t("msg.you") : hit.source === "import" ? t("history.otherSide") : this.name;
    const when = formatDay(new Date(year, month - 1, day)) + (hit.at ? ` · ${formatTime(hit.at)}` : "");
    return h("li", {},
      h("button", { type: "button", class: "search-hit", dataset: { cursor: hit.cursor },
                    onclick: () => this.onOpen(hit) },
        h("span", { class: "search-hit-meta" },
          h("span", { class: "who", text: who }), " ",
          h("time", { datetime: hit.calendar_date, text: when }),
          hit.source === "import" ? h("span", { class: "badge badge-source", text: t("history.imported") }) : null),
        h("span", { class: "search-hit-text" }, snippet(hit.text, query))));
  }
}
