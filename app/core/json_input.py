"""Decoding JSON that comes from outside — request bodies, import files, a pasted model
answer — in one place, so that every malformed input is one error and never a crash.

msgspec decodes recursively: a body of 100 000 nested brackets raises `RecursionError`
(before, a 500 with a traceback on every route that decoded it itself), even where the
target type would have refused it at the first level. Here that is `NotJson` like any other
input that cannot be read; a value that does not fit the type is `WrongShape`. A value decoded
without a type (`Any`) may nest at most `MAX_DEPTH` levels, so that code walking it later
cannot run out of stack either.

A large document (an import of tens of megabytes) is decoded in pieces (`decode_pieces`): a
single decode holds the GIL, and the event loop with it, for as long as it takes, though it
runs on a worker thread.

No text from outside may hold U+0000 (`HasNul`): PostgreSQL cannot store it in a text
column, so on the scale-out engine a message with one was accepted and then failed to reach
the durable log. Refused here, it is one clear 400 on both engines and nothing is written.
"""

from __future__ import annotations

import functools
import typing
from typing import Any, TypeVar

import msgspec

T = TypeVar("T")
S = TypeVar("S", bound=msgspec.Struct)
MAX_DEPTH = 64  # of an untyped value; no document of ours nests more than a few levels


class JsonInputError(ValueError):
    """The input is not what was expected; the message says why (never the input itself
    beyond a short excerpt)."""


class NotJson(JsonInputError):
    """Not JSON (or nested too deeply to be read)."""


class WrongShape(JsonInputError):
    """JSON, but not of the expected type."""


NUL_REFUSED = "a text holds the character U+0000 (NUL), which is not accepted"


class HasNul(WrongShape):
    """A string of the document holds U+0000 (escaped as \\u0000; JSON has no other way)."""

    def __init__(self) -> None:
        super().__init__(NUL_REFUSED)


_NUL_ESCAPE = b"\\u0000"
NUL_SCAN_PIECE = 1 << 20  # bytes searched at a time: the GIL can change hands between pieces


def check_no_nul(raw: bytes | str | msgspec.Raw) -> None:
    """`HasNul` when a JSON string in `raw` holds U+0000. The escape counts only where the
    backslash before `u0000` is not itself escaped (`\\\\u0000` is a backslash and the text
    "u0000"; a raw NUL is no JSON at all, which the decoder says). Searched in pieces, a few
    megabytes in milliseconds."""
    data = raw.encode() if isinstance(raw, str) else bytes(raw)  # bytes(b) is b itself
    step = NUL_SCAN_PIECE
    for start in range(0, len(data), step):
        # Overlap by the escape's length, so one that straddles two pieces is found.
        piece_end = min(len(data), start + step + len(_NUL_ESCAPE) - 1)
        found = data.find(_NUL_ESCAPE, start, piece_end)
        while found != -1:
            backslashes = 1
            while found - backslashes >= 0 and data[found - backslashes] == 0x5C:
                backslashes += 1
            if backslashes % 2 == 1:  # this backslash starts an escape
                raise HasNul
            found = data.find(_NUL_ESCAPE, found + 1, piece_end)


def decode(
    raw: bytes | str | msgspec.Raw,
    type_: type[T] = Any,  # type: ignore[assignment]  # Any as a type: T is then Any
    *,
    check_nul: bool = True,
) -> T:
    """`raw` decoded as `type_` (default: any JSON value, at most `MAX_DEPTH` deep); a text
    holding U+0000 is `HasNul` (`check_nul=False`: where only a few fields of a document
    are read and the document's own decode checks it)."""
    if check_nul:
        check_no_nul(raw)
    try:
        value = msgspec.json.decode(raw, type=type_)
    except msgspec.ValidationError as exc:
        if type_ is Any:  # any value fits: what failed is a number too large to be read
            raise NotJson(str(exc)) from None
        raise WrongShape(str(exc)) from None
    except msgspec.DecodeError as exc:
        raise NotJson(str(exc)) from None
    except RecursionError:
        raise NotJson("JSON nested too deeply to be read") from None
    if type_ is Any:
        check_depth(value)
    return value


