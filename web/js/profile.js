// The profile page: the writing profile (core, facets, traits with locks, governance), the
// suggestions waiting for the user (accept or reject each), the copy/paste and AI review,
// the interaction profile, versions, and export/import. Every change goes through /api/profile.

import { request } from "./api.js";
import { characterName, loadCharacters, pickCharacter } from "./characters.js";
import { $, h, setStatus } from "./dom.js";
import { addStrings, errorText, formatDateTime, lang, t, translatePage } from "./i18n.js";
import { PROFILE_STRINGS } from "./profile-strings.js";

addStrings(PROFILE_STRINGS);

const P = "/api/profile";
const enc = encodeURIComponent;
const status = () => $("#profile-status");

/** Run a change; show "saved" or the server's reason; then redraw everything. */
// The page is rendered again before the status says "saved": a status seen first, then a
// re-render, would replace a field the user (or a test) already started typing into.
async function act(fn, okText = t("profile.saved")) {
  let message, kind;
  try {
    const result = await fn();
    [message, kind] = [typeof okText === "function" ? okText(result) : okText, "ok"];
  } catch (error) {
    if (error.status === 401) {
      window.location.replace("/login");
      return;
    }
    [message, kind] = [t("profile.error", { reason: errorText(error) }), "error"];
  }
  await render();
  setStatus(status(), message, kind);
}

function lockBox(checked, label, onChange) {
  const box = h("input", { type: "checkbox", "aria-label": label });
  box.checked = checked;
  box.addEventListener("change", () => onChange(box.checked));
  return box;
}

function renderProfile(profile) {
  $("#profile-lifecycle").textContent = t(`lifecycle.${profile.lifecycle}`);
  $("#profile-lifecycle").dataset.state = profile.lifecycle;
  for (const radio of document.querySelectorAll("input[name=governance]")) {
    radio.checked = radio.value === profile.governance;
  }
  $("#governance-help").textContent = t(`gov.help.${profile.governance}`);
  const core = $("#core-value");
  if (document.activeElement !== core) core.value = profile.core.value;
  $("#core-lock").checked = profile.core.locked;

  const facets = Object.entries(profile.facets);
  $("#facets").replaceChildren(...(facets.length ? facets.map(([name, facet]) => h("li", { dataset: { facet: name } },
    h("span", { class: "label", text: name }),
    h("span", { text: facet.value }),
    h("div", { class: "row" },
      h("label", { class: "check" }, lockBox(facet.locked, `${t("profile.locked")}: ${name}`, (locked) =>
        act(() => request("PUT", `${P}/locks`, { target: "facet", name, locked }))), t("profile.locked")),
      h("button", { type: "button", class: "button button-small button-danger", text: t("profile.remove"),
        onclick: () => act(() => request("DELETE", `${P}/facets/${enc(name)}`)) })),
  )) : [h("li", { class: "muted", text: t("profile.noFacets") })]));

  const scopes = ["core", ...Object.keys(profile.facets)];
  if (!scopes.includes(profile.journal_facet)) scopes.push(profile.journal_facet);
  const scopeSelect = $("#trait-scope");
  const chosen = scopeSelect.value;
  scopeSelect.replaceChildren(...scopes.map((s) => h("option", { value: s, text: s })));
  if (scopes.includes(chosen)) scopeSelect.value = chosen;
  $("#seed-catalog").replaceChildren(...profile.seed_catalog.map((key) => h("option", { value: key })));

  $("#traits").replaceChildren(...(profile.traits.length ? profile.traits.map((trait) => h("tr", { dataset: { trait: trait.key } },
    h("td", { text: trait.key }),
    h("td", { class: "value", text: trait.value }),
    h("td", { text: trait.scope }),
    h("td", { text: t(`origin.${trait.origin}`) }),
    h("td", {}, lockBox(trait.locked, `${t("profile.locked")}: ${trait.key}`, (locked) =>
      act(() => request("PUT", `${P}/locks`, { target: "trait", name: trait.trait_id, locked })))),
    h("td", {}, h("button", { type: "button", class: "button button-small button-danger", text: t("profile.remove"),
      onclick: () => act(() => request("DELETE", `${P}/traits/${enc(trait.trait_id)}`)) })),
  )) : [h("tr", {}, h("td", { colspan: "6", class: "muted", text: t("profile.noTraits") }))]));
  return profile;
}

