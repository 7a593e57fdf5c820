"""Structured output: msgspec structs as JSON schemas, decoding, neutral instances.

- `json_schema(Struct)` is what a provider sends (`format` / `response_format`); built
  once per struct. The top-level `$ref` is inlined because some grammar converters want an
  object at the root.
- `decode(text, Struct)` validates an answer with msgspec; a failure is a
  `msgspec.ValidationError`/`DecodeError` whose message goes into the one repair retry.
- `neutral_instance(Struct)` is the minimal valid instance of design §6 "Neutral defaults":
  false booleans, the first enum value as the schema lists it, empty arrays, zero numbers
  (or the smallest allowed), empty strings, None where allowed. `fill(Struct, values)` puts
  known field values over it; the offline provider builds every answer that way.
- `filled_instance(json_schema)` is what a model writes instead: every field present, strings
  a few words, lists two entries (issue 36). `fitted_max_tokens(Struct)`, the output reserve of
  a structured purpose, is fitted to it (`STRUCTURED_HEADROOM` times its tokens).

Which struct each purpose of the product sends is listed by the wiring (`app.wiring.purposes`).
"""

from __future__ import annotations

import functools
import math
import typing
from collections.abc import Mapping
from typing import Any

import msgspec
from msgspec import inspect as mi

from app.core import json_input


@functools.cache
def json_schema(schema: type[msgspec.Struct]) -> dict[str, Any]:
    """The JSON schema sent to the provider, with the root `$ref` inlined."""
    full = msgspec.json.schema(schema)
    ref = full.get("$ref")
    defs = dict(full.get("$defs", {}))
    if not ref:
        return full
    root = dict(defs[ref.rsplit("/", 1)[-1]])
    if _references_itself(root, ref):
        return full
    defs.pop(ref.rsplit("/", 1)[-1])
    if defs:
        root["$defs"] = defs
    return root


def _references_itself(node: Any, ref: str) -> bool:
    if isinstance(node, dict):
        return node.get("$ref") == ref or any(_references_itself(v, ref) for v in node.values())
    if isinstance(node, list):
        return any(_references_itself(v, ref) for v in node)
    return False


def schema_name(schema: type[msgspec.Struct]) -> str:
    """A name OpenAI-style servers accept (`^[a-zA-Z0-9_-]{1,64}$`)."""
    name = "".join(c if c.isalnum() or c in "_-" else "_" for c in schema.__name__)
    return name[:64] or "answer"


@functools.cache
def _decoder(schema: type[msgspec.Struct]) -> msgspec.json.Decoder[Any]:
    return msgspec.json.Decoder(schema)


def decode(text: str, schema: type[msgspec.Struct]) -> msgspec.Struct:
    """Decode and validate an answer. Raises msgspec.DecodeError/ValidationError — also for
    a text holding U+0000 (`\\u0000`), which no store of ours can keep in every engine: the
    model gets the one repair retry, as for any other invalid answer."""
    body = strip_fence(text)
    try:
        json_input.check_no_nul(body)
    except json_input.HasNul as exc:
        raise msgspec.ValidationError(str(exc)) from None
    return _decoder(schema).decode(body)


def strip_fence(text: str) -> str:
    """An answer wrapped in one markdown code fence is read as its content.

    This is the envelope, not the content: the JSON inside is validated as it stands.
    """
    body = text.strip()
    if body.startswith("```") and body.endswith("```") and len(body) >= 6:
        inner = body[3:-3]
        first_line, _, rest = inner.partition("\n")
        return (rest if first_line.strip().isalpha() or not first_line.strip() else inner).strip()
    return body


# --- filled instances and the output reserve ------------------------------------------------

