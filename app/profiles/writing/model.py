"""The writing profile as data, and the pure rules that change it (seed 004 §12–§15).

A profile is a shell: a core brief, optional facets (`autobiographical_journal`, …) and
dynamic traits. Traits are not a fixed grid (`SEED_CATALOG` lists the seed's hints for the
UI, nothing binds to it). A facet's and a trait's name is free text as the user wrote it
(`label`: "Tagebuch", "Sätze – kurz"); its `key` is the stable snake_case key derived from
the name once, when it is added (`app.profiles.governance.derive_key`: the one place), and never
changes after. A name finds its facet or trait by key or by label (`Profile.find`,
`Profile.facet_key`). Every field knows its origin — `manual` (the
user wrote it), `accepted` (the user accepted a proposed change), `automatic` (governance
`learning` applied it; the origins and governance modes are `app.profiles.governance`, shared with
the interaction profile) — and can be locked.

`apply_change` applies one proposed change to a copy of the profile; `automatic_allowed`
is the governance rule for automatic paths: they never touch a locked field, never one the
user wrote or accepted. Everything here is pure (no I/O): the store persists the result.

One module: the profile's shape and the pure rules that change it change together.
"""

from __future__ import annotations

import uuid

import msgspec

from app.profiles.governance import NAME, USER_ORIGINS, InvalidName, Origin, clean_label, derive_key

JOURNAL_FACET = "autobiographical_journal"
CORE_SCOPE = "core"
# The seed's style keys: hints for the UI's "add a trait" list, not a schema (seed 004 §14).
SEED_CATALOG: tuple[str, ...] = (
    "rhythm",
    "humor",
    "detail",
    "chronology",
    "tone",
    "perspective",
    "sentence_length",
    "vocabulary",
)
MAX_KEY_CHARS = (
    80  # a trait's or facet's name as written (`app.profiles.governance.MAX_LABEL_CHARS`)
)
ACTIONS: tuple[str, ...] = ("keep", "update", "add", "remove", "reclassify", "merge", "split")


class Source(msgspec.Struct, omit_defaults=True):
    """Where a trait was seen: a Novaberg ref (`entry:…`, an evidence id) or external
    context (`external_context`), with when it was written and in which context."""

    ref: str
    occurred_at: float | None = None
    context_hint: str = ""


class Field(msgspec.Struct):
    value: str = ""
    origin: Origin | None = None
    locked: bool = False
    updated_at: float | None = None
    label: str = ""  # a facet's name as the user wrote it ("" : the key is the name)


class Trait(msgspec.Struct):
    trait_id: str
    key: str
    value: str
    scope: str = CORE_SCOPE  # "core" or a facet name
    locked: bool = False
    origin: Origin = "manual"
    sources: list[Source] = []
    updated_at: float | None = None
    label: str = ""  # the name as the user wrote it ("": the key is the name)


def _folded(name: str) -> str:
    return " ".join(name.split()).casefold()


def _same(key: str, label: str, name: str) -> bool:
    """Does `name` name the item with `key` and `label` (its key, or its label, in any
    case and spacing)?"""
    wanted = _folded(name)
    return key.casefold() == wanted or (bool(label) and _folded(label) == wanted)


class Profile(msgspec.Struct):
    core: Field = msgspec.field(default_factory=Field)
    facets: dict[str, Field] = {}
    traits: list[Trait] = []

    def trait(self, trait_id: str) -> Trait | None:
        return next((t for t in self.traits if t.trait_id == trait_id), None)

    def find(self, name: str, scope: str | None = None) -> Trait | None:
        """The trait `name` names (its key or its label, case-insensitive) in `scope`, or in
        any scope."""
        return next(
            (
                t
                for t in self.traits
                if _same(t.key, t.label, name) and (scope is None or t.scope == scope)
            ),
            None,
        )

    def facet_key(self, name: str) -> str | None:
        """The key of the facet `name` names (its key or its label), or None."""
        return next(
            (key for key, facet in self.facets.items() if _same(key, facet.label, name)), None
        )

    @property
    def empty(self) -> bool:
        return not (self.core.value or self.facets or self.traits)


class TraitSpec(msgspec.Struct, forbid_unknown_fields=False):
    key: str
    value: str = ""
    scope: str = CORE_SCOPE


