"""Who may reach what, for every handler module: the caller's character of the path
(`known_character`) and the admin rule (`require_admin`). Here, not in one handler module
that the others import.

Admin is the user `local` (it exists in both modes; in headless mode only whoever holds its
token is it).
"""

from __future__ import annotations

from aiohttp import web

from app.api.app_keys import CHARACTERS
from app.api.errors import ApiError
from app.api.middleware import USER_ID
from app.auth.accounts import LOCAL_USER


def known_character(request: web.Request) -> str:
    """The `{cid}` of the path, or 404 for a character the caller does not have (nobody
    defined it, or it is another user's own)."""
    character_id = request.match_info["cid"]
    if request.app[CHARACTERS].get(request[USER_ID], character_id) is None:
        raise ApiError(404, "unknown_character", f"no character {character_id!r}")
    return character_id


def require_admin(request: web.Request) -> None:
    if request[USER_ID] != LOCAL_USER:
        raise ApiError(403, "forbidden", "only the admin (user `local`) may do this")
