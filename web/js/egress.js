// The Privacy tab's "What left this machine": the log of the model calls the gateway made
// (GET /api/privacy/egress, app/llm/egress_log.py), by day — a summary line ("Today: 14
// calls to OpenRouter; 23 names and 2 addresses masked, 0 refused."), the calls of the day
// (paged: "More"), a filter by purpose, the export (JSON, CSV) and "Clear" behind the app's
// confirm dialog. Local endpoints are listed too, marked local (nothing masked, by design).
// The log holds counts and machine names only: nothing here can show a name or a prompt.

import { api } from "./api.js";
import { $, h, setStatus } from "./dom.js";
import { countText, errorText, formatDay, formatNumber, formatTime, t } from "./i18n.js";

/** The count word of each masked kind (app/llm/privacy/spans.py KINDS), in the summary's order. */
export const KIND_UNITS = { PERSON: "egressNames", ADDRESS: "egressAddresses", PHONE: "egressPhones",
                            EMAIL: "egressEmails", IBAN: "egressIbans", TAXID: "egressTaxIds",
                            BIRTHDATE: "egressBirthdates", PLATE: "egressPlates", URL: "egressLinks" };

/** Well-known hosted endpoints by the name their users know them by ("calls to OpenRouter");
 * any other endpoint is shown as its host and port. */
export const KNOWN_ENDPOINTS = { "openrouter.ai": "OpenRouter", "api.openai.com": "OpenAI",
                                 "api.mistral.ai": "Mistral", "api.groq.com": "Groq",
                                 "api.together.xyz": "Together AI", "api.deepseek.com": "DeepSeek" };

export function endpointName(endpoint) {
  return KNOWN_ENDPOINTS[endpoint] ?? endpoint;
}

/** "23 names and 2 addresses" (or "nothing"): what the masking replaced, by kind. */
export function maskedText(masked) {
  const parts = Object.keys(KIND_UNITS).filter((kind) => masked[kind] > 0)
    .map((kind) => countText(KIND_UNITS[kind], masked[kind]));
  const other = Object.entries(masked).filter(([kind, n]) => !(kind in KIND_UNITS) && n > 0)
    .reduce((sum, [, n]) => sum + n, 0);
  if (other) parts.push(countText("egressOther", other));
  if (!parts.length) return t("egress.nothingMasked");
  return parts.length === 1 ? parts[0]
    : t("egress.and", { list: parts.slice(0, -1).join(", "), last: parts[parts.length - 1] });
}

/** One endpoint of the day: "14 calls to openrouter.ai" or "3 calls to 127.0.0.1:11434 (local)". */
function endpointText(endpoint) {
  const calls = countText("egressCalls", endpoint.calls);
  return t(endpoint.remote ? "egress.toRemote" : "egress.toLocal", { calls, endpoint: endpointName(endpoint.endpoint) });
}

/** The day in one line, as the issue asks: “Today: 14 calls to OpenRouter; 23 names and 2
 * addresses masked, 0 refused.” */
export function summaryText(day, summary, today) {
  const when = day === today ? t("egress.today") : formatDay(new Date(`${day}T12:00:00`));
  if (!summary.calls) return t("egress.none", { when });
  const refused = summary.refused.gate + summary.refused.reply;
  return t("egress.summary", {
    when,
    endpoints: summary.endpoints.map(endpointText).join(", "),
    masked: maskedText(summary.masked),
    refused: formatNumber(refused),
  });
}

/** One call's line: its time, purpose, endpoint (local or remote), model, tokens, what was
 * masked and whether something refused. */
export function callText(call) {
  const where = t(call.remote ? "egress.remote" : "egress.local");
  const parts = [formatTime(call.at), call.purpose, `${endpointName(call.endpoint)} (${where})`];
  if (call.model) parts.push(call.model);
  parts.push(t("egress.tokens", { tokensIn: formatNumber(call.tokens_in ?? 0), tokensOut: formatNumber(call.tokens_out ?? 0) }));
  parts.push(call.remote ? maskedText(call.masked) : t("egress.localNothingMasked"));
  if (call.refused) parts.push(t(`egress.refused.${call.refused}`));
  else if (call.outcome !== "ok") parts.push(t("egress.failed", { code: call.error_code || call.outcome }));
  return parts.join(" · ");
}

export class EgressSection {
  constructor() {
    this.day = $("#egress-day");
    this.purpose = $("#egress-purpose");
    this.list = $("#egress-calls");
    this.status = $("#egress-status");
    this.more = $("#egress-more");
    this.nextOffset = null;
    this.day.addEventListener("change", () => this.load(this.day.value || null));
    this.purpose.addEventListener("change", () => this.load(this.day.value || null));
    this.more.addEventListener("click", () => this.show(this.nextOffset));
    const dialog = $("#egress-clear-dialog");
    $("#egress-clear").addEventListener("click", () => dialog.showModal());
    dialog.addEventListener("close", () => {
      if (dialog.returnValue === "confirm") this.clear();
      dialog.returnValue = "";
    });
  }

  /** The log of `day` (null: the server's today for the user). */
  async load(day = null) {
    this.wanted = day;
    await this.show(0);
  }

  query(offset) {
    const params = new URLSearchParams();
    if (this.wanted) params.set("day", this.wanted);
    if (this.purpose.value) params.set("purpose", this.purpose.value);
    if (offset) params.set("offset", String(offset));
    return params.toString();
  }

  async show(offset) {
    setStatus(this.status, "");
    let found;
    try {
      found = await api.egress(this.query(offset));
    } catch (error) {
      setStatus(this.status, t("error.generic", { reason: errorText(error) }), "error");
      return;
    }
    if (!this.wanted) this.today = found.day;
    this.day.value = found.day;
    this.fillPurposes(found.purposes, found.purpose);
    $("#egress-summary").textContent = summaryText(found.day, found.summary, this.today);
    const lines = found.calls.map((call) => h("li", { class: call.remote ? "egress-call remote" : "egress-call local", text: callText(call) }));
    if (offset) this.list.append(...lines);
    else this.list.replaceChildren(...lines);
    this.nextOffset = found.next_offset;
    this.more.hidden = found.next_offset === null;
    this.setExport(found.day);
  }

  fillPurposes(purposes, chosen) {
    const options = [h("option", { value: "", text: t("egress.allPurposes") })];
    const all = chosen && !purposes.includes(chosen) ? [...purposes, chosen] : purposes;
    for (const purpose of all) options.push(h("option", { value: purpose, text: purpose }));
    this.purpose.replaceChildren(...options);
    this.purpose.value = chosen || "";
  }

  setExport(day) {
    for (const format of ["json", "csv"]) {
      const params = new URLSearchParams({ format, day });
      if (this.purpose.value) params.set("purpose", this.purpose.value);
      $(`#egress-export-${format}`).href = `/api/privacy/egress/export?${params}`;
    }
  }

  async clear() {
    try {
      const result = await api.clearEgress();
      setStatus(this.status, t("egress.cleared", { count: formatNumber(result.deleted) }), "ok");
    } catch (error) {
      setStatus(this.status, t("error.generic", { reason: errorText(error) }), "error");
      return;
    }
    this.purpose.value = "";
    const status = this.status.textContent;
    await this.load(this.wanted);
    setStatus(this.status, status, "ok");
  }
}