class Change(msgspec.Struct):
    """One proposed change, the same for the AI review and the copy/paste result.

    - `core`: `update` with `value`;
    - `facet`: `add`/`update`/`remove` of facet `key` (`value` is the facet's delta);
    - `trait`: `add` (`key`, `value`, `scope`), `update` (`value`), `remove`,
      `reclassify` (new `scope`), `merge` (`keys` → one trait `key` with `value`),
      `split` (`key` → `into`); an existing trait is named by `trait_id` or `key`.
    `keep` confirms what is there and changes nothing.
    """

    action: str
    target: str = "trait"
    key: str | None = None
    trait_id: str | None = None
    scope: str | None = None
    value: str | None = None
    keys: list[str] = []
    into: list[TraitSpec] = []
    rationale: str = ""
    source_refs: list[str] = []
    sources: list[Source] = []  # resolved locally from `source_refs`


class NotApplicable(Exception):
    """The change cannot be applied to this profile (names a missing trait, …)."""


def new_trait_id() -> str:
    return f"trait_{uuid.uuid4().hex[:16]}"


def copy(profile: Profile) -> Profile:
    return msgspec.convert(msgspec.to_builtins(profile), Profile)


def decode_profile(raw: str | bytes) -> Profile:
    """A stored profile (lenient: old documents keep reading; see `with_keys`)."""
    return with_keys(msgspec.json.decode(raw, type=Profile))


def with_keys(profile: Profile) -> Profile:
    """A profile written before names were free text keeps reading: a trait whose key was
    free text ("Satzlänge") keeps it as its label and gets its derived key."""
    for trait in profile.traits:
        if not NAME.fullmatch(trait.key):
            taken = {t.key for t in profile.traits if t.scope == trait.scope and t is not trait}
            trait.label = trait.label or trait.key
            try:
                trait.key = derive_key(trait.key, taken)
            except InvalidName:
                trait.key = derive_key("trait", taken)
    return profile


def checked_label(raw: str | None, what: str) -> str:
    """A free-text name, cleaned; raises `NotApplicable` for one no key can come from."""
    try:
        return clean_label(raw or "")
    except InvalidName as exc:
        raise NotApplicable(f"{what}: {exc}") from None


def encode_profile(profile: Profile) -> str:
    return msgspec.json.encode(profile).decode()


# --- what a change touches, and whether an automatic path may ----------------------------------


def _existing(profile: Profile, change: Change, key: str | None = None) -> Trait | None:
    """The trait a change names: by `trait_id`, else by `key` (within `scope` where the
    scope names where it is, not where it goes)."""
    if key is not None:
        return profile.find(key)
    if change.trait_id:
        return profile.trait(change.trait_id)
    if not change.key:
        return None
    scope = change.scope if change.action in ("update", "remove", "split") else None
    if scope is not None and scope != CORE_SCOPE:
        scope = profile.facet_key(scope) or scope
    return profile.find(change.key, scope)


def touched(profile: Profile, change: Change) -> list[Field | Trait]:
    """The existing fields and traits `change` would overwrite or remove."""
    if change.target == "core":
        return [profile.core] if change.action != "keep" else []
    if change.target == "facet":
        key = profile.facet_key(change.key or "")
        facet = profile.facets.get(key) if key is not None else None
        return [facet] if facet is not None and change.action != "keep" else []
    if change.action == "merge":
        return [t for k in change.keys if (t := profile.find(k)) is not None]
    if change.action in ("add", "keep"):
        return []
    found = _existing(profile, change)
    return [found] if found is not None else []


def automatic_allowed(profile: Profile, change: Change) -> bool:
    """An automatic path may apply `change` only if it overwrites nothing locked and nothing
    the user wrote or accepted."""
    return all(
        not item.locked and item.origin not in USER_ORIGINS for item in touched(profile, change)
    )


def is_noop(change: Change) -> bool:
    return change.action == "keep"


# --- applying -------------------------------------------------------------------------------


def apply_change(profile: Profile, change: Change, origin: Origin, now: float) -> Profile:
    """A new profile with `change` applied; raises `NotApplicable`."""
    result = copy(profile)
    if change.action == "keep":
        return result
    if change.target == "core":
        _apply_core(result, change, origin, now)
    elif change.target == "facet":
        _apply_facet(result, change, origin, now)
    elif change.target == "trait":
        _apply_trait(result, change, origin, now)
    else:
        raise NotApplicable(f"unknown target {change.target!r}")
    return result


def _text(value: str | None, what: str) -> str:
    text = (value or "").strip()
    if not text:
        raise NotApplicable(f"{what} needs a value")
    return text


def _apply_core(profile: Profile, change: Change, origin: Origin, now: float) -> None:
    if change.action == "remove":
        profile.core = Field(origin=origin, updated_at=now, locked=profile.core.locked)
        return
    if change.action not in ("update", "add"):
        raise NotApplicable(f"the core cannot {change.action}")
    profile.core = Field(_text(change.value, "the core"), origin, profile.core.locked, now)


