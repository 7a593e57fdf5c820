"""The writing profile's read models, as msgspec structs the API encodes. Field order is the
answer's key order.
"""

from __future__ import annotations

from typing import Any

import msgspec

from app.profiles.writing.model import Field, Source, Trait, TraitSpec


class Evidence(msgspec.Struct):
    """A review candidate (`GET /api/profile/evidence`): a text of the user with the signal
    that chose it; `new`: stored after the newest proposal."""

    evidence_id: str
    signal: str
    ref: str
    text: str
    occurred_at: float
    context_hint: str
    new: bool
    created_at: float
    measure: Any  # the local measures that chose it, as stored (JSON)


class ProfileVersion(msgspec.Struct):
    """A version of the profile (`GET /api/profile/versions`): why it was made (a code the
    page words, `version.<code>`, and what it names) and the profile as it was."""

    version: int
    reason: str
    reason_args: dict[str, Any]
    created_at: float
    profile: Any  # the profile document as stored (JSON; `model.encode_profile`)


class ProposalChange(msgspec.Struct):
    """A proposed change with its decision: the change's own fields (`model.Change`) after
    the decision's."""

    change_id: str
    status: str
    version: int | None  # the profile version that applied it
    decided_at: float | None
    action: str
    target: str
    key: str | None
    trait_id: str | None
    scope: str | None
    value: str | None
    keys: list[str]
    into: list[TraitSpec]
    rationale: str
    source_refs: list[str]
    sources: list[Source]


class Proposal(msgspec.Struct):
    """A stored proposal (`GET /api/profile/proposals/{id}`). A result just imported also
    tells what was `dropped` from it and how many changes only `kept` what is there."""

    proposal_id: str
    mode: str
    via: str
    summary: str
    evidence_basis: list[str]
    unknown_refs: list[str]
    created_at: float
    changes: list[ProposalChange]
    dropped: list[dict[str, str]] | msgspec.UnsetType = msgspec.UNSET
    kept: int | msgspec.UnsetType = msgspec.UNSET


class ProfileOverview(msgspec.Struct):
    """The profile page's view (`GET /api/profile`): the profile (core, facets, traits), its
    governance and lifecycle, its version, and the seed's trait hints for the UI."""

    core: Field
    facets: dict[str, Field]
    traits: list[Trait]
    governance: str
    lifecycle: str
    version: int
    updated_at: float | None
    seed_catalog: list[str]
    journal_facet: str
