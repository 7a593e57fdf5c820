// The settings dialog: provider, URL and model (the locally detected servers offered), a
// connection test, and the API key — typed in, never shown back (the server only says
// whether one is stored).

import { api } from "./api.js";
import { $, h, setStatus } from "./dom.js";
import { errorText, t } from "./i18n.js";

export class SettingsDialog {
  constructor({ isAdmin, onChanged }) {
    this.isAdmin = isAdmin;
    this.onChanged = onChanged;
    this.dialog = $("#settings-dialog");
    this.form = $("#settings-form");
    this.status = $("#settings-status");
    this.info = null;
    this.bind();
  }

  bind() {
    $("#settings-close").addEventListener("click", () => this.dialog.close());
    $("#settings-test").addEventListener("click", () => this.test());
    $("#settings-provider").addEventListener("change", () => this.syncEnabled());
    this.form.addEventListener("submit", (event) => {
      event.preventDefault();
      this.save();
    });
  }

  async open() {
    setStatus(this.status, "");
    $("#settings-api-key").value = "";
    this.dialog.showModal();
    try {
      this.fill(await api.llm());
    } catch (error) {
      setStatus(this.status, t("error.generic", { reason: errorText(error) }), "error");
    }
  }

  fill(info) {
    this.info = info;
    const provider = info.provider || "offline";
    $("#settings-current").textContent = t("settings.current", {
      provider: [provider, info.model].filter(Boolean).join(" · "),
    });
    $("#settings-provider").value = provider;
    $("#settings-url").value = info.url || "";
    $("#settings-model").value = info.model || "";
    $("#settings-remote").checked = Boolean(info.remote);
    $("#settings-api-key-state").textContent = info.api_key ? t("settings.apiKeySet") : t("settings.apiKeyNone");
    this.showDetected(info.detected || []);
    const readOnly = !this.isAdmin;
    $("#settings-readonly").hidden = !readOnly;
    $("#settings-fields").disabled = readOnly;
    $("#settings-save").disabled = readOnly;
    this.syncEnabled();
  }

  syncEnabled() {
    const offline = $("#settings-provider").value === "offline";
    $("#settings-test").disabled = offline || !this.isAdmin;
    for (const id of ["#settings-url", "#settings-model", "#settings-api-key", "#settings-remote"]) {
      $(id).disabled = offline;
    }
  }

  showDetected(detected) {
    const list = $("#settings-detected");
    const urls = $("#settings-url-options");
    urls.replaceChildren(...detected.map((d) => h("option", { value: d.url })));
    this.offerModels(detected.flatMap((d) => d.models || []));
    if (!detected.length) {
      list.replaceChildren(h("li", { class: "muted", text: t("settings.detectedNone") }));
      return;
    }
    list.replaceChildren(...detected.map((d) => h("li", {},
      h("span", { text: `${d.provider} — ${d.url}${d.models && d.models.length ? ` (${d.models.join(", ")})` : ""}` }),
      h("button", { type: "button", class: "button button-small", text: t("settings.use"), disabled: !this.isAdmin,
                    onclick: () => this.useDetected(d) }))));
  }

  offerModels(models) {
    $("#settings-model-options").replaceChildren(...[...new Set(models)].map((m) => h("option", { value: m })));
  }

  useDetected(detected) {
    $("#settings-provider").value = detected.provider;
    $("#settings-url").value = detected.url;
    if (detected.models && detected.models.length) $("#settings-model").value = detected.models[0];
    this.syncEnabled();
  }

  formValues() {
    return {
      provider: $("#settings-provider").value,
      url: $("#settings-url").value.trim() || null,
      model: $("#settings-model").value.trim() || null,
      remote: $("#settings-remote").checked,
      apiKey: $("#settings-api-key").value,
    };
  }

  async test() {
    const values = this.formValues();
    setStatus(this.status, t("settings.testing"));
    let result;
    try {
      const body = { provider: values.provider, url: values.url || "" };
      if (values.model) body.model = values.model;
      result = await api.testLlm(body);
    } catch (error) {
      setStatus(this.status, t("settings.testFailed", { reason: errorText(error) }), "error");
      return;
    }
    if (result.ok) {
      this.offerModels(result.models || []);
      if (!values.model && result.model) $("#settings-model").value = result.model;
      const extra = [result.model, result.context_window ? `${result.context_window} tokens` : null].filter(Boolean).join(", ");
      setStatus(this.status, `${t("settings.testOk")}${extra ? ` (${extra})` : ""}`, "ok");
    } else {
      setStatus(this.status, t("settings.testFailed", { reason: errorText(result.error) }), "error");
    }
  }

  async save() {
    const values = this.formValues();
    const body = { provider: values.provider, url: values.url, model: values.model, remote: values.remote };
    if (values.apiKey) body.api_key = values.apiKey;
    let info;
    try {
      info = await api.saveLlm(body);
    } catch (error) {
      setStatus(this.status, t("error.generic", { reason: errorText(error) }), "error");
      return;
    }
    $("#settings-api-key").value = ""; // typed in once, never kept in the page
    this.fill(info);
    if (info.warning) {
      // Saved, but the server does not answer: say why (e.g. model_unavailable).
      setStatus(this.status, t("settings.savedUnreachable", { reason: errorText(info.warning) }), "error");
    } else {
      setStatus(this.status, t("settings.saved"), "ok");
    }
    this.onChanged(info);
  }
}