def _apply_facet(profile: Profile, change: Change, origin: Origin, now: float) -> None:
    name = checked_label(change.key, "a facet change needs the facet's name in `key`")
    key = profile.facet_key(name)
    current = profile.facets.get(key) if key is not None else None
    if change.action == "remove":
        if key is None:
            raise NotApplicable(f"no facet {name!r}")
        del profile.facets[key]
        profile.traits = [t for t in profile.traits if t.scope != key]
        return
    if change.action not in ("add", "update"):
        raise NotApplicable(f"a facet cannot {change.action}")
    if change.action == "update" and current is None:
        raise NotApplicable(f"no facet {name!r}")
    if key is None:  # a new facet: its key is derived from its name, once
        key = derive_key(name, profile.facets.keys())
        label = "" if name == key else name
    else:
        label = current.label if current is not None else ""
    profile.facets[key] = Field(
        _text(change.value, f"facet {name!r}"),
        origin,
        current.locked if current else False,
        now,
        label,
    )


def _require(profile: Profile, change: Change, key: str | None = None) -> Trait:
    found = _existing(profile, change, key)
    if found is None:
        raise NotApplicable(f"no trait {key or change.trait_id or change.key!r}")
    return found


def _scope(profile: Profile, scope: str | None) -> str:
    """The key of the scope `scope` names: `core`, a facet (by key or label) or the
    journal's facet (which need not exist yet)."""
    name = " ".join((scope or CORE_SCOPE).split()) or CORE_SCOPE
    if name.casefold() in (CORE_SCOPE, JOURNAL_FACET):
        return name.casefold()
    key = profile.facet_key(name)
    if key is None:
        raise NotApplicable(f"scope {name!r} is neither core nor a facet")
    return key


def _new_trait(
    profile: Profile,
    name: str | None,
    value: str | None,
    scope: str,
    origin: Origin,
    sources: list[Source],
    now: float,
) -> Trait:
    """A new trait named `name` in `scope`: its key derived from the name (a suffix where
    another trait of the scope has that key); an existing trait of that name is refused."""
    label = checked_label(name, "a new trait needs its name in `key`")
    if profile.find(label, scope) is not None:
        raise NotApplicable(f"trait {label!r} exists in {scope!r}; update it instead")
    key = derive_key(label, {t.key for t in profile.traits if t.scope == scope})
    return Trait(
        new_trait_id(),
        key,
        _text(value, label),
        scope,
        False,
        origin,
        sources,
        now,
        "" if label == key else label,
    )


def _apply_trait(profile: Profile, change: Change, origin: Origin, now: float) -> None:
    action = change.action
    if action == "add":
        profile.traits.append(
            _new_trait(
                profile,
                change.key,
                change.value,
                _scope(profile, change.scope),
                origin,
                list(change.sources),
                now,
            )
        )
    elif action == "update":
        trait = _require(profile, change)
        trait.value = _text(change.value, trait.key)
        trait.origin, trait.updated_at = origin, now
        trait.sources = _merged(trait.sources, change.sources)
    elif action == "remove":
        trait = _require(profile, change)
        profile.traits.remove(trait)
    elif action == "reclassify":
        trait = _require(profile, change)
        trait.scope = _scope(profile, change.scope)
        trait.origin, trait.updated_at = origin, now
    elif action == "merge":
        if len(change.keys) < 2:
            raise NotApplicable("a merge names at least two traits in `keys`")
        merged = [_require(profile, change, k) for k in change.keys]
        sources = [s for t in merged for s in t.sources]
        for trait in merged:
            profile.traits.remove(trait)
        profile.traits.append(
            _new_trait(
                profile,
                change.key,
                change.value,
                _scope(profile, change.scope or merged[0].scope),
                origin,
                _merged(sources, change.sources),
                now,
            )
        )
    elif action == "split":
        trait = _require(profile, change)
        if len(change.into) < 2:
            raise NotApplicable("a split names at least two traits in `into`")
        profile.traits.remove(trait)
        for spec in change.into:
            profile.traits.append(
                _new_trait(
                    profile,
                    spec.key,
                    spec.value,
                    _scope(profile, spec.scope),
                    origin,
                    _merged(trait.sources, change.sources),
                    now,
                )
            )
    else:
        raise NotApplicable(f"unknown action {action!r}")


def _merged(old: list[Source], new: list[Source]) -> list[Source]:
    seen = {s.ref for s in old}
    return [*old, *(s for s in new if s.ref not in seen)]
