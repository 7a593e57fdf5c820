"""Character cards in and out (design §11): Character Card V2 (`chara_card_v2`) and V3
(`chara_card_v3`), as JSON or embedded base64 in a PNG `tEXt` chunk (`chara` for V2, `ccv3`
for V3; a PNG with both is read from `ccv3`). V1 cards (the fields at the top, no `spec`)
are read as well. A V3 PNG export carries the V2 view in `chara` beside its `ccv3` (as
SillyTavern writes it): many readers still know only `chara`.

The mapping (docs/characters.md says the same):

| card (`data.…`) | definition |
|---|---|
| `name` | `name` as one line (`one_line`); the id is `extensions.novaberg.id` when a Novaberg export wrote it, else made from the name (`slug`) |
| `system_prompt`, `description`, `personality`, `scenario` | the persona (`book.compose_persona`); a card with a description alone gives that text |
| `first_mes` | `greeting` |
| `alternate_greetings` | `alternate_greetings` |
| `mes_example` | `examples` (kept, not put into prompts: its `{{char}}:` lines would teach the model speaker labels) |
| `creator_notes` | `description` (shown in the picker, never in a prompt: V2 says so) |
| `character_book` | the lorebook (`app.characters.lore`) — and kept as written |
| the PNG's image (V3: the `icon` asset `main`, `ccdefault:` or a `data:` URL) | the picture |
| `extensions.novaberg` `{id, language, baseline}` | id, language, baseline (what a Novaberg export adds) |
| everything else (`tags`, `creator`, `character_version`, `post_history_instructions`, `extensions`, V3's `nickname`, `assets`, `source`, `group_only_greetings`, dates, and any field a newer spec or another tool adds) | kept as the card had it, in the definition's card file, and written into every export again |

Without `extensions.novaberg` the language is the one the card's texts are written in (the
offline model's detector) and the baseline the seed's. A field left at its spec default
(`tags: []`, `creator: ""`, …) is not kept: an export writes the defaults anyway, so import →
export → import gives the same definition. `post_history_instructions` is kept but not used:
the product's own rules come last in every prompt, and a card cannot place text after them.

One module: the one mapping above, read in and written out, so both directions agree.
"""

from __future__ import annotations

import base64
import binascii
import copy
import json
import math
import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from app.characters import pictures
from app.characters.book import (
    ID_PATTERN,
    NAME_MAX_CHARS,
    PERSONA_PARTS,
    CharacterDefinition,
    CharacterError,
    baseline_data,
)
from app.core.i18n import LANGUAGES
from app.core.refusal import RefusedKind
from app.llm.offline.text import language as detect_language

Spec = Literal["v2", "v3"]
SPECS: dict[Spec, tuple[str, str, str]] = {  # spec → (spec value, spec_version, PNG chunk)
    "v2": ("chara_card_v2", "2.0", "chara"),
    "v3": ("chara_card_v3", "3.0", "ccv3"),
}
FORMATS = ("png", "json")
OURS = "novaberg"  # our key in `extensions`
# What the definition holds; everything else of `data` is kept as the card had it.
MAPPED = frozenset(
    {"name", *PERSONA_PARTS, "first_mes", "alternate_greetings", "mes_example", "creator_notes"}
)
# What an export writes when the definition has nothing else; such a value is not kept.
DEFAULTS: dict[Spec, dict[str, Any]] = {
    "v2": {
        "tags": [],
        "creator": "",
        "character_version": "",
        "extensions": {},
        "post_history_instructions": "",
    },
    "v3": {
        "tags": [],
        "creator": "",
        "character_version": "",
        "extensions": {},
        "post_history_instructions": "",
        "group_only_greetings": [],
    },
}
_KEEP_DEFAULTS = {key: value for spec in DEFAULTS.values() for key, value in spec.items()}
FALLBACK_ID = "character"
# A card nests about six levels (data → character_book → entries → an entry → extensions → …);
# deeper JSON is refused before anything walks it (copying, TOML, the lorebook's checks).
MAX_DEPTH = 32
NAMED_CHUNKS = 10  # a warning names this many of the PNG's other text chunks, then counts


