"""The one place that encodes read models (the rooms' msgspec structs) for the wire.

Two encodings, each kept byte for byte as its routes have always answered (the golden wire,
`tests/test_golden_api.py`, holds them):

- `answer`: aiohttp's `json_response` (`json.dumps`: separators ", " / ": ", non-ASCII as
  `\\uXXXX`) — most routes;
- `compact`: msgspec's own encoding (no spaces, UTF-8) — the characters routes.

A struct's field order is its key order, and `omit_defaults`/`UNSET` fields are left out, as
`msgspec.to_builtins` does.
"""

from __future__ import annotations

from collections.abc import Mapping

import msgspec
from aiohttp import web

_COMPACT = msgspec.json.Encoder()


def builtins(value: object) -> object:
    """`value` (structs, lists and dicts of them) as plain JSON values, in field order."""
    return msgspec.to_builtins(value)


def answer(
    value: object, status: int = 200, headers: Mapping[str, str] | None = None
) -> web.Response:
    return web.json_response(builtins(value), status=status, headers=headers)


def compact(value: object, status: int = 200) -> web.Response:
    return web.Response(body=_COMPACT.encode(value), status=status, content_type="application/json")
