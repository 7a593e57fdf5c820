"""Messages and turns (design §9): accept a message, read a message's or a turn's state."""

from __future__ import annotations

import logging

from aiohttp import web

from app.api.access import known_character
from app.api.app_keys import GATEWAY, RECORDS, RUNTIME, SETTINGS
from app.api.errors import ApiError
from app.api.middleware import USER_ID
from app.api.validation import bounded_text, read_json
from app.core.log import fields
from app.runtime.wire import MessageIn

log = logging.getLogger(__name__)


async def post_message(request: web.Request) -> web.Response:
    """`POST /api/characters/{cid}/messages` `{"text"}` → 202 `{message_id, received_at}`.

    Validates, then hands the message to the runtime, which queues it in one Redis round
    trip: no model call, no lock. Every refusal (400, 404, 413, 429) writes nothing.
    """
    user_id = request[USER_ID]
    character_id = known_character(request)
    body = await read_json(request, MessageIn)
    text = bounded_text(
        body.text,
        limit=request.app[SETTINGS].max_message_chars,
        noun="message",
        empty_code="empty_message",
        long_code="message_too_long",
        user_id=user_id,
    )
    check_fits_model(request, text, user_id)
    runtime = request.app[RUNTIME]
    if not runtime.rate_limiter.allow(user_id):
        log.warning(
            "message refused: rate limit",
            extra=fields(
                user_id=user_id, limit=runtime.rate_limiter.rate, setting="rate_limit_per_second"
            ),
        )
        raise ApiError(
            429, "rate_limited", "too many messages per second", headers={"Retry-After": "1"}
        )
    message = await runtime.accept(user_id, character_id, text)
    return web.json_response(
        {"message_id": message.message_id, "received_at": message.received_at}, status=202
    )


def check_fits_model(request: web.Request, text: str, user_id: str) -> None:
    """413 `message_too_long_for_model` for a message the current model cannot take at all
    (it would be accepted and then always fail with `prompt_budget_exceeded`)."""
    gateway = request.app.get(GATEWAY)
    limit = gateway.message_limit() if gateway is not None else None
    if gateway is not None and limit is not None and len(text) > limit:
        log.warning(
            "message refused: too long for the model",
            extra=fields(
                user_id=user_id, chars=len(text), limit=limit, window=gateway.known_window()
            ),
        )
        raise ApiError(
            413,
            "message_too_long_for_model",
            f"the message has {len(text)} characters; the current model "
            f"(context window {gateway.known_window()} tokens) takes at most "
            f"{limit}",
        )


async def get_message(request: web.Request) -> web.Response:
    """`GET /api/messages/{message_id}` → `{message_id, turn_id|null, state}`; the state is
    `accepted` until a turn takes the message, then that turn's state."""
    records = request.app[RECORDS]
    message_id = request.match_info["message_id"]
    record = await records.message(message_id)
    if record is None or record.user_id != request[USER_ID]:
        raise ApiError(404, "not_found", f"no message {message_id!r}")
    turn_id = record.turn_id
    state = "accepted"
    if turn_id is not None:
        turn = await records.turn(turn_id)
        state = turn.state if turn is not None else "expired"
    return web.json_response({"message_id": message_id, "turn_id": turn_id, "state": state})


async def get_turn(request: web.Request) -> web.Response:
    """`GET /api/turns/{turn_id}` → `{turn_id, state, history: [{state, at}], message_ids}`."""
    records = request.app[RECORDS]
    turn_id = request.match_info["turn_id"]
    turn = await records.turn(turn_id)
    if turn is None or turn.user_id != request[USER_ID]:
        raise ApiError(404, "not_found", f"no turn {turn_id!r}")
    body: dict[str, object] = {
        "turn_id": turn.turn_id,
        "state": turn.state,
        "history": [
            {"state": entry.state, "at": entry.at} for entry in await records.history(turn_id)
        ],
        "message_ids": turn.message_ids,
        "character_id": turn.character_id,
        "origin": turn.initiator,
        "attempts": turn.attempts,
    }
    if turn.reason:
        body["reason"] = turn.reason
    return web.json_response(body)


def setup(app: web.Application) -> None:
    app.router.add_post("/api/characters/{cid}/messages", post_message)
    app.router.add_get("/api/messages/{message_id}", get_message)
    app.router.add_get("/api/turns/{turn_id}", get_turn)