function currentValue(profile, change) {
  if (change.target === "core") return profile.core.value;
  if (change.target === "facet") return profile.facets[change.key]?.value;
  const trait = profile.traits.find((x) => x.trait_id === change.trait_id) ||
    profile.traits.find((x) => x.key.toLowerCase() === String(change.key || "").toLowerCase());
  return trait?.value;
}

function changeText(change) {
  const name = change.target === "core" ? t("profile.core") : change.key || change.trait_id || change.keys.join(" + ");
  const value = change.value ? `: ${change.value}` : change.scope ? ` → ${change.scope}` : "";
  return `${change.action} ${name}${value}`;
}

function renderProposals(profile, proposals) {
  const open = proposals.filter((p) => p.changes.some((c) => c.status === "pending"));
  $("#proposals").replaceChildren(...(open.length ? open.map((proposal) => {
    const decide = (verb, ids) => act(() => request("POST", `${P}/proposals/${enc(proposal.proposal_id)}/${verb}`, ids ? { change_ids: ids } : undefined));
    const mode = proposal.mode === "initial_build" ? t("review.initial") : t("review.review");
    return h("div", { class: "proposal", dataset: { proposal: proposal.proposal_id } },
      h("p", { text: t("proposal.title", { mode, via: t(`via.${proposal.via}`), summary: proposal.summary || "—" }) }),
      proposal.unknown_refs.length ? h("p", { class: "unknown", text: t("proposal.unknown", { refs: proposal.unknown_refs.join(", ") }) }) : null,
      proposal.evidence_basis.includes("external_chat_history") ? h("p", { class: "muted small", text: t("proposal.external") }) : null,
      h("ul", {}, proposal.changes.map((change) => {
        const was = currentValue(profile, change);
        return h("li", { class: "change", dataset: { status: change.status, change: change.change_id } },
          h("span", { text: changeText(change) }),
          h("span", { class: "was", text: was ? t("change.was", { value: was }) : t("change.new") }),
          change.rationale ? h("span", { class: "muted small", text: change.rationale }) : null,
          change.status === "pending" ? h("div", { class: "row" },
            h("button", { type: "button", class: "button button-small", text: t("change.accept"), onclick: () => decide("accept", [change.change_id]) }),
            h("button", { type: "button", class: "button button-small", text: t("change.reject"), onclick: () => decide("reject", [change.change_id]) }),
          ) : h("span", { class: "muted small", text: change.status }));
      })),
      h("div", { class: "row" },
        h("button", { type: "button", class: "button", onclick: () => decide("accept"),
          text: proposal.mode === "initial_build" ? t("proposal.adoptBaseline") : t("proposal.acceptAll") }),
        h("button", { type: "button", class: "button", text: t("proposal.rejectAll"), onclick: () => decide("reject") })));
  }) : [h("p", { class: "muted", text: t("profile.noPending") })]));
}

function renderVersions(versions) {
  $("#versions").replaceChildren(...(versions.length ? versions.map((v) => h("li", { value: v.version,
    text: t("version.line", { version: v.version, when: formatDateTime(v.created_at), reason: v.reason }) }))
    : [h("li", { class: "muted", text: t("profile.noVersions") })]));
}

function renderInteraction(current) {
  $("#interaction-governance").value = current.governance;
  const own = current.prefs;
  const rows = current.defaults.map((d) => h("li", { dataset: { pref: d.key } },
    h("span", { class: "label", text: own[d.key] ? `${own[d.key].value} (${t("interaction.own")})` : `${d.value} (${t("interaction.default")})` }),
    h("form", { class: "row", onsubmit: (event) => {
      event.preventDefault();
      const value = event.target.elements.value.value;
      act(() => request("PUT", `${P}/interaction/prefs/${enc(d.key)}?lang=${lang}`, { value }));
    } },
      h("input", { name: "value", required: true, "aria-label": d.key, placeholder: d.value }),
      h("button", { type: "submit", class: "button button-small", text: t("profile.save") }),
      own[d.key] ? h("button", { type: "button", class: "button button-small", text: t("interaction.reset"),
        onclick: () => act(() => request("DELETE", `${P}/interaction/prefs/${enc(d.key)}`)) }) : null)));
  const suggestions = current.suggestions.map((s) => h("li", { dataset: { suggestion: s.suggestion_id } },
    h("span", { text: `${s.key}: ${t("interaction.suggested", { value: s.value })}` }),
    h("div", { class: "row" },
      h("button", { type: "button", class: "button button-small", text: t("change.accept"),
        onclick: () => act(() => request("POST", `${P}/interaction/suggestions/${enc(s.suggestion_id)}/accept`)) }),
      h("button", { type: "button", class: "button button-small", text: t("change.reject"),
        onclick: () => act(() => request("POST", `${P}/interaction/suggestions/${enc(s.suggestion_id)}/reject`)) }))));
  $("#interaction").replaceChildren(...rows, ...suggestions);
}

