"""`/api/profile/…` (issue 16): the writing profile, its review and the portability of both
profiles; the interaction profile's own routes are `app.api.interaction`. Handlers validate,
call `app.profiles.writing` and answer; every input is checked before anything is written,
and a refused request writes nothing. The input checks shared by both profiles' routes
(names, texts, governance) are here.

One module: the writing profile's routes and the input checks both profiles' routes share
(names, texts, governance), read beside the handlers that use them.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec
from aiohttp import web

from app.api.app_keys import GATEWAY, PROFILES, SETTINGS
from app.api.errors import ApiError, Handler
from app.api.middleware import USER_ID
from app.api.validation import bounded_text, read_body, read_json
from app.api.wire import answer
from app.core import json_input
from app.llm.errors import ModelError
from app.llm.privacy import EgressRefused
from app.profiles.governance import NAME, Governance, InvalidName, clean_label
from app.profiles.writing import model, review
from app.profiles.writing import package as pkg
from app.profiles.writing.model import Change
from app.profiles.writing.store import reason


class TextIn(msgspec.Struct, forbid_unknown_fields=True):
    value: str


class TraitIn(msgspec.Struct, forbid_unknown_fields=True):
    key: str
    value: str
    scope: str = model.CORE_SCOPE


class TraitEditIn(msgspec.Struct, forbid_unknown_fields=True):
    value: str | None = None
    scope: str | None = None


class LockIn(msgspec.Struct, forbid_unknown_fields=True):
    target: Literal["core", "facet", "trait"]
    locked: bool
    name: str = ""


class GovernanceIn(msgspec.Struct, forbid_unknown_fields=True):
    governance: Governance


def profile_text(request: web.Request, raw: str, noun: str) -> str:
    return bounded_text(
        raw,
        limit=request.app[SETTINGS].max_message_chars,
        noun=noun,
        empty_code="empty_value",
        long_code="value_too_long",
        user_id=request[USER_ID],
    )


def facet_name(raw: str) -> str:
    """A facet's name as the user wrote it (free text: "Tagebuch"); its key is derived by
    the model (`app.profiles.governance.derive_key`)."""
    try:
        return clean_label(raw)
    except InvalidName as exc:
        raise ApiError(400, "invalid_name", f"a facet's name: {exc}") from None


def pref_key(raw: str) -> str:
    """An interaction preference's key: the product's own snake_case names (not free text:
    the product defaults and the responder's hint are keyed by them)."""
    if not NAME.fullmatch(raw):
        raise ApiError(
            400,
            "invalid_name",
            f"{raw[:80]!r} is not a preference key (lower-case letters, digits, _; at most 64)",
        )
    return raw


def trait_key(raw: str) -> str:
    """A trait's name as the user wrote it (free text), like a facet's."""
    try:
        return clean_label(raw)
    except InvalidName as exc:
        raise ApiError(400, "invalid_key", f"a trait's name: {exc}") from None


def scope_name(raw: str) -> str:
    return raw if raw == model.CORE_SCOPE else facet_name(raw)


def _shown(trait: model.Trait) -> str:
    return trait.label or trait.key


async def _overview(request: web.Request, status: int = 200) -> web.Response:
    return answer(await request.app[PROFILES].overview(request[USER_ID]), status=status)


# --- the writing profile ------------------------------------------------------------------------


async def get_profile(request: web.Request) -> web.Response:
    return await _overview(request)


async def put_core(request: web.Request) -> web.Response:
    body = await read_json(request, TextIn)
    change = Change("update", "core", value=profile_text(request, body.value, "core"))
    await request.app[PROFILES].edit(request[USER_ID], change, reason("core_edited"))
    return await _overview(request)


async def put_facet(request: web.Request) -> web.Response:
    """Add or edit the facet `{name}`: its key or its name as written (free text; a new
    facet's key is derived from it)."""
    name = facet_name(request.match_info["name"])
    body = await read_json(request, TextIn)
    state = await request.app[PROFILES].store.state(request[USER_ID])
    key = state.profile.facet_key(name)
    action = "update" if key is not None else "add"
    shown = (state.profile.facets[key].label or key) if key is not None else name
    change = Change(action, "facet", key=name, value=profile_text(request, body.value, "facet"))
    await request.app[PROFILES].edit(
        request[USER_ID], change, reason(f"facet_{'edited' if key else 'added'}", name=shown)
    )
    return await _overview(request)


async def delete_facet(request: web.Request) -> web.Response:
    name = facet_name(request.match_info["name"])
    profile = (await request.app[PROFILES].store.state(request[USER_ID])).profile
    key = profile.facet_key(name)
    if key is None:
        raise ApiError(404, "not_found", f"no facet {name!r}")
    await request.app[PROFILES].edit(
        request[USER_ID],
        Change("remove", "facet", key=key),
        reason("facet_removed", name=profile.facets[key].label or key),
    )
    return await _overview(request)


async def add_trait(request: web.Request) -> web.Response:
    body = await read_json(request, TraitIn)
    change = Change(
        "add",
        "trait",
        key=trait_key(body.key),
        scope=scope_name(body.scope),
        value=profile_text(request, body.value, "trait value"),
    )
    await request.app[PROFILES].edit(
        request[USER_ID], change, reason("trait_added", name=change.key or "")
    )
    return await _overview(request, 201)


async def edit_trait(request: web.Request) -> web.Response:
    trait_id = request.match_info["trait_id"]
    body = await read_json(request, TraitEditIn)
    if body.value is None and body.scope is None:
        raise ApiError(400, "invalid_request", "give a new value, a new scope or both")
    svc = request.app[PROFILES]
    trait = (await svc.store.state(request[USER_ID])).profile.trait(trait_id)
    if trait is None:
        raise ApiError(404, "not_found", f"no trait {trait_id!r}")
    changes = []
    if body.value is not None:
        changes.append(
            Change(
                "update",
                "trait",
                trait_id=trait_id,
                value=profile_text(request, body.value, "trait value"),
            )
        )
    if body.scope is not None:
        changes.append(
            Change("reclassify", "trait", trait_id=trait_id, scope=scope_name(body.scope))
        )
    await svc.edit(request[USER_ID], changes, reason("trait_edited", name=_shown(trait)))
    return await _overview(request)


async def delete_trait(request: web.Request) -> web.Response:
    trait_id = request.match_info["trait_id"]
    trait = (await request.app[PROFILES].store.state(request[USER_ID])).profile.trait(trait_id)
    if trait is None:
        raise ApiError(404, "not_found", f"no trait {trait_id!r}")
    await request.app[PROFILES].edit(
        request[USER_ID],
        Change("remove", "trait", trait_id=trait_id),
        reason("trait_removed", name=_shown(trait)),
    )
    return await _overview(request)


async def put_lock(request: web.Request) -> web.Response:
    body = await read_json(request, LockIn)
    await request.app[PROFILES].set_lock(request[USER_ID], body.target, body.name, body.locked)
    return await _overview(request)


async def put_governance(request: web.Request) -> web.Response:
    body = await read_json(request, GovernanceIn)
    await request.app[PROFILES].set_governance(request[USER_ID], body.governance)
    return await _overview(request)


async def list_versions(request: web.Request) -> web.Response:
    return answer(await request.app[PROFILES].store.versions(request[USER_ID]))


async def get_brief(request: web.Request) -> web.Response:
    svc = request.app[PROFILES]
    text = await svc.journal_brief(request[USER_ID])
    return web.json_response({"brief": text, "chars": len(text), "compiled": svc.is_compiled(text)})


# --- review: package out, result in, decisions -----------------------------------------------


class DecisionIn(msgspec.Struct, forbid_unknown_fields=True):
    change_ids: list[str] | None = None  # None: every pending change


def _mode(raw: str) -> str:
    if raw not in pkg.MODES:
        raise ApiError(400, "invalid_mode", f"mode must be one of {', '.join(pkg.MODES)}")
    return raw


def _masked(raw: str) -> bool:
    if raw not in ("true", "false"):
        raise ApiError(400, "invalid_request", "masked must be true or false")
    return raw == "true"


async def get_package(request: web.Request) -> web.Response:
    """The copy package and its prompt; masked unless `masked=false` (the user's explicit
    choice). 422 `privacy_blocked` when a registered name survives the masking."""
    mode = _mode(request.query.get("mode", "review"))
    masked = _masked(request.query.get("masked", "true"))
    try:
        made = await request.app[PROFILES].copy_package(request[USER_ID], mode, masked=masked)
    except EgressRefused as exc:
        raise ApiError(422, exc.code, exc.message) from None
    return web.json_response(
        {
            "package": made.package,
            "prompt": made.prompt,
            "chars": len(pkg.dumps(made.package)),
            "max_chars": request.app[SETTINGS].profile_package_chars,
            "masked": made.masked,
            "package_id": made.package_id,
            "placeholders": made.placeholders,
        }
    )


async def import_result(request: web.Request) -> web.Response:
    """The pasted result: the JSON itself as the body (or `{"text": "<pasted text>"}`)."""
    body = await read_body(request)
    if not body.strip():
        raise ApiError(400, "invalid_json", "paste the model's answer")
    try:
        raw: Any = json_input.decode(body)
    except json_input.HasNul as exc:
        raise ApiError(400, "invalid_request", str(exc)) from None
    except json_input.NotJson:
        raw = body  # let the result reader say what is wrong
    if isinstance(raw, dict) and set(raw) == {"text"} and isinstance(raw["text"], str):
        raw = raw["text"]
    # A result that cannot become a proposal (`pkg.ResultInvalid`) is answered as it is.
    proposal = await request.app[PROFILES].import_result(request[USER_ID], raw, via="paste")
    return answer(proposal, status=201)


async def list_proposals(request: web.Request) -> web.Response:
    return answer(await request.app[PROFILES].store.proposals(request[USER_ID]))


async def get_proposal(request: web.Request) -> web.Response:
    return answer(
        await request.app[PROFILES].store.proposal(
            request[USER_ID], request.match_info["proposal_id"]
        )
    )


async def _decide(request: web.Request, accept: bool) -> web.Response:
    body = await read_json(request, DecisionIn, empty=DecisionIn())
    proposal = await request.app[PROFILES].store.decide(
        request[USER_ID], request.match_info["proposal_id"], body.change_ids, accept
    )
    return answer(proposal)


async def accept_changes(request: web.Request) -> web.Response:
    return await _decide(request, True)


async def reject_changes(request: web.Request) -> web.Response:
    return await _decide(request, False)


class ReviewIn(msgspec.Struct, forbid_unknown_fields=True):
    mode: Literal["initial_build", "review"] = "review"


async def ai_review(request: web.Request) -> web.Response:
    """The explicit AI review: 201 with the proposal, or 200 with `proposal: null` and the
    reason when the model proposed nothing to apply."""
    body = await read_json(request, ReviewIn, empty=ReviewIn())
    try:
        proposal = await review.run_review(
            request.app[PROFILES], request.app[GATEWAY], request[USER_ID], body.mode
        )
    except ModelError as exc:
        raise ApiError(exc.http_status, exc.code, exc.message) from None
    except pkg.ResultInvalid as exc:
        if exc.code != "nothing_to_apply":
            raise  # answered as it is
        return web.json_response({"proposal": None, "code": exc.code, "message": exc.message})
    return answer({"proposal": proposal, "message": proposal.summary}, status=201)


async def list_evidence(request: web.Request) -> web.Response:
    """Review candidates, after collecting new ones from the user's texts."""
    svc, user_id = request.app[PROFILES], request[USER_ID]
    added = await svc.collect_evidence(user_id)
    fresh = await svc.store.new_since_review(user_id)
    return answer(
        {
            "added": added,
            "evidence": await svc.store.evidence(user_id),
            "new_since_review": fresh,
            "review_due": fresh >= request.app[SETTINGS].profile_review_ready_evidence,
        }
    )


# --- portability --------------------------------------------------------------------------------

EXPORT_KINDS = ("writing", "interaction", "all")


async def export_profiles(request: web.Request) -> web.Response:
    kind = request.query.get("kind", "all")
    if kind not in EXPORT_KINDS:
        raise ApiError(400, "invalid_kind", "kind must be writing, interaction or all")
    document = await request.app[PROFILES].export(request[USER_ID], kind)
    return web.json_response(
        document,
        headers={"Content-Disposition": f'attachment; filename="novaberg-profile-{kind}.json"'},
    )


async def import_profiles(request: web.Request) -> web.Response:
    # A document that cannot be imported (`PortableError`) is answered as it is.
    await request.app[PROFILES].import_document(request[USER_ID], await read_body(request))
    return await _overview(request)


def routes() -> list[tuple[str, str, Handler]]:
    return [
        ("GET", "/api/profile", get_profile),
        ("PUT", "/api/profile/core", put_core),
        ("PUT", "/api/profile/facets/{name}", put_facet),
        ("DELETE", "/api/profile/facets/{name}", delete_facet),
        ("POST", "/api/profile/traits", add_trait),
        ("PUT", "/api/profile/traits/{trait_id}", edit_trait),
        ("DELETE", "/api/profile/traits/{trait_id}", delete_trait),
        ("PUT", "/api/profile/locks", put_lock),
        ("PUT", "/api/profile/governance", put_governance),
        ("GET", "/api/profile/versions", list_versions),
        ("GET", "/api/profile/brief", get_brief),
        ("GET", "/api/profile/package", get_package),
        ("POST", "/api/profile/results", import_result),
        ("POST", "/api/profile/review", ai_review),
        ("GET", "/api/profile/evidence", list_evidence),
        ("GET", "/api/profile/export", export_profiles),
        ("POST", "/api/profile/import", import_profiles),
        ("GET", "/api/profile/proposals", list_proposals),
        ("GET", "/api/profile/proposals/{proposal_id}", get_proposal),
        ("POST", "/api/profile/proposals/{proposal_id}/accept", accept_changes),
        ("POST", "/api/profile/proposals/{proposal_id}/reject", reject_changes),
    ]


def setup(app: web.Application) -> None:
    for method, path, handler in routes():
        app.router.add_route(method, path, handler)
