// The HTTP side of the wire contract (design §9) and the one fetch of every page. The session
// cookie travels by itself (same origin). Whatever goes wrong — an error answer
// `{"error": {"code", "message"}}`, a server that cannot be reached, an answer that is not
// JSON — comes back as one ApiError; `errorText` (i18n.js) says it in the user's language.

export class ApiError extends Error {
  /** `status` 0 with code `network`: the server could not be reached at all. Code
   * `invalid_response`: a success answer that is not JSON. An error answer without the
   * error shape (a proxy's page, say) gets the code `http_<status>`. */
  constructor(status, code, message) {
    super(message || code);
    this.name = "ApiError";
    this.status = status;
    this.code = code;
  }
}

function unreachable(error) {
  return new ApiError(0, "network", String(error && error.message ? error.message : error));
}

/** A fetch that answers parsed JSON (or null for an empty answer, e.g. 204) or throws
 * ApiError. `body` goes as JSON; with `{raw: true}` it is a string sent as it is (a file's
 * JSON text that the server reads itself); a Blob (a chosen file) goes as it is, with its
 * own type; with `{keepalive: true}` it is sent even when the page is closing (a change
 * whose undo time had not run out yet). */
export async function request(method, path, body, { raw = false, keepalive = false } = {}) {
  const init = { method, headers: { Accept: "application/json" }, credentials: "same-origin", keepalive };
  if (typeof Blob !== "undefined" && body instanceof Blob) {
    init.headers["Content-Type"] = body.type || "application/octet-stream";
    init.body = body;
  } else if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = raw ? body : JSON.stringify(body);
  }
  let response, text;
  try {
    response = await fetch(path, init);
    text = await response.text();
  } catch (error) {
    throw unreachable(error); // no answer, or one cut off midway
  }
  let data = null;
  let json = true;
  if (text) {
    try {
      data = JSON.parse(text);
    } catch {
      json = false;
    }
  }
  if (!response.ok) {
    const error = data && typeof data.error === "object" && data.error ? data.error : {};
    throw new ApiError(response.status, error.code || `http_${response.status}`,
      error.message || `${response.status} ${response.statusText}`.trim());
  }
  if (!json) throw new ApiError(response.status, "invalid_response", `${method} ${path}: the answer is not JSON`);
  return data;
}

const enc = encodeURIComponent;

/** `?a=1&b=2` of the params that are set ("" when none is). */
function query(params) {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) {
    if (value !== undefined && value !== null) search.set(name, String(value));
  }
  const text = search.toString();
  return text ? `?${text}` : "";
}

