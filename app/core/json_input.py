"""Decoding JSON that comes from outside — request bodies, import files, a pasted model
answer — in one place, so that every malformed input is one error and never a crash.

msgspec decodes recursively: a body of 100 000 nested brackets raises `RecursionError`
(before, a 500 with a traceback on every route that decoded it itself), even where the
target type would have refused it at the first level. Here that is `NotJson` like any other
input that cannot be read; a value that does not fit the type is `WrongShape`. A value decoded
without a type (`Any`) may nest at most `MAX_DEPTH` levels, so that code walking it later
cannot run out of stack either.
"""

from __future__ import annotations

from typing import Any, TypeVar

import msgspec

T = TypeVar("T")
MAX_DEPTH = 64  # of an untyped value; no document of ours nests more than a few levels


class JsonInputError(ValueError):
    """The input is not what was expected; the message says why (never the input itself
    beyond a short excerpt)."""


class NotJson(JsonInputError):
    """Not JSON (or nested too deeply to be read)."""


class WrongShape(JsonInputError):
    """JSON, but not of the expected type."""


def decode(raw: bytes | str, type_: type[T] = Any) -> T:  # type: ignore[assignment]
    """`raw` decoded as `type_` (default: any JSON value, at most `MAX_DEPTH` deep)."""
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
        level = [child for item in level
                 for child in (item.values() if isinstance(item, dict)
                               else item if isinstance(item, list) else ())
                 if isinstance(child, dict | list)]
        if not level:
            return
    raise NotJson(f"nested deeper than {limit} levels")