def convert(value: Any, type_: type[T]) -> T:
    """An already decoded value as `type_` (`msgspec.convert`), with the errors of `decode`."""
    try:
        return msgspec.convert(value, type_)
    except msgspec.ValidationError as exc:
        raise WrongShape(str(exc)) from None
    except RecursionError:
        raise NotJson("JSON nested too deeply to be read") from None


def check_depth(value: Any, limit: int = MAX_DEPTH) -> None:
    """NotJson when `value` nests lists and objects deeper than `limit` (walked without
    recursion)."""
    level: list[Any] = [value]
    for _ in range(limit):
        level = [
            child
            for item in level
            for child in (
                item.values() if isinstance(item, dict) else item if isinstance(item, list) else ()
            )
            if isinstance(child, dict | list)
        ]
        if not level:
            return
    raise NotJson(f"nested deeper than {limit} levels")


def decode_pieces(raw: bytes, shape: type[S]) -> S:
    """`decode(raw, shape)` in pieces: one pass over `raw` leaves each of the document's list
    fields raw (`msgspec.Raw`, no objects made), then their items are decoded one by one, and
    between two items the event loop may run. A wrong item is `WrongShape` with its path, as
    the single decode says it (`... - at `$.messages[3].text``)."""
    check_no_nul(raw)
    scan, items = _pieces_of(shape)
    try:
        scanned = msgspec.json.decode(raw, type=scan)
        values = {}
        for name in shape.__struct_fields__:
            value = getattr(scanned, name)
            if name in items:
                encode_name, decoder = items[name]
                value = [
                    _item(decoder, piece, f"$.{encode_name}[{n}]") for n, piece in enumerate(value)
                ]
            values[name] = value
        return shape(**values)
    except msgspec.ValidationError as exc:
        raise WrongShape(str(exc)) from None
    except msgspec.DecodeError as exc:
        raise NotJson(str(exc)) from None
    except RecursionError:
        raise NotJson("JSON nested too deeply to be read") from None


@functools.cache
def _pieces_of(
    shape: type[msgspec.Struct],
) -> tuple[type[msgspec.Struct], dict[str, tuple[str, msgspec.json.Decoder]]]:
    """The struct `shape` with its list fields as lists of `msgspec.Raw`, and per list field
    its JSON name and its items' decoder."""
    fields: list[Any] = []
    items = {}
    for info in msgspec.structs.fields(shape):
        kind = info.type
        if typing.get_origin(kind) is list:
            items[info.name] = (info.encode_name, msgspec.json.Decoder(typing.get_args(kind)[0]))
            kind = list[msgspec.Raw]
        if info.default is not msgspec.NODEFAULT:
            fields.append((info.name, kind, info.default))
        elif info.default_factory is not msgspec.NODEFAULT:
            fields.append((info.name, kind, msgspec.field(default_factory=info.default_factory)))
        else:
            fields.append((info.name, kind))
    config = shape.__struct_config__
    renames = {info.name: info.encode_name for info in msgspec.structs.fields(shape)}
    scan = msgspec.defstruct(
        f"{shape.__name__}Pieces",
        fields,
        rename=renames,
        forbid_unknown_fields=config.forbid_unknown_fields,
    )
    return scan, items


def _item(decoder: msgspec.json.Decoder, piece: msgspec.Raw, path: str) -> Any:
    try:
        return decoder.decode(piece)
    except msgspec.ValidationError as exc:
        message = str(exc)
        if " - at `$" in message:
            raise msgspec.ValidationError(
                message.replace(" - at `$", f" - at `{path}", 1)
            ) from None
        raise msgspec.ValidationError(f"{message} - at `{path}`") from None