# Tokens of what a model writes: characters / 3.5 (the issue 36 bench's rule; a Llama or Qwen
# tokenizer makes 3.5-4 characters per token of German or English text).
WRITTEN_CHARS_PER_TOKEN = 3.5
# A model writes more than the filled instance where it has more to say: a core sentence with
# names and times, a shopping list of ten items, a reason that explains. Three times the
# filled instance's tokens leave room for that (tests/pipeline/test_schemas.py holds a long
# answer of each purpose to its reserve) while a model that loops — whitespace or a list
# that never closes, a known failure of grammar-constrained sampling — is cut after a second
# or so instead of after the several hundred tokens a round reserve allowed.
STRUCTURED_HEADROOM = 3
# The smallest schema's reserve: its filled instance says a few words where a model may write
# a sentence in each of two or three fields (a salience's segments, a verdict's reason).
STRUCTURED_MIN_TOKENS = 128
FILLED_STRING = "ein paar Worte dazu"


def filled_instance(schema: dict[str, Any], defs: dict[str, Any] | None = None) -> Any:
    """A realistically filled instance of a JSON schema: every property present, strings a
    few words, lists two entries (or `maxItems`), numbers a middle value, an enum its last
    value (what a model writes, where `neutral_instance` is what it may write)."""
    defs = defs if defs is not None else schema.get("$defs", {})
    if "$ref" in schema:
        return filled_instance(defs[schema["$ref"].rsplit("/", 1)[-1]], defs)
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return schema["enum"][-1]
    for key in ("anyOf", "oneOf"):
        if key in schema:
            options = [o for o in schema[key] if o.get("type") != "null"] or schema[key]
            return filled_instance(options[0], defs)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object" or "properties" in schema:
        return {n: filled_instance(s, defs) for n, s in schema.get("properties", {}).items()}
    if kind == "array":
        count = min(2, schema.get("maxItems", 2))
        return [filled_instance(schema.get("items") or {}, defs) for _ in range(count)]
    if kind == "boolean":
        return False
    if kind in ("integer", "number"):
        return 0.6 if kind == "number" else 1
    if kind == "string":
        return FILLED_STRING
    return None


def written_tokens(text: str) -> int:
    """Tokens of a text a model writes, by `WRITTEN_CHARS_PER_TOKEN`."""
    return math.ceil(len(text) / WRITTEN_CHARS_PER_TOKEN)


@functools.cache
def fitted_max_tokens(schema: type[msgspec.Struct]) -> int:
    """The output reserve of a structured answer: `STRUCTURED_HEADROOM` times the tokens of
    its filled instance, at least `STRUCTURED_MIN_TOKENS`."""
    written = msgspec.json.encode(filled_instance(json_schema(schema))).decode()
    return max(STRUCTURED_MIN_TOKENS, STRUCTURED_HEADROOM * written_tokens(written))


# --- neutral instances ------------------------------------------------------------------------


def neutral_instance(schema: type[msgspec.Struct]) -> msgspec.Struct:
    """The minimal valid instance of `schema` (design §6 "Neutral defaults")."""
    return msgspec.convert(_neutral(_type_info(schema)), schema)


def fill(schema: type[msgspec.Struct], values: Mapping[str, Any]) -> msgspec.Struct:
    """An instance of `schema`: neutral defaults, with every field that `values` names
    (by attribute or wire name) set to its value where that value is valid for the field.

    A tuple value lists candidates, tried in order (e.g. `("freude", "joy")`, for a field
    whose Literal may be German or English). An invalid value leaves the neutral default;
    a list keeps its valid items.
    """
    data = _neutral(_type_info(schema))
    for info in _fields(schema):
        for key in (info.name, info.encode_name):
            if key in values:
                coerced = _coerce(values[key], info.type)
                if coerced is not _INVALID:
                    data[info.encode_name] = coerced
                break
    return msgspec.convert(data, schema)


_INVALID = object()

# A struct's type info and fields never change; working them out resolves every annotation
# (typing ForwardRefs, compiled each time) and cost about 0.3 ms per offline answer.
_type_info = functools.cache(mi.type_info)
_fields = functools.cache(msgspec.structs.fields)


