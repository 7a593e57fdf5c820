"""Journal generation jobs (design §8, §9): one per user at a time, progress at every state
change, and nothing left running.

    queued → reconstruct → narrate → done
         ↘            ↘          ↘ failed (with a code and a reason)

A day too big for one prompt runs a stage in parts (`app.journal.parts`); each part's start
is sent as progress of the same state with `part` and `parts` (not written: the row keeps
the state).

The job row lives in SQLite (`journal_jobs`), so `GET /api/journal/jobs/{id}` answers after
the job and after a restart. Every state change is written, then sent to all of the user's
WebSockets as `journal_progress`. A job that ends in an exception is marked failed with the
error's code; one cancelled at shutdown is marked failed (`interrupted`) before the process
goes. Each job row names its owner, the process that runs it (the runtime's instance id);
one whose owner died is marked failed (`interrupted`) too — at start-up and, with processes
sharing a store, when the runtime's death watch sees another process gone (`recover`). A
live process's running job is never touched: whether an owner is dead is the runtime's
heartbeat's word (`owner_dead`, handed in by the wiring).
The job's tasks are kept and cancelled and awaited on shutdown (one cleanup context).
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

import msgspec

from app.core import log as logctx
from app.core.background import cancel_and_wait
from app.core.lanes import in_background
from app.core.refusal import RefusedKind
from app.core.settings import Settings
from app.journal import budget, parts, stages
from app.journal.artifact import Base, fallback_artifact
from app.journal.day import Conversation, Source, number_sources, user_sources
from app.journal.schema import PURPOSE_NARRATE, PURPOSE_RECONSTRUCT
from app.journal.store import JournalStore, StoredBase
from app.journal.support import Support
from app.journal.trace import DraftTrace
from app.llm.errors import ModelError
from app.llm.gateway import Gateway
from app.profiles.writing.service import ProfileService

log = logging.getLogger(__name__)

INTERRUPTED = ("interrupted", "the server stopped while the job ran; start it again")


class JournalProgress(
    msgspec.Struct, tag_field="type", tag="journal_progress", kw_only=True, omit_defaults=True
):
    """design §9 `journal_progress {job_id, date, state, draft_id?, error?}`, with the `type`,
    `character_id` and `at` every WebSocket message has; the journal belongs to no
    character, so `character_id` is empty. A member of the one union of WebSocket messages
    (`app.runtime.wire.WsAny`), defined here because the journal sits below the runtime.

    `part` and `parts`: which part of how many the state's stage runs, only for a day in
    parts (`app.journal.parts`) and left out otherwise — the message keeps the layout it
    always had (`draft_id` and `error` are always written, null or not)."""

    character_id: str
    at: float
    job_id: str
    date: str
    state: str
    draft_id: str | None
    error: dict[str, str] | None
    part: int | None = None
    parts: int | None = None


class NoUserSources(RefusedKind):
    """The selected conversations hold no user text (422 `no_user_sources`)."""

    STATUS, CODE = 422, "no_user_sources"


# Sends a message to every WebSocket of a user (the runtime's hub, given by the wiring).
Publish = Callable[[str, Any], Awaitable[None]]
# Whether the process that owns a job is gone (the runtime's heartbeat, given by the wiring).
OwnerDead = Callable[[str], Awaitable[bool]]


class JournalJobs:
    def __init__(
        self,
        store: JournalStore,
        profiles: ProfileService,
        gateway: Gateway,
        settings: Settings,
        publish: Publish | None,
        *,
        owner: str = "",
        owner_dead: OwnerDead | None = None,
    ) -> None:
        """`owner`: this process's id in the job rows (the runtime's instance id; a fresh
        one when not given). `owner_dead`: whether another owner is gone; without it this
        process is the store's only one, so every other owner is."""
        self.store = store
        self.profiles = profiles  # the app's one (its identity registry the API's)
        self.gateway = gateway
        self.settings = settings
        self.publish = publish
        self.owner = owner or uuid.uuid4().hex[:12]
        self.owner_dead = owner_dead
        self._tasks: dict[str, asyncio.Task[None]] = {}

    async def recover(self) -> list[str]:
        """Fail the open jobs whose owner is gone (start-up; the death watch's sweep);
        returns their ids. Jobs of this process and of live processes are left alone."""
        dead: list[str] = []
        for job_id, owner in await self.store.open_jobs():
            if owner == self.owner:
                continue
            if owner and self.owner_dead is not None and not await self.owner_dead(owner):
                continue
            dead.append(job_id)
        failed = await self.store.fail_jobs(dead, *INTERRUPTED)
        for job in failed:
            log.warning(
                "journal job of a process that is gone; marked failed",
                extra=logctx.fields(job_id=job.job_id, user_id=job.user_id),
            )
        return [job.job_id for job in failed]

    async def wait(self, job_id: str) -> None:
        """Until the job has ended, if it runs in this process (tools, benchmarks)."""
        task = self._tasks.get(job_id)
        if task is not None:
            await asyncio.shield(task)

    async def close(self) -> None:
        await cancel_and_wait(list(self._tasks.values()))

    async def start(
        self,
        user_id: str,
        date: str,
        conversations: Sequence[Conversation],
        *,
        include_existing: bool = False,
        language: str = "en",
    ) -> str:
        """Queue a job for the day's `conversations`; raises `NoUserSources` or the store's
        `Conflict("journal_busy")`.

        `include_existing` (seed 004, off by default): the draft revises the day's stored
        text — the entry's current version, or without an entry the day's last draft (none:
        it is written anew). `language`: the user's, for the words the journal adds itself."""
        sources = number_sources(conversations)
        if not user_sources(sources):
            raise NoUserSources(f"the selected conversations of {date} hold no text of yours")
        base = await self.store.redraft_base(user_id, date) if include_existing else None
        job_id = await self.store.create_job(user_id, date, self.owner)
        await self._state(user_id, job_id, date, "queued", written=True)
        messages = sum(len(c.messages) for c in conversations)
        job = _Job(user_id, job_id, date, sources, messages, base, language)
        # The background lane (app.core.lanes): a day's drafting holds a request a slice at most.
        task = in_background(self._run(job), name=f"journal-job:{job_id}")
        self._tasks[job_id] = task
        task.add_done_callback(lambda _: self._tasks.pop(job_id, None))
        log.info(
            "journal job queued",
            extra=logctx.fields(
                job_id=job_id,
                user_id=user_id,
                date=date,
                sources=len(sources),
                base=base.origin if base else None,
            ),
        )
        return job_id

    async def _state(
        self,
        user_id: str,
        job_id: str,
        date: str,
        state: str,
        *,
        draft_id: str | None = None,
        error: tuple[str, str] | None = None,
        written: bool = False,
        part: tuple[int, int] | None = None,
    ) -> None:
        """Write the job's new state (unless `written` already) and tell the user's tabs;
        `part`: (part, parts) of a stage run in parts."""
        if not written:
            await self.store.set_job(job_id, state, draft_id=draft_id, error=error)
        log.info(
            "journal job state",
            extra=logctx.fields(
                job_id=job_id,
                user_id=user_id,
                state=state,
                error=error[0] if error else None,
                part=f"{part[0]}/{part[1]}" if part else None,
            ),
        )
        if self.publish is None:
            return
        progress = JournalProgress(
            character_id="",
            at=time.time(),
            job_id=job_id,
            date=date,
            state=state,
            draft_id=draft_id,
            error={"code": error[0], "message": error[1]} if error else None,
            part=part[0] if part else None,
            parts=part[1] if part else None,
        )
        try:
            await self.publish(user_id, progress)
        except Exception as exc:  # noqa: BLE001 - the state is stored; the page polls the job
            log.warning(
                "journal progress not sent",
                extra=logctx.fields(
                    job_id=job_id, user_id=user_id, state=state, error=type(exc).__name__
                ),
            )

    async def _run(self, job: _Job) -> None:
        user_id, job_id, date = job.user_id, job.job_id, job.date
        try:
            draft_id = await self._generate(job)
        except ModelError as exc:
            await self._state(user_id, job_id, date, "failed", error=(exc.code, exc.message))
        except asyncio.CancelledError:
            await self._state(user_id, job_id, date, "failed", error=INTERRUPTED)
            raise
        except Exception as exc:
            log.exception(
                "journal job crashed", extra=logctx.fields(job_id=job_id, user_id=user_id)
            )
            await self._state(
                user_id,
                job_id,
                date,
                "failed",
                error=("internal_error", f"the job crashed ({type(exc).__name__})"),
            )
        else:
            await self._state(user_id, job_id, date, "done", draft_id=draft_id, written=True)

    async def _generate(self, job: _Job) -> str:
        user_id, job_id, date = job.user_id, job.job_id, job.date
        # The writing profile's compiled brief (the default brief until it is confirmed).
        brief = await self.profiles.journal_brief(user_id)
        planned = await self._plan(job, brief)
        # Each state is written while its stage runs: the one writer keeps the order of the
        # writes (the state is submitted first), and a stage never waits for a disk sync.
        _, first = await asyncio.gather(
            self._state(user_id, job_id, date, "reconstruct"), self._reconstruct(job, planned)
        )
        narrate_parts = (
            planned.narrate
            if first.artifact is planned.fallback
            else parts.narrate_parts(first.artifact, brief, planned.window, self.settings)
        )
        if len(narrate_parts) > 1:
            parts.warn("narrate", len(narrate_parts), planned, job_id=job_id, user_id=user_id)
        _, second = await asyncio.gather(
            self._state(user_id, job_id, date, "narrate"),
            stages.narrate(
                self.gateway,
                date,
                first.artifact,
                narrate_parts,
                self.settings.journal_output_tokens,
                user_id=user_id,
                language=job.language,
                on_part=self._on_part(job, "narrate"),
            ),
        )
        info = self.gateway.info()
        records = [*first.records, *second.records]
        trace = DraftTrace(
            provider=info.provider,
            model=info.model,
            window_source=planned.window_source,
            **msgspec.structs.asdict(planned.budget),
            prompt_tokens=_total(r.prompt_tokens for r in records),
            completion_tokens=_total(r.completion_tokens for r in records),
            stages=records,
        )
        return await self.store.save_draft(
            user_id,
            date,
            text=second.text,
            reconstruction_status=first.artifact.reconstruction_status,
            narration=second.narration,
            validation=first.validation,
            trace=trace,
            sources=user_sources(job.sources),
            job_id=job_id,
            base=job.base,
            support=Support(second.sentences, second.left_out),
        )

    async def _plan(self, job: _Job, brief: str) -> parts.Plan:
        """The budget of the whole job, before any model call (`parts.plan`): the day cap,
        the window, each stage's parts."""
        budget.check_day(job.messages, self.settings)
        # Both stages' window: with a task model, stage 1 runs on it (the smaller counts).
        window, window_source = await self.gateway.context_window(
            PURPOSE_RECONSTRUCT, PURPOSE_NARRATE
        )
        base = Base(job.base.origin, job.base.text) if job.base is not None else None
        return parts.plan(
            job.date,
            job.sources,
            fallback_artifact(job.sources, base),
            brief,
            (window, window_source),
            self.settings,
            job_id=job.job_id,
            user_id=job.user_id,
        )

    async def _reconstruct(self, job: _Job, planned: parts.Plan) -> stages.Reconstructed:
        """Stage 1: one call for a day of one part; else one a part, in order (the page is
        told which part runs), merged (`parts.merge`). A day of one part is reconstructed
        against the day's fallback, so that stage 2 gets the very prompt the budget measured
        when it falls back."""
        settings, on_part = self.settings, self._on_part(job, "reconstruct")
        results = []
        for index, (sources, prompt) in enumerate(planned.day):
            if len(planned.day) > 1:
                await on_part(index + 1, len(planned.day))
            fallback = planned.fallback if len(planned.day) == 1 else fallback_artifact(sources)
            results.append(
                await stages.reconstruct(
                    self.gateway,
                    prompt,
                    sources,
                    fallback,
                    settings.journal_output_tokens,
                    user_id=job.user_id,
                )
            )
        if len(results) == 1:
            return results[0]
        return parts.merge(job.sources, results, planned.fallback)

    def _on_part(self, job: _Job, state: str) -> stages.OnPart:
        """Tells the user's tabs which part of the stage `state` runs (not written: the job's
        row keeps its state, the part is only progress)."""

        async def on_part(part: int, count: int) -> None:
            await self._state(
                job.user_id, job.job_id, job.date, state, written=True, part=(part, count)
            )

        return on_part


@dataclass(frozen=True, slots=True)
class _Job:
    """What one job works on: the day's numbered sources, how many messages they came from
    (the day cap), the stored text it revises, if any, and the user's language."""

    user_id: str
    job_id: str
    date: str
    sources: list[Source]
    messages: int
    base: StoredBase | None
    language: str


def _total(values: Any) -> int | None:
    known = [v for v in values if v is not None]
    return sum(known) if known else None