class CardError(RefusedKind, ValueError):
    """A file that is not a usable character card; the message names the problem."""

    STATUS, CODE = 400, "invalid_card"


@dataclass(frozen=True, slots=True)
class ImportedCard:
    """A card read and mapped: the definition's TOML shape, the card file's content, the
    picture (PNG bytes as stored, or None), and what was not kept, in words."""

    data: dict[str, Any]
    card: dict[str, Any]
    picture: bytes | None
    spec: str
    warnings: list[str] = field(default_factory=list)


# --- reading a file ------------------------------------------------------------------------------


def read_card(raw: bytes, *, character_id: str | None = None) -> ImportedCard:
    """A card file (PNG or JSON) mapped to a definition's TOML shape; `CardError` names what is
    wrong. `character_id`: the id to use instead of the card's."""
    warnings: list[str] = []
    picture: bytes | None = None
    if pictures.is_png(raw):
        document, picture, warnings = _from_png(raw)
    elif (kind := _other_picture(raw)) is not None:
        raise CardError(
            f"a {kind} picture is not a character card: cards come as a PNG (with "
            "a chara or ccv3 chunk) or as JSON"
        )
    else:
        document = _json(raw, "the file")
    spec, data = _card_data(document)
    if picture is None:
        picture = _data_url_icon(data, warnings)
    mapped, extras = map_card(data, character_id=character_id)
    return ImportedCard(data=mapped, card=extras, picture=picture, spec=spec, warnings=warnings)


_PICTURE_SIGNATURES = ((b"\xff\xd8\xff", "JPEG"), (b"GIF87a", "GIF"), (b"GIF89a", "GIF"))


def _other_picture(raw: bytes) -> str | None:
    if raw[:4] == b"RIFF" and raw[8:12] == b"WEBP":
        return "WebP"
    return next(
        (kind for signature, kind in _PICTURE_SIGNATURES if raw.startswith(signature)), None
    )


def _from_png(raw: bytes) -> tuple[Any, bytes, list[str]]:
    try:
        chunks = pictures.text_chunks(raw)
        picture = pictures.stored_png(raw)
    except pictures.PictureError as exc:
        raise CardError(f"the PNG cannot be read: {exc}") from None
    chunk = "ccv3" if "ccv3" in chunks else "chara" if "chara" in chunks else None
    if chunk is None:
        raise CardError("the PNG holds no character card (no tEXt chunk chara or ccv3)")
    try:
        decoded = base64.b64decode("".join(chunks[chunk].split()), validate=True)
    except (binascii.Error, ValueError):
        raise CardError(f"the PNG's {chunk} chunk is not valid base64") from None
    others = sorted(key for key in chunks if key not in ("chara", "ccv3"))
    named = ", ".join(others[:NAMED_CHUNKS]) + (
        f" and {len(others) - NAMED_CHUNKS} more" if len(others) > NAMED_CHUNKS else ""
    )
    warnings = [f"the PNG's other text chunks were not kept: {named}"] if others else []
    return _json(decoded, f"the PNG's {chunk} chunk"), picture, warnings


def _json(raw: bytes, what: str) -> Any:
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise CardError(f"{what} is neither a PNG nor UTF-8 JSON: not a character card") from None
    try:
        document = json.loads(text, parse_constant=_no_constant, parse_float=_finite)
    except RecursionError:  # the decoder's own bound on nesting, far above ours
        raise CardError(f"{what} nests deeper than {MAX_DEPTH} levels") from None
    except ValueError as exc:
        raise CardError(f"{what} is not valid JSON ({exc}): not a character card") from None
    if _depth(document) > MAX_DEPTH:
        raise CardError(f"{what} nests deeper than {MAX_DEPTH} levels")
    try:  # a lone surrogate ("\ud800") decodes, but no file can hold it
        json.dumps(document, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        raise CardError(f"{what} holds text that is not valid Unicode") from None
    return document


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is no JSON number")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text[:20]} is out of range")
    return value


