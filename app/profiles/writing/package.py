"""One contract for both ways of reviewing the profile (seed 004 §13, §15): the
`kansho.profile_analysis_package` that goes out (as JSON in a copyable prompt, or to the model
gateway) and the `kansho.profile_analysis_result` that comes back.

**Package** (`format_version` 1, modes `initial_build` and `review`, target `writing`): the
current profile (core, facets, traits, governance, lifecycle), representative evidence from
the user's own texts with their refs (recent texts and an older baseline, different contexts),
local measures as help only, the task and the `expected_result`. The whole JSON stays within
`profile_package_chars`: evidence is taken whole while it fits, a long text is cut at a word
bound (`"cut": true`), and what was left out is counted (`left_out`).

**Result**: checked before anything is stored — JSON, `kind` (the legacy
`kansho.profile_review_result` reads too), `format_version`, the schema of every change.
A full proposal may carry `core` / `facets` / `traits` at its top (`summary` counts as a
value); they become changes. Changes are simulated against the current profile: one that
names a trait or facet that does not exist, or cites a Novaberg source that does not exist,
is listed under `unknown_refs` (an unknown source is dropped from the change; a change with an
unknown target is dropped whole). Refs that are not Novaberg's (`dayone_export`, …) are read
as external context. A result with nothing left to apply is refused (`nothing_to_apply`).

Why one module of about 400 lines: the package and the result are the two halves of one
versioned contract — its kinds, `format_version`, the `expected_result` a package promises and
the reader that holds a result to it change together, so they are kept in one place.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import msgspec

from app.core import json_input
from app.core.refusal import Refused
from app.llm.schema import strip_fence
from app.profiles.governance import InvalidName, clean_label
from app.profiles.writing import model
from app.profiles.writing.brief import cut_at_word
from app.profiles.writing.model import Change, NotApplicable, Profile, Source, TraitSpec

FORMAT_VERSION = 1
PACKAGE_KIND = "kansho.profile_analysis_package"
RESULT_KIND = "kansho.profile_analysis_result"
LEGACY_PACKAGE_KIND = "kansho.profile_review_package"
LEGACY_RESULT_KIND = "kansho.profile_review_result"
RESULT_KINDS = frozenset((RESULT_KIND, LEGACY_RESULT_KIND))
PACKAGE_KINDS = frozenset((PACKAGE_KIND, LEGACY_PACKAGE_KIND))
MODES = ("initial_build", "review")
PURPOSE_REVIEW = "profile_review"
# Refs Novaberg makes itself; anything else a result cites is external context.
OWN_REF_PREFIXES = ("entry:", "message:", "ev_")
EXTERNAL = "external_context"
PROFILE_FIELD_CHARS = {"core": 1500, "facet": 800, "trait": 300}

TASK = {
    "initial_build": (
        "Build the writing profile of this person from their own texts in `evidence`. "
        "Describe how they write (voice, rhythm, detail, humour, chronology, perspective, "
        "whatever stands out), not what they wrote about. Work with the existing structure "
        "first: confirm, refine, change a scope, merge or split before you add. Propose a "
        "core (what holds for all their writing) only if the texts come from different "
        "kinds of sources; diary-like texts belong to the facet `autobiographical_journal`. Evidence of kind "
        "`external_context` is the person's own earlier diary, imported: their voice, for "
        "the facet it names."
    ),
    "review": (
        "Compare the new evidence with the existing profile and propose changes only where "
        "the evidence shows something the profile misses or gets wrong (`update`, `add`, "
        "`remove`, `reclassify`, `merge`, `split`; `keep` where it holds). Never propose a "
        "whole new profile. Locked fields are the user's decision: leave them alone."
    ),
}
PLACEHOLDER_RULE = (
    " Names, phone numbers and other personal data are replaced by placeholders in square "
    "brackets ([PERSON_1], [PHONE_1], …): write them exactly as they are, never guess what "
    "they stand for."
)
RULES = (
    "Cite the refs of the evidence a change rests on in `source_refs`; invent no source, no "
    "example and no ref. You may also use the person's own texts from your conversation "
    "with them; then add `external_chat_history` to `evidence_basis`. The local measures "
    "in `signals` are hints, not evidence. Answer with one JSON object shaped like "
    "`expected_result`, nothing else."
)
PROMPT_HEAD = (
    "Below is an analysis package from Novaberg, a private journal app. Read its `task` and "
    "answer with exactly one JSON object as described in its `expected_result`.\n\n"
)


# --- the package --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class EvidenceText:
    ref: str
    kind: str  # entry | external_context (an imported diary's entry) | strong_edit | dialog
    text: str
    occurred_at: float
    context_hint: str
    facet: str | None = None  # the facet it speaks for, where known (imported diaries)


def iso(moment: float | None) -> str | None:
    if moment is None:
        return None
    return dt.datetime.fromtimestamp(moment, dt.UTC).isoformat(timespec="seconds")


def _profile_part(
    profile: Profile, governance: str, lifecycle: str, scale: float = 1.0
) -> dict[str, Any]:
    """The profile as the package shows it; every value cut at a word bound to its share
    (`PROFILE_FIELD_CHARS` times `scale`)."""

    def share(kind: str) -> int:
        return int(PROFILE_FIELD_CHARS[kind] * scale)

    def field(f: model.Field, kind: str) -> dict[str, Any]:
        return {
            "value": cut_at_word(f.value, share(kind)),
            "origin": f.origin,
            "locked": f.locked,
            **({"label": f.label} if f.label else {}),
        }

    return {
        "lifecycle": lifecycle,
        "governance": governance,
        "core": field(profile.core, "core"),
        "facets": {name: field(f, "facet") for name, f in profile.facets.items()},
        "traits": [
            {
                "trait_id": t.trait_id,
                "key": t.key,
                **({"label": t.label} if t.label else {}),
                "scope": t.scope,
                "value": cut_at_word(t.value, share("trait")),
                "origin": t.origin,
                "locked": t.locked,
            }
            for t in profile.traits
        ],
    }


def _fit_profile(
    package: dict[str, Any], profile: Profile, governance: str, lifecycle: str, max_chars: int
) -> None:
    """Make the profile part fit (leaving room for evidence): shorter values first, then
    traits and facets left out from the end, each counted."""
    for scale in (1.0, 0.5, 0.25, 0.1):
        package["profile"] = _profile_part(profile, governance, lifecycle, scale)
        if len(dumps(package)) <= max_chars * 0.6:
            return
    part = package["profile"]
    for name in ("traits", "facets"):
        while len(dumps(package)) > max_chars * 0.6 and part[name]:
            if name == "traits":
                part["traits"].pop()
            else:
                part["facets"].pop(next(reversed(part["facets"])))
            part[f"{name}_left_out"] = part.get(f"{name}_left_out", 0) + 1


def _expected(mode: str, package_id: str | None) -> dict[str, Any]:
    return {
        "kind": RESULT_KIND,
        "format_version": FORMAT_VERSION,
        "mode": mode,
        "target": "writing",
        **({"package_id": package_id} if package_id else {}),
        "evidence_basis": ["kansho_evidence"],
        "summary": "what you found, in one or two sentences",
        "changes": [
            {
                "action": "update | add | remove | reclassify | merge | split | keep",
                "target": "core | facet | trait",
                "key": "trait key or facet name",
                "trait_id": "for an existing trait",
                "scope": "core or a facet name",
                "value": "the new text",
                "keys": ["for merge: the traits merged"],
                "into": [{"key": "for split", "value": "…", "scope": "core"}],
                "rationale": "why",
                "source_refs": ["refs from evidence"],
            }
        ],
    }


def representative(texts: Sequence[EvidenceText]) -> list[EvidenceText]:
    """Newest and oldest in turn (current voice and baseline), one context before its
    repeats."""
    newest = sorted(texts, key=lambda t: -t.occurred_at)
    order: dict[str, EvidenceText] = {}
    for pair in zip(newest, reversed(newest), strict=True):
        for text in pair:
            order.setdefault(text.ref, text)
    contexts: set[str] = set()
    first: dict[str, EvidenceText] = {}
    for ref, text in order.items():
        if text.context_hint not in contexts:
            contexts.add(text.context_hint)
            first[ref] = text
    return [*first.values(), *(t for ref, t in order.items() if ref not in first)]


def build_package(
    profile: Profile,
    *,
    governance: str,
    lifecycle: str,
    mode: str,
    evidence: Sequence[EvidenceText],
    signals: Mapping[str, Any],
    max_chars: int,
    package_id: str | None = None,
) -> dict[str, Any]:
    """The package as a dict whose JSON (`dumps`) has at most `max_chars` characters.
    `package_id`: a copy package's id, which the result names back (`expected_result`)."""
    package: dict[str, Any] = {
        "kind": PACKAGE_KIND,
        "format_version": FORMAT_VERSION,
        "mode": mode,
        "target": "writing",
        **({"package_id": package_id} if package_id else {}),
        "profile": {},
        "evidence": [],
        "left_out": 0,
        "signals": dict(signals),
        "task": f"{TASK[mode]} {RULES}",
        "expected_result": _expected(mode, package_id),
    }
    _fit_profile(package, profile, governance, lifecycle, max_chars)
    chosen = representative(evidence)
    for index, text in enumerate(chosen):
        room = max_chars - len(dumps(package)) - 200  # the item's own keys and quoting
        if room < 200:
            package["left_out"] += len(chosen) - index
            break
        body = cut_at_word(text.text, min(room, max_chars // 4))
        if not body:
            package["left_out"] += 1
            continue
        item: dict[str, Any] = {
            "ref": text.ref,
            "kind": text.kind,
            "occurred_at": iso(text.occurred_at),
            "context_hint": text.context_hint,
            "text": body,
        }
        if text.facet:
            item["facet"] = text.facet
        if body != " ".join(text.text.split()):
            item["cut"] = True
        package["evidence"].append(item)
        if len(dumps(package)) > max_chars:  # JSON escaping made it longer than measured
            package["evidence"].pop()
            package["left_out"] += len(chosen) - index
            break
    return package


# The package's own words: the contract's names, ids, times, our task. Everything else in it
# is the user's text (profile values, names as written, evidence) and is masked.
_NOT_MASKED = frozenset(
    (
        "kind",
        "format_version",
        "mode",
        "target",
        "package_id",
        "ref",
        "trait_id",
        "key",
        "scope",
        "occurred_at",
        "origin",
        "locked",
        "lifecycle",
        "governance",
        "task",
        "expected_result",
        "signals",
        "cut",
        "left_out",
        "kind_note",
        "traits_left_out",
        "facets_left_out",
    )
)


def mask_package(package: Mapping[str, Any], mask: Callable[[str], str]) -> dict[str, Any]:
    """The package with every text of the user's passed through `mask` (the privacy
    gateway's masking: registered people and numbers become placeholders); its own words
    and keys stay as they are so the result can still name what it changes."""
    return map_strings(dict(package), mask, skip=_NOT_MASKED)


def map_strings(data: Any, fn: Callable[[str], str], *, skip: frozenset[str] = frozenset()) -> Any:
    """Every string value of decoded JSON passed through `fn`, except the values of the
    object members named in `skip` (object keys are never passed)."""
    if isinstance(data, str):
        return fn(data)
    if isinstance(data, dict):
        return {k: v if k in skip else map_strings(v, fn, skip=skip) for k, v in data.items()}
    if isinstance(data, list):
        return [map_strings(v, fn, skip=skip) for v in data]
    return data


def dumps(package: Mapping[str, Any]) -> str:
    return json.dumps(package, ensure_ascii=False, indent=1)


def prompt(package: Mapping[str, Any]) -> str:
    """The copyable prompt: a short head and the package's JSON."""
    return f"{PROMPT_HEAD}```json\n{dumps(package)}\n```\n"


# --- the result ---------------------------------------------------------------------------------


class ResultInvalid(Refused):
    """The pasted or returned result cannot become a proposal; nothing is stored."""


Action = Literal["add", "keep", "merge", "reclassify", "remove", "split", "update"]
Basis = Literal["kansho_evidence", "external_chat_history", "external_context"]


class ChangeIn(msgspec.Struct, forbid_unknown_fields=True):
    action: Action
    target: Literal["trait", "core", "facet"] = "trait"
    key: str | None = None
    trait_id: str | None = None
    scope: str | None = None
    value: str | None = None
    summary: str | None = None  # read as the value
    keys: list[str] = []
    into: list[TraitSpec] = []
    rationale: str = ""
    source_refs: list[str] = []


# The model server knows the schema by the struct's name (`json_schema.name`, and the
# schema's `title`): the struct is named for its purpose, `profile_review`.
class profile_review(msgspec.Struct):  # noqa: N801 - the schema's name on the wire
    """What the model answers in the AI review: the result's body. Neutral: no change."""

    summary: str = ""
    evidence_basis: list[Basis] = []
    changes: list[ChangeIn] = []


ReviewAnswer = profile_review  # the name the code reads it by


class ResultIn(msgspec.Struct):
    kind: str
    format_version: int
    mode: Literal["initial_build", "review"]
    target: Literal["writing"] = "writing"
    package_id: str | None = None  # the package answered (its placeholders' mapping)
    summary: str = ""
    evidence_basis: list[Basis] = []
    changes: list[ChangeIn] = []
    core: str | dict[str, Any] | None = None
    facets: dict[str, str | dict[str, Any]] = {}
    traits: list[dict[str, Any]] = []


@dataclass(slots=True)
class Parsed:
    mode: str
    summary: str
    evidence_basis: list[str]
    changes: list[Change]
    unknown_refs: list[str] = field(default_factory=list)
    dropped: list[dict[str, str]] = field(default_factory=list)
    kept: int = 0


def decode_result(raw: str | bytes | Mapping[str, Any]) -> Any:
    """JSON text (one code fence allowed) or a decoded object → the decoded object."""
    if not isinstance(raw, (str, bytes)):
        return raw
    try:
        text = raw.decode() if isinstance(raw, bytes) else raw
        return json_input.decode(strip_fence(text))
    except (UnicodeDecodeError, json_input.JsonInputError) as exc:
        raise ResultInvalid(400, "invalid_json", f"the result is not JSON: {exc}") from None


def read_result(raw: str | bytes | Mapping[str, Any]) -> ResultIn:
    """JSON text (one code fence allowed) or a decoded object → the checked result."""
    data = decode_result(raw)
    if not isinstance(data, dict):
        raise ResultInvalid(400, "schema_error", "the result must be one JSON object")
    kind = data.get("kind")
    if not isinstance(kind, str):  # a list or object is no kind (and no set member)
        raise ResultInvalid(400, "unknown_kind", f"kind must be {RESULT_KIND!r}")
    if kind in PACKAGE_KINDS:
        raise ResultInvalid(
            400,
            "unknown_kind",
            f"this is the analysis package; paste the model's answer ({RESULT_KIND})",
        )
    if kind not in RESULT_KINDS:
        raise ResultInvalid(400, "unknown_kind", f"kind {kind!r} is not {RESULT_KIND}")
    if data.get("format_version") != FORMAT_VERSION:
        raise ResultInvalid(
            400,
            "unsupported_format_version",
            f"format_version {data.get('format_version')!r}; only {FORMAT_VERSION} is read",
        )
    try:
        return json_input.convert(data, ResultIn)
    except json_input.JsonInputError as exc:
        raise ResultInvalid(
            400, "schema_error", f"the result does not fit the schema: {exc}"
        ) from None


def _value(raw: Any) -> str | None:
    """A value as text; an object's `value` or `summary` (seed: `summary` counts as value)."""
    if isinstance(raw, str):
        return raw
    if isinstance(raw, dict):
        inner = raw.get("value", raw.get("summary"))
        return inner if isinstance(inner, str) else None
    return None


def _top_level_changes(result: ResultIn, profile: Profile) -> list[ChangeIn]:
    """A full proposal's `core` / `facets` / `traits` as changes."""
    found: list[ChangeIn] = []
    core = _value(result.core)
    if core:
        found.append(ChangeIn("update", "core", value=core))
    for name, raw in result.facets.items():
        found.append(
            ChangeIn(
                "update" if name in profile.facets else "add", "facet", key=name, value=_value(raw)
            )
        )
    for raw in result.traits:
        try:
            spec = msgspec.convert(
                {k: v for k, v in raw.items() if k in ("key", "scope")}
                | {"value": _value(raw) or ""},
                TraitSpec,
            )
            refs = msgspec.convert(raw.get("source_refs", []), list[str])
        except msgspec.ValidationError as exc:
            raise ResultInvalid(400, "schema_error", f"a trait of the proposal: {exc}") from None
        exists = profile.find(spec.key, spec.scope) is not None
        found.append(
            ChangeIn(
                "update" if exists else "add",
                "trait",
                key=spec.key,
                scope=spec.scope,
                value=spec.value,
                source_refs=refs,
            )
        )
    return found


MAX_KEY_CHARS = model.MAX_KEY_CHARS


def _check_change(change: ChangeIn, max_value_chars: int) -> None:
    """Names and sizes a stored profile can hold; a schema error otherwise."""

    def fail(why: str) -> ResultInvalid:
        return ResultInvalid(400, "schema_error", f"a {change.action} of a {change.target}: {why}")

    texts = [change.value, change.summary, *(s.value for s in change.into)]
    if any(text is not None and len(text) > max_value_chars for text in texts):
        raise fail(f"a value longer than {max_value_chars} characters")
    keys = [change.key, *change.keys, *(s.key for s in change.into)]
    if any(key is not None and len(key) > MAX_KEY_CHARS for key in keys):
        raise fail(f"a key longer than {MAX_KEY_CHARS} characters")
    names = [key for key in keys if key is not None] if change.target == "facet" else []
    names += [
        scope for scope in (change.scope, *(s.scope for s in change.into)) if scope is not None
    ]
    for name in names:
        try:
            clean_label(name)
        except InvalidName as exc:
            raise fail(f"the name {name[:80]!r}: {exc}") from None


def resolve(
    result: ResultIn, profile: Profile, known_sources: Mapping[str, Source], *, max_value_chars: int
) -> Parsed:
    """The result's changes checked against the profile (see the module's docstring);
    raises `ResultInvalid("nothing_to_apply")` when none is left."""
    parsed = Parsed(
        result.mode, result.summary.strip(), list(dict.fromkeys(result.evidence_basis)), []
    )
    scratch = profile
    candidates = [*result.changes, *_top_level_changes(result, profile)]
    for change_in in candidates:
        _check_change(change_in, max_value_chars)
    for change_in in candidates:
        if change_in.action == "keep":
            parsed.kept += 1
            continue
        sources, unknown = _sources(change_in.source_refs, known_sources)
        parsed.unknown_refs += [f"source:{ref}" for ref in unknown]
        change = Change(
            change_in.action,
            change_in.target,
            key=change_in.key,
            trait_id=change_in.trait_id,
            scope=change_in.scope,
            value=change_in.value if change_in.value is not None else change_in.summary,
            keys=list(change_in.keys),
            into=list(change_in.into),
            rationale=change_in.rationale,
            source_refs=[s.ref for s in sources],
            sources=sources,
        )
        try:
            scratch = model.apply_change(scratch, change, "accepted", 0.0)
        except NotApplicable as exc:
            target = change.trait_id or change.key or ", ".join(change.keys) or change.target
            parsed.unknown_refs.append(f"{change.target}:{target}")
            parsed.dropped.append(
                {"action": change.action, "target": change.target, "reason": str(exc)}
            )
            continue
        parsed.changes.append(change)
    parsed.unknown_refs = list(dict.fromkeys(parsed.unknown_refs))
    if not parsed.changes:
        why = "; ".join(d["reason"] for d in parsed.dropped) or (
            f"{parsed.kept} change(s) only keep what is there"
            if parsed.kept
            else "it holds no change"
        )
        raise ResultInvalid(422, "nothing_to_apply", f"the result has nothing to apply ({why})")
    return parsed


def _sources(refs: Sequence[str], known: Mapping[str, Source]) -> tuple[list[Source], list[str]]:
    sources: list[Source] = []
    unknown: list[str] = []
    for ref in dict.fromkeys(r.strip() for r in refs if r.strip()):
        if ref in known:
            sources.append(known[ref])
        elif ref.startswith(OWN_REF_PREFIXES):
            unknown.append(ref)
        else:
            sources.append(Source(ref[:200], None, EXTERNAL))
    return sources, unknown
