// The profile page: a short introduction, the writing profile (core, facets, traits with locks,
// governance), the suggestions waiting for the user (accept or reject each), the copy/paste and
// AI review (the copied prompt masked unless the user chooses otherwise), the interaction
// profile, versions, and export/import. Every change goes through /api/profile. Names are shown
// as the user wrote them; the profile's own ids (`core`, `autobiographical_journal`, the seed's
// trait keys) in the page's language.

import { request } from "./api.js";
import { characterName, loadCharacters, pickCharacter } from "./characters.js";
import { $, h, setStatus } from "./dom.js";
import { addStrings, errorText, formatDateTime, lang, t, translatePage } from "./i18n.js";
import { PROFILE_STRINGS } from "./profile-strings.js";

addStrings(PROFILE_STRINGS);

const P = "/api/profile";
const enc = encodeURIComponent;
const status = () => $("#profile-status");
const JOURNAL_FACET = "autobiographical_journal";
let catalog = [];

/** A facet's or scope's name as the page shows it: the user's own, else the id's label. */
function scopeLabel(profile, key) {
  if (key === "core") return t("scope.core");
  const label = profile.facets[key]?.label;
  if (label) return label;
  return key === JOURNAL_FACET ? t(`facet.${key}`) : key;
}

/** A trait's name as the page shows it. */
function traitLabel(trait) {
  if (trait.label) return trait.label;
  return catalog.includes(trait.key) ? t(`catalog.${trait.key}`) : trait.key;
}

/** What the facet form's name means: the journal facet's shown label is its id. */
function facetNameFor(typed) {
  return typed.trim().toLowerCase() === t(`facet.${JOURNAL_FACET}`).toLowerCase() ? JOURNAL_FACET : typed.trim();
}

/** An error in the page's words (the profile's own codes first). */
const profileError = (error) => errorText(error, "profileError");

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
    [message, kind] = [t("profile.error", { reason: profileError(error) }), "error"];
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
  $("#facets").replaceChildren(...(facets.length ? facets.map(([key, facet]) => h("li", { dataset: { facet: key } },
    h("span", { class: "label", text: scopeLabel(profile, key) }),
    h("span", { text: facet.value }),
    h("div", { class: "row" },
      h("label", { class: "check" }, lockBox(facet.locked, `${t("profile.locked")}: ${scopeLabel(profile, key)}`, (locked) =>
        act(() => request("PUT", `${P}/locks`, { target: "facet", name: key, locked }))), t("profile.locked")),
      h("button", { type: "button", class: "button button-small button-danger", text: t("profile.remove"),
        onclick: () => act(() => request("DELETE", `${P}/facets/${enc(key)}`)) })),
  )) : [h("li", { class: "muted", text: t("profile.noFacets") })]));
  $("#facet-names").replaceChildren(h("option", { value: t(`facet.${JOURNAL_FACET}`) }));

  const scopes = ["core", ...Object.keys(profile.facets)];
  if (!scopes.includes(profile.journal_facet)) scopes.push(profile.journal_facet);
  const scopeSelect = $("#trait-scope");
  const chosen = scopeSelect.value;
  scopeSelect.replaceChildren(...scopes.map((s) => h("option", { value: s, text: scopeLabel(profile, s) })));
  if (scopes.includes(chosen)) scopeSelect.value = chosen;
  catalog = profile.seed_catalog;
  $("#seed-catalog").replaceChildren(...catalog.map((key) => h("option", { value: t(`catalog.${key}`) })));

  $("#traits").replaceChildren(...(profile.traits.length ? profile.traits.map((trait) => h("tr", { dataset: { trait: trait.key } },
    h("td", { text: traitLabel(trait) }),
    h("td", { class: "value", text: trait.value }),
    h("td", { text: scopeLabel(profile, trait.scope) }),
    h("td", { text: t(`origin.${trait.origin}`) }),
    h("td", {}, lockBox(trait.locked, `${t("profile.locked")}: ${traitLabel(trait)}`, (locked) =>
      act(() => request("PUT", `${P}/locks`, { target: "trait", name: trait.trait_id, locked })))),
    h("td", {}, h("button", { type: "button", class: "button button-small button-danger", text: t("profile.remove"),
      onclick: () => act(() => request("DELETE", `${P}/traits/${enc(trait.trait_id)}`)) })),
  )) : [h("tr", {}, h("td", { colspan: "6", class: "muted", text: t("profile.noTraits") }))]));
  return profile;
}

const folded = (name) => String(name || "").split(/\s+/).filter(Boolean).join(" ").toLowerCase();

function facetOf(profile, name) {
  return Object.entries(profile.facets).find(([key, f]) => key === folded(name) || folded(f.label) === folded(name));
}

function traitOf(profile, change) {
  return profile.traits.find((x) => x.trait_id === change.trait_id) ||
    profile.traits.find((x) => x.key === folded(change.key) || folded(x.label) === folded(change.key));
}

