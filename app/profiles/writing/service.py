"""The writing profile's operations: what the API and the journal call (seed 004 §12–§15),
and the export and import of both profiles, whose combined document this side composes (the
interaction profile's own room is `app.profiles.interaction`).

Manual edits are the user's own (origin `manual`) and work in every governance mode; each
content edit is one version. Automatic paths (the AI review's result under governance
`learning`, evidence collection — when the page asks, and at each journal save through the
local triggers of `signals`) run only on a confirmed profile, never under `frozen`, and
never overwrite a locked field or one the user wrote or accepted (`model.automatic_allowed`).
The copy package that leaves the machine is masked by the privacy gateway's `Masker` unless
the user chooses otherwise; its mapping stays here for the result's import.

One module: one service, the operations the API and the journal call, over the store and the
pure model.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

import msgspec

from app.core import log as logctx
from app.core.settings import Settings
from app.llm.privacy import EgressGate, IdentityRegistry, Masker, demask
from app.profiles.interaction import portability as interaction_doc
from app.profiles.interaction.store import InteractionStore
from app.profiles.writing import brief as briefs
from app.profiles.writing import corpus, model, portability, signals
from app.profiles.writing import package as pkg
from app.profiles.writing.brief import DEFAULT_BRIEF
from app.profiles.writing.model import Change, NotApplicable, Source, Trait
from app.profiles.writing.store import EvidenceRow, ProfileState, ProfileStore, new_id, reason
from app.profiles.writing.views import ProfileOverview, Proposal
from app.storage.database import Database
from app.storage.errors import Conflict, Missing
from statemachine.profile import CONFIRMED

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class CopyPackage:
    package: dict[str, Any]
    prompt: str
    masked: bool
    package_id: str | None
    placeholders: dict[str, int]  # per kind: how many distinct values were masked


class ProfileService:
    def __init__(
        self,
        store: ProfileStore,
        settings: Settings,
        identities: IdentityRegistry,
        interactions: InteractionStore,
    ) -> None:
        """All parts built once by the wiring: `identities` is the app's one registry (its
        cache is dropped when the user edits it), used for the copy package's masking;
        `interactions` the interaction profile, exported beside the writing profile."""
        self.store = store
        self.db: Database = store.db
        self.settings = settings
        self.identities = identities
        self.interactions = interactions

    # --- the brief for stage 2 of the journal --------------------------------------------------

    async def journal_brief(self, user_id: str) -> str:
        """The compiled brief, or the journal's default brief while the profile is not
        confirmed."""
        state = await self.store.state(user_id)
        if state.lifecycle != CONFIRMED or state.profile.empty:
            return DEFAULT_BRIEF
        entries = await self.db.execute_fn(
            lambda conn: corpus.voiced_entries(conn, user_id, limit=briefs.MAX_EXEMPLARS)
        )
        exemplars = [briefs.Exemplar(e.date, e.text) for e in entries[: briefs.MAX_EXEMPLARS]]
        return briefs.compile_brief(
            state.profile,
            exemplars,
            base=DEFAULT_BRIEF,
            max_chars=self.settings.profile_brief_chars,
        )

    @staticmethod
    def is_compiled(brief: str) -> bool:
        """Whether a `journal_brief` was compiled from the profile (not the journal's default):
        the API says so without knowing the prompt's text."""
        return brief != DEFAULT_BRIEF

    # --- manual edits --------------------------------------------------------------------------

    async def edit(self, user_id: str, change: Change | list[Change], why: str) -> ProfileState:
        """Apply the user's own change(s) (origin `manual`) in one transaction: one version
        (`why`: its reason, `store.reason`);
        a profile edited by hand counts as confirmed. A change that does not apply writes
        nothing."""
        changes = change if isinstance(change, list) else [change]

        def fn(state: ProfileState) -> str:
            try:
                for one in changes:
                    state.profile = model.apply_change(state.profile, one, "manual", time.time())
            except NotApplicable as exc:
                raise Conflict("change_not_applicable", str(exc)) from None
            if state.lifecycle != CONFIRMED:
                state.lifecycle = CONFIRMED
            return why

        return await self.store.edit(user_id, fn)

    async def set_lock(self, user_id: str, target: str, name: str, locked: bool) -> ProfileState:
        """Lock or unlock the core, a facet or a trait (a version: the lock is part of the
        profile's state that automatic paths obey)."""

        def fn(state: ProfileState) -> str:
            item: model.Field | Trait | None
            shown = ""
            if target == "core":
                item = state.profile.core
            elif target == "facet":
                key = state.profile.facet_key(name)
                item = state.profile.facets.get(key) if key is not None else None
                shown = (item.label or key) if item is not None and key is not None else ""
            else:
                item = state.profile.trait(name)
                shown = (item.label or item.key) if item is not None else ""
            if item is None:
                raise Missing(f"no {target} {name!r}")
            item.locked = locked
            return reason("locked" if locked else "unlocked", target=target, name=shown)

        return await self.store.edit(user_id, fn)

    async def set_governance(self, user_id: str, governance: str) -> ProfileState:
        def fn(state: ProfileState) -> None:
            state.governance = governance

        return await self.store.edit(user_id, fn)

    # --- evidence (local, no model) ------------------------------------------------------------

    async def collect_evidence(self, user_id: str) -> int:
        """Store new review candidates from the user's texts: a saved entry, a strong edit of
        a generated draft, a long dialog sample (cooldown; only while no entries exist).
        Only on a confirmed profile and never under `frozen`."""
        state = await self.store.state(user_id)
        if state.lifecycle != CONFIRMED or state.governance == "frozen":
            return 0
        stored = await self.store.evidence_refs(user_id)
        texts = await self._user_voice(user_id, measure=True, measured=stored)
        rows = []
        for text in texts:
            if text.ref in stored:
                continue
            if text.kind == "dialog":
                signal = "dialog_sample"
            elif (
                text.edit_share is not None
                and text.edit_share >= self.settings.profile_strong_edit_share
            ):
                signal = "strong_edit"
            else:
                signal = "entry_saved"
            rows.append(
                EvidenceRow(
                    signal,
                    text.ref,
                    text.text,
                    text.occurred_at,
                    text.context_hint,
                    {"edit_share": text.edit_share, "chars": len(text.text)},
                )
            )
        added = await self.store.add_evidence(user_id, rows)
        log.info(
            "profile evidence collected",
            extra=logctx.fields(user_id=user_id, seen=len(texts), added=added),
        )
        return added

    async def on_entry_saved(self, user_id: str, entry_id: str) -> str | None:
        """The save-time triggers (seed 004 §13, `signals`): the entry's current version
        becomes a review candidate when it is a strong edit of a generated draft, deviates
        from the user's usual writing, or periodic readiness has come. Returns the signal,
        or None (no candidate: the profile is not confirmed, it is `frozen`, the entry was
        saved unchanged from a draft, its version is a candidate already, or no trigger
        holds)."""
        state = await self.store.state(user_id)
        if state.lifecycle != CONFIRMED or state.governance == "frozen":
            return None
        settings = self.settings
        known = await self.store.evidence_refs(user_id)
        last = await self.store.last_evidence_at(user_id)

        def read(conn: Any) -> tuple[list[corpus.CorpusText], list[corpus.CorpusText]]:
            this = corpus.voiced_entries(conn, user_id, measure=True, entry_id=entry_id)
            usual = corpus.voiced_entries(conn, user_id, limit=signals.BASELINE + 1)
            return this, usual

        this, usual = await self.db.execute_fn(read)
        if not this or this[0].ref in known:
            return None
        text = this[0]
        usual = [t for t in usual if t.ref != text.ref][: signals.BASELINE]
        measures = signals.measure(text.text)
        deviations = signals.deviation(
            measures, [signals.measure(t.text) for t in usual], settings.profile_deviation_share
        )
        signal = signals.trigger(
            edit_share=text.edit_share,
            strong_share=settings.profile_strong_edit_share,
            deviations=deviations,
            last_candidate_at=last,
            saves_since=sum(last is not None and t.occurred_at > last for t in usual),
            now=time.time(),
            period=settings.profile_evidence_period,
            volume=settings.profile_evidence_volume,
        )
        if signal is None:
            log.info(
                "profile: saved entry is no review candidate",
                extra=logctx.fields(user_id=user_id, entry_id=entry_id),
            )
            return None
        await self.store.add_evidence(
            user_id,
            [
                EvidenceRow(
                    signal,
                    text.ref,
                    text.text,
                    text.occurred_at,
                    text.context_hint,
                    {
                        "trigger": signal,
                        "edit_share": text.edit_share,
                        "chars": len(text.text),
                        **measures.as_dict(),
                        **({"deviation": deviations} if deviations else {}),
                    },
                )
            ],
        )
        log.info(
            "profile: saved entry is a review candidate",
            extra=logctx.fields(user_id=user_id, entry_id=entry_id, signal=signal),
        )
        return signal

    async def overview(self, user_id: str) -> ProfileOverview:
        state = await self.store.state(user_id)
        profile = state.profile
        return ProfileOverview(
            core=profile.core,
            facets=profile.facets,
            traits=profile.traits,
            governance=state.governance,
            lifecycle=state.lifecycle,
            version=state.version_seq,
            updated_at=state.updated_at,
            seed_catalog=list(model.SEED_CATALOG),
            journal_facet=model.JOURNAL_FACET,
        )

    # --- review: the package out, the result in ------------------------------------------------

    async def _user_voice(
        self, user_id: str, *, measure: bool = False, measured: Collection[str] = ()
    ) -> list[corpus.CorpusText]:
        """The user's own texts (`corpus.user_voice`) with the dialog sample settings."""
        settings = self.settings
        return await self.db.execute_fn(
            lambda conn: corpus.user_voice(
                conn,
                user_id,
                min_chars=settings.profile_dialog_sample_chars,
                cooldown=settings.profile_dialog_sample_cooldown,
                measure=measure,
                measured=measured,
            )
        )

    async def _evidence_texts(
        self, user_id: str, mode: str
    ) -> tuple[list[pkg.EvidenceText], dict[str, Source]]:
        """What a package may carry, and every ref a result may cite (with its source).

        `initial_build` reads the historical corpus (voiced entries, or dialog samples while
        there are none); `review` the review candidates new since the last review (all of
        them when none is new), or the corpus while there are none yet."""
        corpus_texts = await self._user_voice(user_id)
        candidates = await self.store.evidence(user_id)
        known: dict[str, Source] = {}
        for text in corpus_texts:
            known[text.ref] = Source(text.ref, text.occurred_at, text.context_hint)
        for row in candidates:
            source = Source(row.ref, row.occurred_at, row.context_hint)
            known[row.ref] = known[row.evidence_id] = source
        if mode == "review" and candidates:
            fresh = [row for row in candidates if row.new] or candidates
            texts = [
                pkg.EvidenceText(
                    row.evidence_id,
                    row.signal,
                    row.text,
                    row.occurred_at,
                    row.context_hint,
                )
                for row in fresh
            ]
        else:
            texts = [
                pkg.EvidenceText(t.ref, t.kind, t.text, t.occurred_at, t.context_hint, t.facet)
                for t in corpus_texts
            ]
        return texts, known

    async def package(
        self,
        user_id: str,
        mode: str,
        *,
        package_id: str | None = None,
        max_chars: int | None = None,
    ) -> dict[str, Any]:
        await self.collect_evidence(user_id)
        state = await self.store.state(user_id)
        texts, _ = await self._evidence_texts(user_id, mode)
        signals = {
            "evidence_texts": len(texts),
            "kinds": {k: sum(t.kind == k for t in texts) for k in sorted({t.kind for t in texts})},
            "note": "local counts; hints only, not evidence",
        }
        return pkg.build_package(
            state.profile,
            governance=state.governance,
            lifecycle=state.lifecycle,
            mode=mode,
            evidence=texts,
            signals=signals,
            package_id=package_id,
            max_chars=max_chars or self.settings.profile_package_chars,
        )

    async def copy_package(self, user_id: str, mode: str, *, masked: bool = True) -> CopyPackage:
        """The package the user copies into another chat: it leaves the machine, so by
        default it goes through the privacy gateway's masking (the user's registered people
        and the detectors' numbers become placeholders; the mapping stays here, for the
        result's import) and then the egress gate's check (a registered name the masking
        missed refuses the package: `EgressRefused`). `masked=False` is the user's explicit
        choice to see and copy their text as it is."""
        limit = self.settings.profile_package_chars
        if not masked:
            log.info(
                "profile copy package made unmasked, by the user's choice",
                extra=logctx.fields(user_id=user_id, mode=mode),
            )
            plain = await self.package(user_id, mode)
            return CopyPackage(plain, pkg.prompt(plain), False, None, {})
        package_id = new_id("ppkg")
        index = await self.identities.index(user_id)
        budget = limit
        for _ in range(3):  # placeholders can be longer than what they replace
            masker = Masker(index)
            plain = await self.package(user_id, mode, package_id=package_id, max_chars=budget)
            package = pkg.mask_package(plain, masker.mask)
            if len(pkg.dumps(package)) <= limit:
                break
            budget -= len(pkg.dumps(package)) - limit + 100
        if masker.mapping:
            package["task"] += pkg.PLACEHOLDER_RULE
        text = pkg.prompt(package)
        # The same gate a remote request passes, over the whole text that is copied.
        EgressGate(masker.registered, purpose="profile_copy_package").check(
            msgspec.json.encode({"prompt": text})
        )
        if masker.mapping:
            await self.store.keep_mapping(user_id, package_id, masker.mapping)
        counts = {kind: n for kind, n in masker.counts.items() if n}
        log.info(
            "profile copy package masked",
            extra=logctx.fields(
                user_id=user_id, mode=mode, masked=len(masker.mapping), kinds=counts
            ),
        )
        return CopyPackage(package, text, True, package_id, counts)

    async def import_result(
        self, user_id: str, raw: str | bytes | dict[str, Any], *, via: str = "paste"
    ) -> Proposal:
        """A result (pasted, or the AI review's) → a stored proposal. Raises
        `pkg.ResultInvalid`; nothing is stored then. A pasted result's placeholders are put
        back with the mapping kept for its copy package (the one it names in `package_id`,
        else the newest). A pasted result is never applied; the
        AI review's is governed (`learning` applies what an automatic path may)."""
        data = pkg.decode_result(raw)
        if via == "paste" and isinstance(data, dict):
            # The answer to a masked copy package: its placeholders back, here.
            named = data.get("package_id")
            mapping = await self.store.mapping(user_id, named if isinstance(named, str) else None)
            data = pkg.map_strings(data, lambda text: demask(text, mapping))
        result = pkg.read_result(data)
        state = await self.store.state(user_id)
        _, known = await self._evidence_texts(user_id, result.mode)
        parsed = pkg.resolve(
            result, state.profile, known, max_value_chars=self.settings.max_message_chars
        )
        automatic = (
            via == "api"
            and state.governance == "learning"
            and state.lifecycle == CONFIRMED
            and result.mode == "review"
        )
        proposal = await self.store.create_proposal(
            user_id,
            mode=parsed.mode,
            via=via,
            summary=parsed.summary,
            evidence_basis=parsed.evidence_basis,
            unknown_refs=parsed.unknown_refs,
            changes=parsed.changes,
            apply_automatic=automatic,
        )
        proposal.dropped = parsed.dropped
        proposal.kept = parsed.kept
        log.info(
            "profile proposal stored",
            extra=logctx.fields(
                user_id=user_id,
                via=via,
                mode=parsed.mode,
                changes=len(parsed.changes),
                unknown_refs=len(parsed.unknown_refs),
                automatic=automatic,
            ),
        )
        return proposal

    # --- portability ---------------------------------------------------------------------------

    async def export(self, user_id: str, kind: str) -> dict[str, Any]:
        state = await self.store.state(user_id)
        writing = portability.export_writing(state.profile, state.governance)
        current = interaction_doc.export(await self.interactions.current(user_id))
        return {
            "writing": writing,
            "interaction": current,
            "all": portability.export_both(writing, current),
        }[kind]

    async def import_document(self, user_id: str, raw: bytes) -> None:
        """Replace what the document carries; raises `PortableError`."""
        writing, current = portability.read(raw, self.settings.max_message_chars)
        await self.store.replace(
            user_id,
            profile=portability.writing_profile(writing) if writing else None,
            governance=writing.governance if writing else None,
            interaction=interaction_doc.imported(current) if current is not None else None,
        )
        log.info(
            "profiles imported",
            extra=logctx.fields(
                user_id=user_id, writing=writing is not None, interaction=current is not None
            ),
        )