def _depth(document: Any) -> int:
    """How deep arrays and objects nest in `document` (a scalar: 0), without recursion."""
    deepest, pending = 0, [(document, 1)]
    while pending:
        value, level = pending.pop()
        children = (
            value.values()
            if isinstance(value, dict)
            else value
            if isinstance(value, list)
            else None
        )
        if children is None:
            continue
        deepest = max(deepest, level)
        if deepest > MAX_DEPTH:
            return deepest
        pending.extend((child, level + 1) for child in children)
    return deepest


def _card_data(document: Any) -> tuple[str, dict[str, Any]]:
    if not isinstance(document, dict):
        raise CardError("a character card is a JSON object; this is not one")
    spec = document.get("spec")
    if spec in ("chara_card_v2", "chara_card_v3"):
        data = document.get("data")
        if not isinstance(data, dict):
            raise CardError(f"a {spec} card needs its fields in an object `data`")
        return spec, data
    if spec is None and isinstance(document.get("name"), str):
        return "chara_card_v1", dict(document)
    if spec is None:
        raise CardError("not a character card: no `spec` and no `name`")
    raise CardError(f"card spec {str(spec)[:40]!r} is not supported (chara_card_v2, chara_card_v3)")


def _data_url_icon(data: Mapping[str, Any], warnings: list[str]) -> bytes | None:
    """A JSON card's main icon given as a `data:` URL (V3 assets), as the stored picture."""
    assets = data.get("assets")
    if not isinstance(assets, list):
        return None
    icons = [a for a in assets if isinstance(a, dict) and a.get("type") == "icon"]
    main = next((a for a in icons if a.get("name") == "main"), icons[0] if icons else None)
    uri = main.get("uri") if main else None
    if not isinstance(uri, str) or not uri.startswith("data:"):
        return None
    try:
        payload = base64.b64decode(uri.split(",", 1)[1], validate=True)
        return pictures.stored_png(payload)
    except pictures.PictureError as exc:
        warnings.append(f"the card's icon (a data: URL) was not taken: {exc}; no picture was set")
    except (IndexError, binascii.Error, ValueError):
        warnings.append("the card's icon (a data: URL) is not valid base64; no picture was set")
    return None


# --- mapping -------------------------------------------------------------------------------------


