"""`/api/profile/interaction/…` (issue 16): the interaction profile — the user's preferences
for how the character talks with them, observed ones under governance, and the suggestions
to accept or reject (`app.profiles.interaction`). Input is checked as in `app.api.profile`; a refused
request writes nothing.
"""

from __future__ import annotations

import msgspec
from aiohttp import web

from app.api.app_keys import INTERACTIONS
from app.api.errors import ApiError, Handler
from app.api.middleware import USER_ID
from app.api.profile import GovernanceIn, TextIn, pref_key, profile_text
from app.api.validation import read_json
from app.api.wire import answer
from app.profiles.interaction import profile as interaction
from app.profiles.interaction.profile import InteractionProfile
from app.storage.errors import Missing

MAX_NOTE_CHARS = 500


# --- the interaction profile --------------------------------------------------------------------


class ObservationIn(msgspec.Struct, forbid_unknown_fields=True):
    key: str
    value: str
    note: str = ""


def _language(request: web.Request) -> str:
    return request.query.get("lang", "en")


async def _interaction_response(
    request: web.Request, outcome: str | msgspec.UnsetType = msgspec.UNSET
) -> web.Response:
    current = await request.app[INTERACTIONS].current(request[USER_ID])
    view = interaction.describe(current, _language(request))
    return answer(msgspec.structs.replace(view, outcome=outcome))


async def get_interaction(request: web.Request) -> web.Response:
    return await _interaction_response(request)


async def put_interaction_pref(request: web.Request) -> web.Response:
    key = pref_key(request.match_info["key"])
    body = await read_json(request, TextIn)
    value = profile_text(request, body.value, "preference")
    await request.app[INTERACTIONS].edit(
        request[USER_ID], lambda p: interaction.set_pref(p, key, value, "manual")
    )
    return await _interaction_response(request)


async def delete_interaction_pref(request: web.Request) -> web.Response:
    key = pref_key(request.match_info["key"])

    def drop(profile: InteractionProfile) -> None:
        if profile.prefs.pop(key, None) is None:
            raise Missing(f"no preference {key!r}")

    await request.app[INTERACTIONS].edit(request[USER_ID], drop)
    return await _interaction_response(request)


async def put_interaction_governance(request: web.Request) -> web.Response:
    body = await read_json(request, GovernanceIn)

    def govern(profile: InteractionProfile) -> None:
        profile.governance = body.governance

    await request.app[INTERACTIONS].edit(request[USER_ID], govern)
    return await _interaction_response(request)


async def post_observation(request: web.Request) -> web.Response:
    """An observed preference (an explicit one, never silence), under governance."""
    body = await read_json(request, ObservationIn)
    key = pref_key(body.key)
    value = profile_text(request, body.value, "observation")
    if len(body.note) > MAX_NOTE_CHARS:
        raise ApiError(413, "note_too_long", f"a note has at most {MAX_NOTE_CHARS} characters")
    outcome: list[str] = []
    await request.app[INTERACTIONS].edit(
        request[USER_ID],
        lambda p: outcome.append(interaction.observe(p, key, value, body.note.strip())),
    )
    return await _interaction_response(request, outcome=outcome[0])


async def _decide_suggestion(request: web.Request, accept: bool) -> web.Response:
    suggestion_id = request.match_info["suggestion_id"]

    def decide(profile: InteractionProfile) -> None:
        if not interaction.decide(profile, suggestion_id, accept):
            raise Missing(f"no suggestion {suggestion_id!r}")

    await request.app[INTERACTIONS].edit(request[USER_ID], decide)
    return await _interaction_response(request)


async def accept_suggestion(request: web.Request) -> web.Response:
    return await _decide_suggestion(request, True)


async def reject_suggestion(request: web.Request) -> web.Response:
    return await _decide_suggestion(request, False)


def routes() -> list[tuple[str, str, Handler]]:
    return [
        ("GET", "/api/profile/interaction", get_interaction),
        ("PUT", "/api/profile/interaction/prefs/{key}", put_interaction_pref),
        ("DELETE", "/api/profile/interaction/prefs/{key}", delete_interaction_pref),
        ("PUT", "/api/profile/interaction/governance", put_interaction_governance),
        ("POST", "/api/profile/interaction/observations", post_observation),
        ("POST", "/api/profile/interaction/suggestions/{suggestion_id}/accept", accept_suggestion),
        ("POST", "/api/profile/interaction/suggestions/{suggestion_id}/reject", reject_suggestion),
    ]


def setup(app: web.Application) -> None:
    for method, path, handler in routes():
        app.router.add_route(method, path, handler)
