"""The writing profile's tables (migration `m006_profile`): reads on the reader pool, every
write through the database's one writer (`Database.execute_write_fn`), each one transaction.
The interaction profile's table is `app.profiles.interaction.store`; an import of both profiles
writes both in one transaction here.

Every change of the profile's content appends one version (`writing_profile_versions`) in
the same transaction; a governance switch or a lifecycle step alone does not. A proposal's
changes are decided one by one or all together; one decision that accepts anything is one
version, whatever the number of changes it accepts. An error inside a transaction rolls it
back whole: nothing is written.

One module: the writing profile's tables, whose writes share one transaction per change and one
version rule.
"""

from __future__ import annotations

import json
import sqlite3
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import msgspec

from app.profiles.governance import DEFAULT_GOVERNANCE
from app.profiles.interaction import store as interaction_store
from app.profiles.interaction.profile import InteractionProfile
from app.profiles.writing import model
from app.profiles.writing.model import Change, NotApplicable, Profile
from app.profiles.writing.views import Evidence, ProfileVersion, Proposal, ProposalChange
from app.storage.database import Database
from app.storage.errors import Conflict, Missing
from statemachine.profile import INITIAL_PENDING, build_profile_machine

KEPT_MAPPINGS = 20  # masked copy packages whose results can still be demasked


@dataclass(slots=True)
class ProfileState:
    profile: Profile
    governance: str
    lifecycle: str
    version_seq: int
    updated_at: float | None


@dataclass(frozen=True, slots=True)
class EvidenceRow:
    signal: str
    ref: str
    text: str
    occurred_at: float
    context_hint: str = ""
    measure: dict[str, Any] | None = None


def new_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex}"


# --- helpers inside the writer's transaction ---------------------------------------------------


def _load(conn: sqlite3.Connection, user_id: str) -> ProfileState:
    row = conn.execute("SELECT * FROM writing_profiles WHERE user_id = ?", (user_id,)).fetchone()
    if row is None:
        return ProfileState(Profile(), DEFAULT_GOVERNANCE, "uninitialized", 0, None)
    return ProfileState(
        model.decode_profile(row["profile_json"]),
        row["governance"],
        row["lifecycle"],
        row["version_seq"],
        row["updated_at"],
    )


def reason(code: str, **names: str | int) -> str:
    """A version's reason as stored: a code the page words in the user's language
    (`version.<code>`) and what it names — never a sentence in one language."""
    return json.dumps({"code": code, **names}, ensure_ascii=False)


def _read_reason(raw: str) -> tuple[str, dict[str, Any]]:
    """A stored reason's code and names; a reason written before codes (an English
    sentence) reads as code `text` with the sentence."""
    try:
        found = json.loads(raw)
    except ValueError:
        found = None
    if isinstance(found, dict) and isinstance(found.get("code"), str):
        code = found.pop("code")
        return code, found
    return "text", {"text": raw}


def _save(conn: sqlite3.Connection, user_id: str, state: ProfileState, reason: str | None) -> None:
    """Store `state`; with a `reason`, its profile becomes a new version too."""
    now = time.time()
    document = model.encode_profile(state.profile)
    if reason is not None:
        state.version_seq += 1
        conn.execute(
            "INSERT INTO writing_profile_versions (version_id, user_id, seq, reason, "
            "profile_json, created_at) VALUES (?, ?, ?, ?, ?, ?)",
            (new_id("pver"), user_id, state.version_seq, reason, document, now),
        )
    state.updated_at = now
    conn.execute(
        "INSERT INTO writing_profiles (user_id, governance, lifecycle, profile_json, "
        "version_seq, updated_at) VALUES (?, ?, ?, ?, ?, ?) "
        "ON CONFLICT (user_id) DO UPDATE SET governance = excluded.governance, "
        "lifecycle = excluded.lifecycle, profile_json = excluded.profile_json, "
        "version_seq = excluded.version_seq, updated_at = excluded.updated_at",
        (user_id, state.governance, state.lifecycle, document, state.version_seq, now),
    )


def _step(state: ProfileState, trigger: str) -> None:
    """Move the lifecycle where the trigger applies; elsewhere it stays (a confirmed
    profile stays confirmed when the user edits it)."""
    machine = build_profile_machine(state.lifecycle)
    if machine.can(trigger):
        state.lifecycle = machine.fire(trigger)


def _proposal_row(conn: sqlite3.Connection, user_id: str, proposal_id: str) -> sqlite3.Row:
    row = conn.execute(
        "SELECT * FROM writing_profile_proposals WHERE user_id = ? AND proposal_id = ?",
        (user_id, proposal_id),
    ).fetchone()
    if row is None:
        raise Missing(f"no profile proposal {proposal_id!r}")
    return row