def map_card(
    data: Mapping[str, Any],
    *,
    character_id: str | None = None,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The card's `data` as a definition's TOML shape and the card file's content (see the
    module docstring); `CardError` for a field of the wrong type."""
    name = one_line(data.get("name"))
    if not name:
        raise CardError("the card has no name")
    if len(name) > NAME_MAX_CHARS:
        raise CardError(
            f"the card's name has {len(name)} characters; at most {NAME_MAX_CHARS} are taken"
        )
    texts = {
        key: _text(data, key)
        for key in (*PERSONA_PARTS, "first_mes", "mes_example", "creator_notes")
    }
    greetings = data.get("alternate_greetings", [])
    if not isinstance(greetings, list) or not all(isinstance(g, str) for g in greetings):
        raise CardError("alternate_greetings must be a list of strings")
    extras = {
        key: copy.deepcopy(value)
        for key, value in data.items()
        if key not in MAPPED and not (key in _KEEP_DEFAULTS and value == _KEEP_DEFAULTS[key])
    }
    ours = _take_ours(extras)
    parts = {key: texts[key].strip() for key in PERSONA_PARTS}
    if not any(parts.values()):
        raise CardError(
            "the card has no description, personality, scenario or system prompt: "
            "nothing for the character to speak from"
        )
    language = ours.get("language")
    if language not in LANGUAGES:
        language = detect_language(
            "\n".join([parts["description"], parts["personality"], texts["first_mes"]])
        )
    only_description = not (parts["system_prompt"] or parts["personality"] or parts["scenario"])
    mapped: dict[str, Any] = {
        "id": character_id or _our_id(ours) or slug(name),
        "name": name,
        "language": language,
        "persona": parts["description"] if only_description else parts,
    }
    for key, target in (
        ("creator_notes", "description"),
        ("first_mes", "greeting"),
        ("mes_example", "examples"),
    ):
        if texts[key].strip():
            mapped[target] = texts[key].strip()
    if greetings:
        mapped["alternate_greetings"] = list(greetings)
    if isinstance(ours.get("baseline"), dict):
        mapped["baseline"] = ours["baseline"]
    return mapped, extras


def one_line(value: Any) -> str:
    """A card's name as one line: control characters that are not white space dropped, then
    runs of white space (line breaks too) one space (other tools' names often end in a line
    break). In that order, so a name read back is the same name ("0\r\x1b 0" is "0 0")."""
    if not isinstance(value, str):
        return ""
    kept = "".join(c for c in value if c.isspace() or unicodedata.category(c) != "Cc")
    return " ".join(kept.split())


def _text(data: Mapping[str, Any], key: str) -> str:
    value = data.get(key, "")
    if value is None:
        return ""
    if not isinstance(value, str):
        raise CardError(f"{key} must be a string")
    return value


def _take_ours(extras: dict[str, Any]) -> dict[str, Any]:
    """`extensions.novaberg`, taken out of what is kept (an export writes it anew)."""
    extensions = extras.get("extensions")
    if not isinstance(extensions, dict) or OURS not in extensions:
        return {}
    ours = extensions.pop(OURS)
    if not extensions:
        del extras["extensions"]
    return ours if isinstance(ours, dict) else {}


def _our_id(ours: Mapping[str, Any]) -> str | None:
    value = ours.get("id")
    return value if isinstance(value, str) and ID_PATTERN.match(value) else None


def slug(name: str) -> str:
    """An id from a name: ASCII letters and digits, the rest one `-`, at most 32 characters
    ("Élise Durand" → "elise-durand")."""
    ascii_name = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode()
    text = re.sub(r"[^a-z0-9]+", "-", ascii_name.lower()).strip("-")[:32].rstrip("-")
    return text if text and ID_PATTERN.match(text) else FALLBACK_ID


# --- writing -------------------------------------------------------------------------------------


def card_document(definition: CharacterDefinition, spec: Spec) -> dict[str, Any]:
    """The definition as a character card object of `spec`."""
    spec_name, version, _ = SPECS[spec]
    data: dict[str, Any] = copy.deepcopy(dict(definition.card))
    if definition.persona_parts is not None:
        data.update(definition.persona_parts.as_dict())
    else:
        data.update(dict.fromkeys(PERSONA_PARTS, ""), description=definition.persona)
    data.update(
        name=definition.name,
        first_mes=definition.greeting,
        alternate_greetings=list(definition.alternate_greetings),
        mes_example=definition.examples,
        creator_notes=definition.description,
    )
    for key, value in DEFAULTS[spec].items():
        data.setdefault(key, copy.deepcopy(value))
    extensions = data["extensions"] if isinstance(data.get("extensions"), dict) else {}
    extensions[OURS] = {
        "id": definition.id,
        "language": definition.language,
        "baseline": baseline_data(definition.baseline),
    }
    data["extensions"] = extensions
    return {"spec": spec_name, "spec_version": version, "data": data}


def card_json(definition: CharacterDefinition, spec: Spec) -> bytes:
    return json.dumps(card_document(definition, spec), ensure_ascii=False, indent=2).encode()


def card_png(definition: CharacterDefinition, spec: Spec, picture: bytes | None) -> bytes:
    """The card embedded in the picture (or a placeholder) as base64 `tEXt` chunks: V2 in
    `chara`; V3 in `ccv3`, after the V2 view in `chara` (the V2 export's chunk) for readers
    that know only V2 — ours reads `ccv3` when both are there."""
    written: tuple[Spec, ...] = ("v2", "v3") if spec == "v3" else ("v2",)
    chunks = {SPECS[each][2]: _base64_card(definition, each) for each in written}
    image = picture if picture is not None else pictures.placeholder(definition.id)
    return pictures.with_text_chunks(image, chunks)


def _base64_card(definition: CharacterDefinition, spec: Spec) -> str:
    payload = json.dumps(card_document(definition, spec), ensure_ascii=False).encode()
    return base64.b64encode(payload).decode("ascii")


def check_exportable(spec: str, fmt: str) -> tuple[Spec, str]:
    if spec not in SPECS:
        raise CharacterError(f"spec {spec!r}: use v2 or v3")
    if fmt not in FORMATS:
        raise CharacterError(f"format {fmt!r}: use png or json")
    return spec, fmt