export const api = {
  me: () => request("GET", "/api/me"),
  login: (name, password) => request("POST", "/api/login", { name, password }),
  logout: () => request("POST", "/api/logout"),
  characters: () => request("GET", "/api/characters"),
  character: (cid) => request("GET", `/api/characters/${enc(cid)}`),
  createCharacter: (fields) => request("POST", "/api/characters", fields),
  saveCharacter: (cid, fields) => request("PUT", `/api/characters/${enc(cid)}`, fields),
  deleteCharacter: (cid) => request("DELETE", `/api/characters/${enc(cid)}`),
  copyCharacter: (cid) => request("POST", `/api/characters/${enc(cid)}/copy`, {}),
  setPicture: (cid, file) => request("PUT", `/api/characters/${enc(cid)}/picture`, file),
  removePicture: (cid) => request("DELETE", `/api/characters/${enc(cid)}/picture`),
  importCard: (file) => request("POST", "/api/characters/import", file),
  cardUrl: (cid, spec, format) => `/api/characters/${enc(cid)}/card?spec=${spec}&format=${format}`,
  send: (cid, text) => request("POST", `/api/characters/${enc(cid)}/messages`, { text }),
  session: (cid) => request("GET", `/api/characters/${enc(cid)}/session`),
  // `{before|after|around: cursor, limit}` → {messages, older, newer, origins}
  history: (cid, params = {}) => request("GET", `/api/characters/${enc(cid)}/history${query(params)}`),
  searchHistory: (cid, q, params = {}) => request("GET", `/api/characters/${enc(cid)}/history/search${query({ q, ...params })}`),
  resetSession: (cid) => request("DELETE", `/api/characters/${enc(cid)}/session`),
  state: (cid) => request("GET", `/api/characters/${enc(cid)}/state`),
  message: (id) => request("GET", `/api/messages/${enc(id)}`),
  turn: (id) => request("GET", `/api/turns/${enc(id)}`),
  reminders: (cid) => request("GET", `/api/characters/${enc(cid)}/reminders`),
  addReminder: (cid, text, dueAt) => request("POST", `/api/characters/${enc(cid)}/reminders`, { text, due_at: dueAt }),
  editReminder: (cid, id, change, options) => request("PATCH", `/api/characters/${enc(cid)}/reminders/${enc(id)}`, change, options),
  deleteReminder: (cid, id, options) => request("DELETE", `/api/characters/${enc(cid)}/reminders/${enc(id)}`, undefined, options),
  lists: (cid) => request("GET", `/api/characters/${enc(cid)}/lists`),
  renameList: (cid, name, newName) => request("PATCH", `/api/characters/${enc(cid)}/lists/${enc(name)}`, { name: newName }),
  deleteList: (cid, name, options) => request("DELETE", `/api/characters/${enc(cid)}/lists/${enc(name)}`, undefined, options),
  editItem: (cid, name, item, text) => request("PATCH", `/api/characters/${enc(cid)}/lists/${enc(name)}/items/${enc(item)}`, { text }),
  removeItem: (cid, name, item, options) => request("DELETE", `/api/characters/${enc(cid)}/lists/${enc(name)}/items/${enc(item)}`, undefined, options),
  memories: (cid, q = "") => request("GET", `/api/characters/${enc(cid)}/memories?q=${enc(q)}`),
  editMemory: (cid, id, text) => request("PUT", `/api/characters/${enc(cid)}/memories/${enc(id)}`, { text }),
  forgetMemory: (cid, id) => request("DELETE", `/api/characters/${enc(cid)}/memories/${enc(id)}`),
  forgetAllMemories: (cid) => request("DELETE", `/api/characters/${enc(cid)}/memories`),
  llm: () => request("GET", "/api/llm"),
  saveLlm: (config) => request("PUT", "/api/llm", config),
  testLlm: (config) => request("POST", "/api/llm/test", config),
  backups: () => request("GET", "/api/backups"),
  createBackup: () => request("POST", "/api/backups"),
  importExport: (document) => request("POST", "/api/imports", document),
  // the journal (design §9 /api/journal/…)
  journalDays: () => request("GET", "/api/journal/days"),
  journalDay: (date) => request("GET", `/api/journal/days/${enc(date)}`),
  journalMonth: (month) => request("GET", `/api/journal/months/${enc(month)}`),
  journalWrite: (date, { includeExisting = false, language = null } = {}) => request("POST",
    `/api/journal/days/${enc(date)}/drafts`, { include_existing: includeExisting, language }),
  journalJob: (id) => request("GET", `/api/journal/jobs/${enc(id)}`),
  journalCreate: (date, text, draftId) => request("POST", "/api/journal/entries", { date, text, draft_id: draftId || null }),
  journalEdit: (id, text, draftId = null) => request("PUT", `/api/journal/entries/${enc(id)}`, { text, draft_id: draftId }),
  journalRestore: (id, versionId) => request("POST", `/api/journal/entries/${enc(id)}/restore`, { version_id: versionId }),
  journalDelete: (id) => request("DELETE", `/api/journal/entries/${enc(id)}`),
  journalUndelete: (id) => request("POST", `/api/journal/entries/${enc(id)}/undelete`),
  journalTrash: () => request("GET", "/api/journal/trash"),
  journalImportDiary: (file) => request("POST", `/api/journal/import/diary${query({ name: file.name })}`, file),
  journalPurge: (id) => request("DELETE", `/api/journal/trash/${enc(id)}`),
  journalEntry: (id) => request("GET", `/api/journal/entries/${enc(id)}`),
  journalAddPhoto: (id, file) => request("POST", `/api/journal/entries/${enc(id)}/media${query({ name: file.name })}`, file),
  journalRemovePhoto: (assetId) => request("DELETE", `/api/journal/media/${enc(assetId)}`),
  identities: () => request("GET", "/api/privacy/identities"),
  saveIdentities: (people) => request("PUT", "/api/privacy/identities", { people }),
  previewPrivacy: (text) => request("POST", "/api/privacy/preview", { text }),
};
