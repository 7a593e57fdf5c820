// The settings dialog, in three tabs a person can find: Model (provider, URL and model, the
// locally detected servers offered, a connection test, the API key — typed in, never
// shown back: the server only says whether one is stored — and the task model, a select of
// the models its server lists), Privacy (privacy.js) and Backup & export (backup.js). A
// tab's content is loaded when it is shown.

import { api } from "./api.js";
import { $, h, setStatus } from "./dom.js";
import { errorText, formatNumber, t } from "./i18n.js";
import { Tabs } from "./tabs.js";

export class SettingsDialog {
  /** `sections`: the other tabs' contents by tab name, each with `load()`. */
  constructor({ isAdmin, onChanged, sections = {} }) {
    this.isAdmin = isAdmin;
    this.onChanged = onChanged;
    this.sections = sections;
    this.dialog = $("#settings-dialog");
    this.form = $("#settings-form");
    this.status = $("#settings-status");
    this.info = null;
    this.taskModels = new Set(); // every model offered for the task model so far
    this.tabs = new Tabs($("#settings-dialog [role=tablist]"), { onShow: (name) => this.loadTab(name) });
    this.bind();
  }

  bind() {
    $("#settings-close").addEventListener("click", () => this.dialog.close());
    $("#settings-test").addEventListener("click", () => this.test());
    $("#settings-provider").addEventListener("change", () => this.syncEnabled());
    $("#settings-task-url").addEventListener("change", () => this.listTaskModels());
    this.form.addEventListener("submit", (event) => {
      event.preventDefault();
      this.save();
    });
  }

  /** Open on the tab called `tab` ("model", "privacy", "backup"). */
  open(tab = "model") {
    this.dialog.showModal();
    this.tabs.show(tab, { focus: true });
  }

  loadTab(name) {
    if (name === "model") return this.loadModel();
    return this.sections[name] && this.sections[name].load();
  }

  async loadModel() {
    setStatus(this.status, "");
    $("#settings-api-key").value = "";
    // Held until the server's values are in: a choice made before they arrive would be
    // overwritten by them (seen as a provider picked at once and then reset).
    $("#settings-fields").disabled = true;
    try {
      this.fill(await api.llm());
      this.listTaskModels();
    } catch (error) {
      $("#settings-fields").disabled = !this.isAdmin;
      setStatus(this.status, t("error.generic", { reason: errorText(error) }), "error");
    }
  }

  fill(info) {
    this.info = info;
    const provider = info.provider || "offline";
    // The offline model is named as such; its URL and model fields show what is configured
    // (the model auto-detection takes, say), not nothing.
    const configured = info.configured || {};
    const shown = [provider, info.model].filter(Boolean).join(" · ");
    $("#settings-current").textContent = info.offline ? t("settings.currentOffline")
      : info.task ? t("settings.currentWithTask", { provider: shown, task: info.task.model })
        : t("settings.current", { provider: shown });
    $("#settings-provider").value = provider;
    $("#settings-url").value = info.url || configured.url || "";
    $("#settings-model").value = info.model || configured.model || "";
    $("#settings-remote").checked = Boolean(info.remote);
    $("#settings-task-url").value = configured.task_url || "";
    this.offerTaskModels([info.model, configured.model].filter(Boolean), configured.task_model || "");
    $("#settings-api-key-state").textContent = info.api_key ? t("settings.apiKeySet") : t("settings.apiKeyNone");
    this.showDetected(info.detected || []);
    const readOnly = !this.isAdmin;
    $("#settings-readonly").hidden = !readOnly;
    $("#settings-fields").disabled = readOnly;
    $("#settings-save").disabled = readOnly;
    this.syncEnabled();
  }

  syncEnabled() {
    const provider = $("#settings-provider").value;
    const offline = provider === "offline";
    $("#settings-test").disabled = offline || !this.isAdmin;
    for (const id of ["#settings-url", "#settings-model", "#settings-api-key", "#settings-remote",
                      "#settings-task-model", "#settings-task-url"]) {
      $(id).disabled = offline;
    }
    // An empty URL means the provider's default, as the server has it (the setting
    // llm_probe_<provider>_url): shown in the field, and what a test or a save then uses.
    const fallback = (this.info && this.info.default_urls && this.info.default_urls[provider]) || "";
    $("#settings-url").placeholder = fallback;
    $("#settings-model").placeholder = offline ? t("settings.modelOffline") : "";
    $("#settings-url-hint").textContent = !offline && fallback ? t("settings.urlDefault", { url: fallback }) : "";
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
    if (!$("#settings-task-url").value.trim()) this.offerTaskModels(models);
  }

  /** The task model's select: "none" (the main model does everything), then every model
   * offered so far, the chosen one kept (also one its server does not list now). */
  offerTaskModels(models, chosen = $("#settings-task-model").value) {
    this.taskModels = new Set([...this.taskModels, ...models, ...(chosen ? [chosen] : [])]);
    $("#settings-task-model").replaceChildren(
      h("option", { value: "", text: t("settings.taskModelNone") }),
      ...[...this.taskModels].map((m) => h("option", { value: m, text: m })));
    $("#settings-task-model").value = chosen;
  }

  /** Ask the task model's server (its own URL, else the main one) for its models, quietly:
   * the connection test says what fails. Only an admin may make the server ask. */
  async listTaskModels() {
    const values = this.formValues();
    if (!this.isAdmin || values.provider === "offline") return;
    try {
      const result = await api.testLlm({ provider: values.provider, url: values.taskUrl || values.url || "" });
      if (result.ok) this.offerTaskModels(result.models || []);
    } catch {
      // Nothing to offer; the select keeps what it has.
    }
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
      taskModel: $("#settings-task-model").value || null,
      taskUrl: $("#settings-task-url").value.trim() || null,
    };
  }

  async test() {
    const values = this.formValues();
    // An empty field: the server tests the provider's default, the one the field shows.
    const shown = values.url || $("#settings-url").placeholder;
    setStatus(this.status, t("settings.testing"));
    let result;
    try {
      const body = { provider: values.provider, url: values.url || "" };
      if (values.model) body.model = values.model;
      result = await api.testLlm(body);
    } catch (error) {
      setStatus(this.status, t("settings.testFailed", { url: shown, reason: errorText(error) }), "error");
      return;
    }
    if (result.ok) {
      this.offerModels(result.models || []);
      if (values.taskUrl) this.listTaskModels();
      if (!values.model && result.model) $("#settings-model").value = result.model;
      const details = [result.model, result.context_window
        ? t("settings.contextWindow", { count: formatNumber(result.context_window) }) : null].filter(Boolean).join(", ");
      setStatus(this.status, t(details ? "settings.testOkDetails" : "settings.testOk",
                               { url: result.url, details }), "ok");
    } else {
      setStatus(this.status, t("settings.testFailed", { url: result.url || shown, reason: errorText(result.error) }),
                "error");
    }
  }

  async save() {
    const values = this.formValues();
    const body = { provider: values.provider, url: values.url, model: values.model, remote: values.remote,
                   task_model: values.taskModel, task_url: values.taskUrl };
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