function currentValue(profile, change) {
  if (change.target === "core") return profile.core.value;
  if (change.target === "facet") return facetOf(profile, change.key)?.[1].value;
  return traitOf(profile, change)?.value;
}

function changeText(profile, change) {
  let name;
  if (change.target === "core") name = t("scope.core");
  else if (change.target === "facet") name = facetOf(profile, change.key) ? scopeLabel(profile, facetOf(profile, change.key)[0]) : change.key;
  else {
    const trait = traitOf(profile, change);
    name = trait ? traitLabel(trait) : change.key || change.keys.join(" + ");
  }
  const scope = change.scope ? scopeLabel(profile, facetOf(profile, change.scope)?.[0] || change.scope) : "";
  const value = change.value ? `: ${change.value}` : scope ? ` → ${scope}` : "";
  const action = t(`action.${change.action}`);
  return `${action} · ${name}${value}`;
}

function renderProposals(profile, proposals) {
  const open = proposals.filter((p) => p.changes.some((c) => c.status === "pending"));
  $("#proposals").replaceChildren(...(open.length ? open.map((proposal) => {
    const decide = (verb, ids) => act(() => request("POST", `${P}/proposals/${enc(proposal.proposal_id)}/${verb}`, ids ? { change_ids: ids } : undefined));
    const mode = t(`mode.${proposal.mode}`);
    return h("div", { class: "proposal", dataset: { proposal: proposal.proposal_id } },
      h("p", { text: t("proposal.title", { mode, via: t(`via.${proposal.via}`), summary: proposal.summary || "—" }) }),
      proposal.unknown_refs.length ? h("p", { class: "unknown", text: t("proposal.unknown", { refs: proposal.unknown_refs.join(", ") }) }) : null,
      proposal.evidence_basis.includes("external_chat_history") ? h("p", { class: "muted small", text: t("proposal.external") }) : null,
      h("ul", {}, proposal.changes.map((change) => {
        const was = currentValue(profile, change);
        return h("li", { class: "change", dataset: { status: change.status, change: change.change_id } },
          h("span", { text: changeText(profile, change) }),
          h("span", { class: "was", text: was ? t("change.was", { value: was }) : t("change.new") }),
          change.rationale ? h("span", { class: "muted small", text: change.rationale }) : null,
          change.status === "pending" ? h("div", { class: "row" },
            h("button", { type: "button", class: "button button-small", text: t("change.accept"), onclick: () => decide("accept", [change.change_id]) }),
            h("button", { type: "button", class: "button button-small", text: t("change.reject"), onclick: () => decide("reject", [change.change_id]) }),
          ) : h("span", { class: "muted small", text: t(`status.${change.status}`) }));
      })),
      h("div", { class: "row" },
        h("button", { type: "button", class: "button", onclick: () => decide("accept"),
          text: proposal.mode === "initial_build" ? t("proposal.adoptBaseline") : t("proposal.acceptAll") }),
        h("button", { type: "button", class: "button", text: t("proposal.rejectAll"), onclick: () => decide("reject") })));
  }) : [h("p", { class: "muted", text: t("profile.noPending") })]));
}

/** A version's reason in the page's language (stored as a code and what it names). */
function reasonText(version) {
  const args = { ...(version.reason_args || {}) };
  if (args.name === JOURNAL_FACET) args.name = t(`facet.${JOURNAL_FACET}`);
  else if (catalog.includes(args.name)) args.name = t(`catalog.${args.name}`);
  const what = args.target === "core" ? t("scope.core") : args.name || "";
  return t(`version.${version.reason}`, { ...args, what });
}

function renderVersions(versions) {
  $("#versions").hidden = !versions.length;
  $("#versions-empty").hidden = Boolean(versions.length);
  $("#versions").replaceChildren(...versions.map((v) => h("li", { value: v.version,
    text: t("version.line", { version: v.version, when: formatDateTime(v.created_at), reason: reasonText(v) }) })));
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
    else setStatus(status(), t("profile.error", { reason: profileError(error) }), "error");
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
    const name = facetNameFor($("#facet-name").value);
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
    const masked = !$("#unmasked").checked;
    const answer = await request("GET", `${P}/package?mode=${enc($("#review-mode").value)}&masked=${masked}`);
    $("#prompt-text").value = answer.prompt;
    $("#prompt-size").textContent = t("review.size", { chars: answer.chars, max: answer.max_chars });
    const count = Object.values(answer.placeholders).reduce((a, b) => a + b, 0);
    const masking = $("#prompt-masking");
    masking.textContent = !answer.masked ? t("review.unmaskedWarning") : count ? t("review.masked", { count }) : t("review.maskedNone");
    masking.className = answer.masked ? "muted small" : "notice";
    masking.dataset.masked = String(answer.masked);
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
      : t("review.none", { reason: profileError({ code: answer.code, message: answer.message }) }))));
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