def _coerce(value: Any, annotation: Any) -> Any:
    """`value` converted to builtins valid for `annotation`, or `_INVALID`."""
    candidates = value if isinstance(value, tuple) else (value,)
    for candidate in candidates:
        converted = _convert(candidate, annotation)
        if converted is not _INVALID:
            return converted
    # No candidate fits whole: keep the valid items of the list candidate that keeps most.
    item_type = _list_item_type(annotation)
    best: Any = _INVALID
    if item_type is not None:
        for candidate in candidates:
            if not isinstance(candidate, list):
                continue
            kept = [item for item in candidate if _convert(item, item_type) is not _INVALID]
            converted = _convert(kept, annotation)
            if converted is not _INVALID and (best is _INVALID or len(converted) > len(best)):
                best = converted
    return best


def _convert(value: Any, annotation: Any) -> Any:
    try:
        return msgspec.to_builtins(msgspec.convert(value, annotation, strict=False))
    except (msgspec.ValidationError, TypeError):
        return _INVALID


def _list_item_type(annotation: Any) -> Any:
    if typing.get_origin(annotation) is typing.Annotated:
        annotation = typing.get_args(annotation)[0]
    if typing.get_origin(annotation) in (list, set, frozenset):
        return typing.get_args(annotation)[0]
    if typing.get_origin(annotation) is tuple and typing.get_args(annotation)[-1:] == (...,):
        return typing.get_args(annotation)[0]
    return None


def _neutral(t: mi.Type) -> Any:
    """The neutral value of an inspected type, as builtins."""
    if isinstance(t, mi.Metadata):
        return _neutral(t.type)
    if isinstance(t, mi.BoolType):
        return False
    if isinstance(t, mi.IntType):
        return _smallest_int(t)
    if isinstance(t, mi.FloatType):
        return _smallest_float(t)
    if isinstance(t, mi.StrType):
        return "-" * (t.min_length or 0)
    if isinstance(t, mi.LiteralType):
        return t.values[0]
    if isinstance(t, mi.EnumType):
        return _first_sorted([member.value for member in t.cls])
    if isinstance(t, mi.UnionType):
        if any(isinstance(option, mi.NoneType) for option in t.types):
            return None
        return _neutral(t.types[0])
    if isinstance(t, (mi.ListType, mi.SetType, mi.FrozenSetType, mi.VarTupleType)):
        return [_neutral(t.item_type) for _ in range(t.min_length or 0)]
    if isinstance(t, mi.TupleType):
        return [_neutral(item) for item in t.item_types]
    if isinstance(t, mi.DictType):
        return {}
    if isinstance(t, mi.StructType):
        data = {f.encode_name: _neutral(f.type) for f in t.fields if f.required}
        if t.tag_field is not None:
            data[t.tag_field] = t.tag
        return data
    if isinstance(t, (mi.TypedDictType, mi.DataclassType, mi.NamedTupleType)):
        return {f.encode_name: _neutral(f.type) for f in t.fields if f.required}
    if isinstance(t, mi.DateTimeType):
        return "1970-01-01T00:00:00Z"
    if isinstance(t, mi.DateType):
        return "1970-01-01"
    return None  # Any, None and types a schema for a model never uses


def _smallest_int(t: mi.IntType) -> int:
    low = t.ge if t.ge is not None else (t.gt + 1 if t.gt is not None else None)
    high = t.le if t.le is not None else (t.lt - 1 if t.lt is not None else None)
    value = 0
    if low is not None and value < low:
        value = low
    if high is not None and value > high:
        value = high
    if t.multiple_of:
        value = math.ceil(value / t.multiple_of) * t.multiple_of
    return value


def _smallest_float(t: mi.FloatType) -> float:
    value = 0.0
    if t.ge is not None and value < t.ge:
        value = float(t.ge)
    if t.gt is not None and value <= t.gt:
        value = math.nextafter(float(t.gt), math.inf)
    if t.le is not None and value > t.le:
        value = float(t.le)
    if t.lt is not None and value >= t.lt:
        value = math.nextafter(float(t.lt), -math.inf)
    return value


def _first_sorted(values: list[Any]) -> Any:
    try:
        return sorted(values)[0]
    except TypeError:  # mixed kinds: msgspec keeps definition order then
        return values[0]