def _changes(conn: sqlite3.Connection, proposal_id: str) -> list[sqlite3.Row]:
    return conn.execute(
        "SELECT * FROM writing_profile_changes WHERE proposal_id = ? ORDER BY position",
        (proposal_id,),
    ).fetchall()


def decode_change(raw: str) -> Change:
    return msgspec.json.decode(raw, type=Change)


def _proposal_of(row: sqlite3.Row, changes: Sequence[sqlite3.Row]) -> Proposal:
    return Proposal(
        proposal_id=row["proposal_id"],
        mode=row["mode"],
        via=row["via"],
        summary=row["summary"],
        evidence_basis=json.loads(row["evidence_basis_json"]),
        unknown_refs=json.loads(row["unknown_refs_json"]),
        created_at=row["created_at"],
        changes=[
            ProposalChange(
                c["change_id"],
                c["status"],
                c["version_seq"],
                c["decided_at"],
                **msgspec.structs.asdict(decode_change(c["change_json"])),
            )
            for c in changes
        ],
    )


class ProfileStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    # --- the profile ---------------------------------------------------------------------------

    async def state(self, user_id: str) -> ProfileState:
        return await self.db.execute_fn(lambda conn: _load(conn, user_id))

    async def edit(self, user_id: str, fn: Callable[[ProfileState], str | None]) -> ProfileState:
        """Change the profile in one transaction: `fn` changes the state it gets and returns
        the reason of a new version (None: no content change, no version)."""

        def write(conn: sqlite3.Connection) -> ProfileState:
            state = _load(conn, user_id)
            _save(conn, user_id, state, fn(state))
            return state

        return await self.db.execute_write_fn(write)

    async def versions(self, user_id: str) -> list[ProfileVersion]:
        def read(conn: sqlite3.Connection) -> list[ProfileVersion]:
            return [
                ProfileVersion(
                    r["seq"],
                    *_read_reason(r["reason"]),
                    created_at=r["created_at"],
                    profile=json.loads(r["profile_json"]),
                )
                for r in conn.execute(
                    "SELECT * FROM writing_profile_versions WHERE user_id = ? ORDER BY seq DESC",
                    (user_id,),
                )
            ]

        return await self.db.execute_fn(read)

    # --- proposals -----------------------------------------------------------------------------

    async def create_proposal(
        self,
        user_id: str,
        *,
        mode: str,
        via: str,
        summary: str,
        evidence_basis: Sequence[str],
        unknown_refs: Sequence[str],
        changes: Sequence[Change],
        apply_automatic: bool = False,
    ) -> Proposal:
        """Store a proposal with its changes pending. An `initial_build` proposal moves an
        empty profile's lifecycle to `initial_pending`. With `apply_automatic` (governance
        `learning` on a confirmed profile), the changes an automatic path may make are
        applied at once (origin `automatic`, one version); the others stay pending."""

        def write(conn: sqlite3.Connection) -> Proposal:
            state = _load(conn, user_id)
            proposal_id = new_id("prop")
            conn.execute(
                "INSERT INTO writing_profile_proposals (proposal_id, user_id, mode, "
                "via, summary, evidence_basis_json, unknown_refs_json, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    proposal_id,
                    user_id,
                    mode,
                    via,
                    summary,
                    json.dumps(list(evidence_basis)),
                    json.dumps(list(unknown_refs)),
                    time.time(),
                ),
            )
            applied = 0
            now = time.time()
            for position, change in enumerate(changes):
                status, seq = "pending", None
                if apply_automatic and model.automatic_allowed(state.profile, change):
                    try:
                        state.profile = model.apply_change(state.profile, change, "automatic", now)
                    except NotApplicable:
                        pass
                    else:
                        status, seq, applied = "applied", state.version_seq + 1, applied + 1
                conn.execute(
                    "INSERT INTO writing_profile_changes (change_id, proposal_id, "
                    "position, change_json, status, version_seq, decided_at) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (
                        new_id("chg"),
                        proposal_id,
                        position,
                        msgspec.json.encode(change).decode(),
                        status,
                        seq,
                        now if seq else None,
                    ),
                )
            lifecycle = state.lifecycle
            if mode == "initial_build":
                _step(state, "propose")
            if applied or state.lifecycle != lifecycle:
                _save(
                    conn,
                    user_id,
                    state,
                    reason("learning_applied", count=applied) if applied else None,
                )
            return _proposal_of(
                _proposal_row(conn, user_id, proposal_id), _changes(conn, proposal_id)
            )

        return await self.db.execute_write_fn(write)

    async def proposals(self, user_id: str) -> list[Proposal]:
        def read(conn: sqlite3.Connection) -> list[Proposal]:
            rows = conn.execute(
                "SELECT * FROM writing_profile_proposals WHERE user_id = ? "
                "ORDER BY created_at DESC",
                (user_id,),
            ).fetchall()
            return [_proposal_of(r, _changes(conn, r["proposal_id"])) for r in rows]

        return await self.db.execute_fn(read)

    async def proposal(self, user_id: str, proposal_id: str) -> Proposal:
        def read(conn: sqlite3.Connection) -> Proposal:
            return _proposal_of(
                _proposal_row(conn, user_id, proposal_id), _changes(conn, proposal_id)
            )

        return await self.db.execute_fn(read)

    async def decide(
        self, user_id: str, proposal_id: str, change_ids: Iterable[str] | None, accept: bool
    ) -> Proposal:
        """Accept or reject pending changes (`change_ids`, or every pending one). Accepting
        applies them in order as the user's (`accepted`) and appends exactly one version;
        a change that no longer applies or touches a locked field (a review honours locks)
        fails the whole decision (409, nothing written).
        Accepting anything confirms the profile (the user chose its content); rejecting all
        of an initial build returns a pending profile to `uninitialized`."""

        def write(conn: sqlite3.Connection) -> Proposal:
            row = _proposal_row(conn, user_id, proposal_id)
            rows = _changes(conn, proposal_id)
            wanted = None if change_ids is None else list(change_ids)
            if wanted is not None:
                known = {r["change_id"]: r for r in rows}
                missing = [c for c in wanted if c not in known]
                if missing:
                    raise Missing(f"proposal {proposal_id!r} has no change {missing[0]!r}")
                decided = [c for c in wanted if known[c]["status"] != "pending"]
                if decided:
                    raise Conflict(
                        "change_decided",
                        f"change {decided[0]} is already {known[decided[0]]['status']}",
                    )
                chosen = [known[c] for c in wanted]
            else:
                chosen = [r for r in rows if r["status"] == "pending"]
            if not chosen:
                raise Conflict("nothing_pending", "this proposal has no pending change")
            state = _load(conn, user_id)
            now = time.time()
            if accept:
                for change_row in chosen:
                    change = decode_change(change_row["change_json"])
                    if any(item.locked for item in model.touched(state.profile, change)):
                        raise Conflict(
                            "field_locked",
                            "a change touches a locked field; unlock it first or reject the change",
                        )
                    try:
                        state.profile = model.apply_change(state.profile, change, "accepted", now)
                    except NotApplicable as exc:
                        raise Conflict("change_not_applicable", str(exc)) from None
                _step(state, "confirm")  # content the user accepted is theirs
                _save(conn, user_id, state, reason("proposal_accepted", count=len(chosen)))
            conn.executemany(
                "UPDATE writing_profile_changes SET status = ?, decided_at = ?, "
                "version_seq = ? WHERE change_id = ?",
                [
                    (
                        "accepted" if accept else "rejected",
                        now,
                        state.version_seq if accept else None,
                        c["change_id"],
                    )
                    for c in chosen
                ],
            )
            if not accept and row["mode"] == "initial_build" and state.lifecycle == INITIAL_PENDING:
                left = conn.execute(
                    "SELECT COUNT(*) FROM writing_profile_changes c JOIN "
                    "writing_profile_proposals p ON p.proposal_id = c.proposal_id WHERE "
                    "p.user_id = ? AND p.mode = 'initial_build' AND c.status IN "
                    "('pending', 'accepted', 'applied')",
                    (user_id,),
                ).fetchone()[0]
                if not left:
                    _step(state, "abandon")
                    _save(conn, user_id, state, None)
            return _proposal_of(row, _changes(conn, proposal_id))

        return await self.db.execute_write_fn(write)

    # --- evidence ------------------------------------------------------------------------------

    async def add_evidence(self, user_id: str, rows: Sequence[EvidenceRow]) -> int:
        """Store new review candidates; a ref already stored is left as it is."""

        def write(conn: sqlite3.Connection) -> int:
            return conn.executemany(
                "INSERT INTO writing_profile_evidence (evidence_id, user_id, signal, "
                "ref, text, occurred_at, context_hint, measure_json, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                [
                    (
                        new_id("ev"),
                        user_id,
                        r.signal,
                        r.ref,
                        r.text,
                        r.occurred_at,
                        r.context_hint,
                        json.dumps(r.measure or {}),
                        time.time(),
                    )
                    for r in rows
                ],
            ).rowcount

        return await self.db.execute_write_fn(write) if rows else 0

    async def new_since_review(self, user_id: str) -> int:
        """Review candidates stored after the newest proposal (all of them before one)."""
        return sum(row.new for row in await self.evidence(user_id))

    async def evidence_refs(self, user_id: str) -> set[str]:
        def read(conn: sqlite3.Connection) -> set[str]:
            return {
                r[0]
                for r in conn.execute(
                    "SELECT ref FROM writing_profile_evidence WHERE user_id = ?", (user_id,)
                )
            }

        return await self.db.execute_fn(read)

    async def last_evidence_at(self, user_id: str) -> float | None:
        """When the user's newest review candidate was stored (None: there is none)."""

        def read(conn: sqlite3.Connection) -> float | None:
            return conn.execute(
                "SELECT MAX(created_at) FROM writing_profile_evidence WHERE user_id = ?", (user_id,)
            ).fetchone()[0]

        return await self.db.execute_fn(read)

    async def evidence(self, user_id: str) -> list[Evidence]:
        """Review candidates, newest text first; `new`: stored after the newest proposal."""

        def read(conn: sqlite3.Connection) -> list[Evidence]:
            reviewed = (
                conn.execute(
                    "SELECT MAX(created_at) FROM writing_profile_proposals WHERE user_id = ?",
                    (user_id,),
                ).fetchone()[0]
                or 0.0
            )
            return [
                Evidence(
                    evidence_id=r["evidence_id"],
                    signal=r["signal"],
                    ref=r["ref"],
                    text=r["text"],
                    occurred_at=r["occurred_at"],
                    context_hint=r["context_hint"],
                    new=r["created_at"] > reviewed,
                    created_at=r["created_at"],
                    measure=json.loads(r["measure_json"]),
                )
                for r in conn.execute(
                    "SELECT * FROM writing_profile_evidence WHERE user_id = ? "
                    "ORDER BY occurred_at DESC",
                    (user_id,),
                )
            ]

        return await self.db.execute_fn(read)

    # --- copy packages' placeholder mappings (on this machine only) ----------------------------

    async def keep_mapping(self, user_id: str, package_id: str, mapping: dict[str, str]) -> None:
        """Keep a masked copy package's mapping until its result comes back; only the
        newest `KEPT_MAPPINGS` of a user are kept."""

        def write(conn: sqlite3.Connection) -> None:
            conn.execute(
                "INSERT INTO writing_profile_packages (package_id, user_id, "
                "mapping_json, created_at) VALUES (?, ?, ?, ?)",
                (package_id, user_id, json.dumps(mapping, ensure_ascii=False), time.time()),
            )
            conn.execute(
                "DELETE FROM writing_profile_packages WHERE user_id = ? AND "
                "package_id NOT IN (SELECT package_id FROM writing_profile_packages "
                "WHERE user_id = ? ORDER BY created_at DESC, package_id DESC LIMIT ?)",
                (user_id, user_id, KEPT_MAPPINGS),
            )

        await self.db.execute_write_fn(write)

    async def mapping(self, user_id: str, package_id: str | None) -> dict[str, str]:
        """The mapping of the user's package `package_id`, or of their newest one when the
        result does not name its package; {} when there is none (a package no longer kept:
        its placeholders stay, rather than being read with another package's mapping)."""

        def read(conn: sqlite3.Connection) -> dict[str, str]:
            if package_id:
                row = conn.execute(
                    "SELECT mapping_json FROM writing_profile_packages WHERE user_id = ? "
                    "AND package_id = ?",
                    (user_id, package_id),
                ).fetchone()
            else:
                row = conn.execute(
                    "SELECT mapping_json FROM writing_profile_packages WHERE "
                    "user_id = ? ORDER BY created_at DESC, package_id DESC LIMIT 1",
                    (user_id,),
                ).fetchone()
            return json.loads(row[0]) if row is not None else {}

        return await self.db.execute_fn(read)

    async def replace(
        self,
        user_id: str,
        *,
        profile: Profile | None,
        governance: str | None,
        interaction: InteractionProfile | None,
    ) -> None:
        """A portability import in one transaction: the writing profile (one version; the
        user chose it, so it counts as confirmed) and/or the interaction profile
        (`app.profiles.interaction.store.save`)."""

        def write(conn: sqlite3.Connection) -> None:
            if profile is not None and governance is not None:
                state = _load(conn, user_id)
                state.profile, state.governance = profile, governance
                if not profile.empty:
                    _step(state, "confirm")
                _save(conn, user_id, state, reason("imported"))
            if interaction is not None:
                interaction_store.save(conn, user_id, interaction)

        await self.db.execute_write_fn(write)
