// The character's replies as Markdown (lists, emphasis, code, links), made safe: `marked`
// renders, DOMPurify sanitizes (both vendored unchanged, web/vendor/README.md). What a model
// writes is never taken as HTML: raw HTML in the Markdown is shown as text, only the tags
// below survive the sanitizer, links lead only to http(s) or mailto and open in a new tab
// without an opener or a referrer, and no image, frame, form, style or script gets through.
// The user's own messages are not rendered at all (chat.js shows them as text).

import DOMPurify from "../vendor/dompurify/purify.es.mjs";
import { Marked } from "../vendor/marked/marked.esm.js";

const ALLOWED_TAGS = ["p", "br", "strong", "em", "del", "code", "pre", "ul", "ol", "li",
  "blockquote", "a", "h1", "h2", "h3", "h4", "h5", "h6", "hr", "table", "thead", "tbody",
  "tr", "th", "td", "input"];
const ALLOWED_ATTR = ["href", "title", "start", "type", "checked", "disabled", "align"];
const SAFE_LINK = /^(?:https?:|mailto:)/i;

function escapeHtml(text) {
  return text.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c]));
}

const markdown = new Marked({
  gfm: true,
  breaks: true, // a chat line break is a line break
  renderer: {
    // Raw HTML, inline or as a block, is text to show, not markup to run.
    html: ({ text }) => escapeHtml(text),
    // An image would load from anywhere (and the CSP refuses it): its alt text and address.
    image: ({ href, text }) => escapeHtml(text ? `${text} (${href})` : href),
  },
});

const purifier = DOMPurify(window);
purifier.addHook("afterSanitizeAttributes", (node) => {
  if (node.tagName === "A") {
    const href = node.getAttribute("href") || "";
    if (!SAFE_LINK.test(href.trim())) node.removeAttribute("href");
    node.setAttribute("target", "_blank");
    node.setAttribute("rel", "noopener noreferrer");
  }
  if (node.tagName === "INPUT") {
    // Only a task list's checkbox, shown, never usable.
    if (node.getAttribute("type") !== "checkbox") node.remove();
    else node.setAttribute("disabled", "");
  }
});

/** `text` (Markdown) as a sanitized DocumentFragment. */
export function renderMarkdown(text) {
  const html = markdown.parse(String(text ?? ""), { async: false });
  const fragment = purifier.sanitize(html, {
    ALLOWED_TAGS,
    ALLOWED_ATTR,
    ALLOWED_URI_REGEXP: SAFE_LINK,
    ALLOW_DATA_ATTR: false,
    RETURN_DOM_FRAGMENT: true,
  });
  // The line breaks marked writes between blocks are no part of the text.
  for (const node of [...fragment.childNodes]) {
    if (node.nodeType === Node.TEXT_NODE && !node.textContent.trim()) node.remove();
  }
  return fragment;
}
