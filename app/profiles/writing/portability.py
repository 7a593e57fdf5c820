"""JSON export and import of the profiles (seed 004 §12): `kansho.writing_profile`, and both
profiles together as `kansho.profiles`, `format_version` 1; a `kansho.interaction_profile`
alone is read here too. The interaction profile's own document is
`app.profiles.interaction.portability`; this module composes the combined one (the journal ranks
above the interaction room, never the other way).

An import replaces the facets, traits, preferences and governance explicitly (the user chose
the file; one version is written for the writing profile). Journal sources, dialogs and
identities are never in the document: traits travel without their source refs.
"""

from __future__ import annotations

import time
from typing import Any, Literal

import msgspec

from app.core import json_input
from app.profiles.governance import (
    FORMAT_VERSION,
    Governance,
    Origin,
    PortableError,
    check_length,
    check_name,
)
from app.profiles.interaction import portability as interaction_doc
from app.profiles.interaction.portability import InteractionDoc
from app.profiles.writing import model
from app.profiles.writing.model import Field, Profile, Trait

WRITING = "kansho.writing_profile"
BOTH = "kansho.profiles"
KINDS = (WRITING, interaction_doc.KIND, BOTH)
MAX_TRAITS = 500


class FieldDoc(msgspec.Struct, forbid_unknown_fields=True):
    value: str = ""
    origin: Origin | None = None
    locked: bool = False
    label: str = ""  # a facet's name as written (the key is the dict's key)


class TraitDoc(msgspec.Struct, forbid_unknown_fields=True):
    key: str
    value: str
    scope: str = model.CORE_SCOPE
    locked: bool = False
    origin: Origin = "manual"
    label: str = ""  # the name as written; `key` is its stable key


class WritingDoc(msgspec.Struct, forbid_unknown_fields=True):
    kind: Literal["kansho.writing_profile"]
    format_version: Literal[1]
    governance: Governance = "advising"
    core: FieldDoc = msgspec.field(default_factory=FieldDoc)
    facets: dict[str, FieldDoc] = {}
    traits: list[TraitDoc] = []
    exported_at: float | None = None


class BothDoc(msgspec.Struct, forbid_unknown_fields=True):
    kind: Literal["kansho.profiles"]
    format_version: Literal[1]
    writing: WritingDoc | None = None
    interaction: InteractionDoc | None = None
    exported_at: float | None = None


def export_writing(profile: Profile, governance: str) -> dict[str, Any]:
    def field(f: Field) -> dict[str, Any]:
        return {
            "value": f.value,
            "origin": f.origin,
            "locked": f.locked,
            **({"label": f.label} if f.label else {}),
        }

    return {
        "kind": WRITING,
        "format_version": FORMAT_VERSION,
        "exported_at": time.time(),
        "governance": governance,
        "core": field(profile.core),
        "facets": {name: field(f) for name, f in profile.facets.items()},
        "traits": [
            {
                "key": t.key,
                "value": t.value,
                "scope": t.scope,
                "locked": t.locked,
                "origin": t.origin,
                **({"label": t.label} if t.label else {}),
            }
            for t in profile.traits
        ],
    }


def export_both(writing: dict[str, Any], interaction: dict[str, Any]) -> dict[str, Any]:
    return {
        "kind": BOTH,
        "format_version": FORMAT_VERSION,
        "exported_at": time.time(),
        "writing": writing,
        "interaction": interaction,
    }


def read(raw: bytes, max_value_chars: int) -> tuple[WritingDoc | None, InteractionDoc | None]:
    """Check a document; returns the parts it carries. Raises `PortableError`."""
    try:
        head: Any = json_input.decode(raw)
    except json_input.JsonInputError as exc:
        raise PortableError(f"the file is not JSON: {exc}") from None
    kind = head.get("kind") if isinstance(head, dict) else None
    if kind not in KINDS:
        raise PortableError(f"kind {kind!r} is not one of {', '.join(KINDS)}")
    if head.get("format_version") != FORMAT_VERSION:
        raise PortableError(f"format_version {head.get('format_version')!r}; only 1 is read")
    shapes: dict[str, type[WritingDoc | InteractionDoc | BothDoc]] = {
        WRITING: WritingDoc,
        interaction_doc.KIND: InteractionDoc,
        BOTH: BothDoc,
    }
    doc_type = shapes[kind]
    try:
        doc = json_input.convert(head, doc_type)
    except json_input.JsonInputError as exc:
        raise PortableError(f"the {kind} document does not fit the schema: {exc}") from None
    writing = doc if isinstance(doc, WritingDoc) else getattr(doc, "writing", None)
    interaction = doc if isinstance(doc, InteractionDoc) else getattr(doc, "interaction", None)
    if writing is None and interaction is None:
        raise PortableError("the document holds no profile")
    if writing is not None:
        _check_writing(writing, max_value_chars)
    if interaction is not None:
        interaction_doc.check(interaction, max_value_chars)
    return writing, interaction


def _check_writing(doc: WritingDoc, limit: int) -> None:
    if len(doc.traits) > MAX_TRAITS:
        raise PortableError(f"{len(doc.traits)} traits; at most {MAX_TRAITS}")
    check_length(doc.core.value, limit, "the core")
    for name, facet in doc.facets.items():
        check_name(name, "facet")
        check_length(facet.value, limit, f"facet {name}")
    seen: set[tuple[str, str]] = set()
    for trait in doc.traits:
        if not trait.key.strip() or not trait.value.strip():
            raise PortableError("a trait needs a key and a value")
        check_length(trait.value, limit, f"trait {trait.key[:40]}")
        if trait.scope != model.CORE_SCOPE and trait.scope not in doc.facets:
            raise PortableError(
                f"trait {trait.key[:40]!r} has scope {trait.scope!r}, which "
                "is neither core nor a facet of the document"
            )
        if (trait.key.lower(), trait.scope) in seen:
            raise PortableError(f"trait {trait.key[:40]!r} appears twice in {trait.scope!r}")
        seen.add((trait.key.lower(), trait.scope))


def writing_profile(doc: WritingDoc) -> Profile:
    now = time.time()
    return Profile(
        core=Field(doc.core.value, doc.core.origin, doc.core.locked, now),
        facets={
            n: Field(f.value, f.origin, f.locked, now, " ".join(f.label.split())[:80])
            for n, f in doc.facets.items()
        },
        traits=model.with_keys(
            Profile(
                traits=[
                    Trait(
                        model.new_trait_id(),
                        t.key.strip(),
                        t.value,
                        t.scope,
                        t.locked,
                        t.origin,
                        [],
                        now,
                        " ".join(t.label.split())[:80],
                    )
                    for t in doc.traits
                ]
            )
        ).traits,
    )
