"""The journal's read models: what the store answers for a day, a job, a draft, an entry and
a photo, as msgspec structs the API encodes. The field order is the wire's key order, so a
field is never moved; nothing here knows a URL (the API adds a photo's addresses).
"""

from __future__ import annotations

from typing import Any

import msgspec

from app.journal.support import Support, VersionSentence


class DaySummary(msgspec.Struct):
    """A calendar day with messages, an entry or a draft. `photo` is the asset id of the live
    entry's first photo (None: no photo); the API answers its thumbnail's URL in its place."""

    date: str
    messages: int = 0
    user_messages: int = 0
    entry_id: str | None = None
    draft_id: str | None = None
    photos: int = 0
    photo: str | None = None


class JobError(msgspec.Struct):
    code: str
    message: str


class Job(msgspec.Struct):
    """A generation job as its owner sees it (`GET /api/journal/jobs/{id}`)."""

    job_id: str
    date: str
    state: str
    draft_id: str | None
    error: JobError | None


class FailedJob(msgspec.Struct, frozen=True):
    """A job the crash sweep marked failed: which, and whose."""

    job_id: str
    user_id: str


class DraftSource(msgspec.Struct):
    message_id: str
    source_id: str
    conversation_id: str
    act: str | None


class DraftBase(msgspec.Struct):
    """The stored text a redraft revised: `origin` entry or draft, and its id."""

    origin: str
    id: str


class Draft(msgspec.Struct):
    draft_id: str
    date: str
    text: str
    status: str
    reconstruction_status: str
    narration: str
    validation: Any  # the validator's report, as stored (JSON)
    sources: list[DraftSource]
    base: DraftBase | None
    trace: Any  # the draft's trace, as stored (JSON; `app.journal.trace`)
    support: Support  # each sentence's lines, and what was left out (`app.journal.support`)
    created_at: float


class VersionSource(msgspec.Struct):
    conversation_id: str
    message_id: str


class EntryVersion(msgspec.Struct):
    version_id: str
    created_at: float
    origin: str
    text: str
    draft_id: str | None
    sources: list[VersionSource]
    # Each sentence of `text`: the draft's (with its lines) or the user's edit; `[]`: not
    # known sentence by sentence (a version from before the map was kept, an import).
    provenance: list[VersionSentence]


class Asset(msgspec.Struct):
    """A photo of an entry: never its path in the data dir."""

    asset_id: str
    entry_id: str
    name: str
    kind: str
    bytes: int
    width: int
    height: int
    created_at: float


class Entry(msgspec.Struct):
    entry_id: str
    date: str
    text: str  # the current version's text ("" without one)
    current_version_id: str | None
    created_at: float
    deleted_at: float | None
    versions: list[EntryVersion]
    media: list[Asset]
