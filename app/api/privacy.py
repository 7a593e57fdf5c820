"""The privacy gateway's API (design §7a, §9), for the logged-in user:

- `GET /api/privacy/identities` → `{"names": [str], "people": [{"name", "aliases"}]}`
- `PUT /api/privacy/identities` `{"people": [{"name", "aliases"?}]}` or `{"names": [str]}`
  replaces the registry; 200 with the stored registry, or 400 and nothing written
  (`duplicate_name` for a name given twice — as a name or an alias, in any case — its
  message naming it; `invalid_identities` for any other bad name or list);
- `POST /api/privacy/preview` `{"text"}` → `{"masked", "spans": [{"start", "end", "kind",
  "text", "placeholder", "reason"}], "remote"}`: what would leave the machine, and why each
  part was masked (`reason`: "registered", "looks_like_name", or the kind: "IBAN", "PHONE"
  …; `text`: the characters it replaces, offsets in code points);
- `GET /api/privacy/stats` → the counters (no values, no mapping).
"""

from __future__ import annotations

from typing import Any

import msgspec
from aiohttp import web

from app.api.app_keys import GATEWAY, PRIVACY, SETTINGS
from app.api.errors import ApiError
from app.api.middleware import USER_ID
from app.api.validation import bounded_text, read_json
from app.llm.privacy import Masker, Person
from app.llm.privacy.rules import HONORIFICS

MAX_PEOPLE = 500
MAX_ALIASES = 20
MAX_NAME_CHARS = 100
MIN_NAME_CHARS = 2


class IdentitiesIn(msgspec.Struct, forbid_unknown_fields=True):
    people: list[Person] | None = None
    names: list[str] | None = None


class PreviewIn(msgspec.Struct, forbid_unknown_fields=True):
    text: str


def describe(people: list[Person]) -> dict[str, Any]:
    return {
        "names": [n for person in people for n in person.names()],
        "people": [{"name": p.name, "aliases": p.aliases} for p in people],
    }


def checked_people(body: IdentitiesIn) -> list[Person]:
    """The registry the body asks for, each name trimmed; 400 `invalid_identities` else."""
    if (body.people is None) == (body.names is None):
        raise ApiError(400, "invalid_identities", 'send either "people" or "names"')
    people = body.people if body.people is not None else [Person(n) for n in body.names or []]
    if len(people) > MAX_PEOPLE:
        raise ApiError(
            400, "invalid_identities", f"{len(people)} people; at most {MAX_PEOPLE} are kept"
        )
    seen: set[str] = set()
    result = []
    for person in people:
        if len(person.aliases) > MAX_ALIASES:
            raise ApiError(
                400,
                "invalid_identities",
                f"{len(person.aliases)} aliases; at most {MAX_ALIASES} per person",
            )
        names = [checked_name(n) for n in person.names()]
        for name in names:
            if name.casefold() in seen:
                raise ApiError(400, "duplicate_name", f"the name {name!r} is given twice")
            seen.add(name.casefold())
        result.append(Person(names[0], names[1:]))
    return result


def checked_name(raw: str) -> str:
    name = " ".join(raw.split())
    if not MIN_NAME_CHARS <= len(name) <= MAX_NAME_CHARS:
        raise ApiError(
            400,
            "invalid_identities",
            f"a name has {MIN_NAME_CHARS} to {MAX_NAME_CHARS} characters; got {len(name)}",
        )
    if not any(c.isalpha() for c in name) or any(not c.isprintable() for c in raw.strip()):
        raise ApiError(400, "invalid_identities", f"{name!r} is no name")
    if all(
        part.casefold() in HONORIFICS or part.casefold().rstrip(".") in ("dr", "prof")
        for part in name.split()
    ):
        raise ApiError(
            400, "invalid_identities", f"{name!r} is only a title or role; add the person's name"
        )
    return name


async def get_identities(request: web.Request) -> web.Response:
    people = await request.app[PRIVACY].people(request[USER_ID])
    return web.json_response(describe(people))


async def put_identities(request: web.Request) -> web.Response:
    people = checked_people(await read_json(request, IdentitiesIn))
    stored = await request.app[PRIVACY].replace(request[USER_ID], people)
    return web.json_response(describe(stored))


async def preview(request: web.Request) -> web.Response:
    body = await read_json(request, PreviewIn)
    bounded_text(
        body.text,
        limit=request.app[SETTINGS].max_message_chars,
        noun="preview text",
        empty_code="empty_text",
        long_code="text_too_long",
        user_id=request[USER_ID],
    )
    text = body.text  # as sent: the offsets refer to it
    masker = Masker(await request.app[PRIVACY].index(request[USER_ID]))
    spans = masker.spans(text)
    return web.json_response(
        {"masked": masker.mask(text), "spans": spans, "remote": request.app[GATEWAY].remote}
    )


async def stats(request: web.Request) -> web.Response:
    counters = request.app[GATEWAY].privacy_stats.of(request[USER_ID])
    return web.json_response(counters.as_dict())


def setup(app: web.Application) -> None:
    app.router.add_get("/api/privacy/identities", get_identities)
    app.router.add_put("/api/privacy/identities", put_identities)
    app.router.add_post("/api/privacy/preview", preview)
    app.router.add_get("/api/privacy/stats", stats)