async function render() {
  try {
    const [evidence, profile, proposals, versions, current] = await Promise.all([
      request("GET", `${P}/evidence`), request("GET", P), request("GET", `${P}/proposals`),
      request("GET", `${P}/versions`), request("GET", `${P}/interaction?lang=${lang}`)]);
    $("#review-due").hidden = !evidence.new_since_review;
    $("#review-due").textContent = t(evidence.review_due ? "review.due" : "review.newTexts",
      { count: evidence.new_since_review });
    renderProfile(profile);
    renderProposals(profile, proposals);
    renderVersions(versions);
    renderInteraction(current);
    document.body.dataset.ready = "true";
  } catch (error) {
    if (error.status === 401) window.location.replace("/login");
    else setStatus(status(), t("profile.error", { reason: errorText(error) }), "error");
  }
}

function bind() {
  $("#governance").addEventListener("change", (event) =>
    act(() => request("PUT", `${P}/governance`, { governance: event.target.value })));
  $("#core-form").addEventListener("submit", (event) => {
    event.preventDefault();
    act(() => request("PUT", `${P}/core`, { value: $("#core-value").value }));
  });
  $("#core-lock").addEventListener("change", (event) =>
    act(() => request("PUT", `${P}/locks`, { target: "core", locked: event.target.checked })));
  $("#facet-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const name = $("#facet-name").value.trim();
    act(async () => {
      await request("PUT", `${P}/facets/${enc(name)}`, { value: $("#facet-value").value });
      event.target.reset();
    });
  });
  $("#trait-form").addEventListener("submit", (event) => {
    event.preventDefault();
    act(async () => {
      await request("POST", `${P}/traits`, { key: $("#trait-key").value, value: $("#trait-value").value, scope: $("#trait-scope").value });
      $("#trait-key").value = "";
      $("#trait-value").value = "";
    });
  });
  $("#make-prompt").addEventListener("click", () => act(async () => {
    const answer = await request("GET", `${P}/package?mode=${enc($("#review-mode").value)}`);
    $("#prompt-text").value = answer.prompt;
    $("#prompt-size").textContent = t("review.size", { chars: answer.chars, max: answer.max_chars });
    $("#prompt-box").hidden = false;
  }, ""));
  $("#copy-prompt").addEventListener("click", async () => {
    $("#prompt-text").select();
    try {
      await navigator.clipboard.writeText($("#prompt-text").value);
    } catch {
      document.execCommand("copy");
    }
    setStatus(status(), t("review.copied"), "ok");
  });
  $("#result-form").addEventListener("submit", (event) => {
    event.preventDefault();
    act(async () => {
      const proposal = await request("POST", `${P}/results`, { text: $("#result-text").value });
      $("#result-text").value = "";
      return proposal;
    }, (proposal) => t("review.imported", { count: proposal.changes.filter((c) => c.status === "pending").length }));
  });
  $("#ai-review").addEventListener("click", () => act(async () => request("POST", `${P}/review`, { mode: $("#review-mode").value }),
    (answer) => (answer.proposal ? t("review.imported", { count: answer.proposal.changes.filter((c) => c.status === "pending").length })
      : t("review.none", { reason: answer.message }))));
  $("#interaction-governance").addEventListener("change", (event) =>
    act(() => request("PUT", `${P}/interaction/governance`, { governance: event.target.value })));
  $("#import-file").addEventListener("change", async (event) => {
    const file = event.target.files[0];
    if (!file) return;
    const text = await file.text();
    event.target.value = "";
    act(() => request("POST", `${P}/import`, text, { raw: true }), t("profile.importedFile"));
  });
}

async function start() {
  // The interaction profile says how the character answers: its name is the definition's.
  const wanted = new URLSearchParams(window.location.search).get("character");
  translatePage(document, { name: characterName(pickCharacter(await loadCharacters(), wanted)) });
  document.title = `${t("profile.title")} · Novaberg`;
  bind();
  await render();
}

start();
