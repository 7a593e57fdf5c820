"""Oversized days in parts (issue 40 item 4; seed 004 §16.6 left chunk-and-merge open).

A day whose stage-1 prompt does not fit the model's window is reconstructed in parts, and an
artifact whose stage-2 prompt does not fit is narrated in parts, instead of either being
refused with `prompt_budget_exceeded`. A part is a run of whole lines in source order: a
user line and the assistant line before it (its context) stay together, and nothing is ever
cut inside a line. Each part is as long as fits, from the day's start on (greedy: the fewest
parts that runs of whole lines allow), sized by the gateway's own arithmetic
(`app.journal.budget.measure` over `app.llm.budget`, no second estimator). The prompt that
is measured is the one that is sent, so a part that fits here fits the call.

The source ids stay the day's: `u1 … un` are numbered once for the whole day
(`app.journal.day.number_sources`) and a part carries its lines with their ids, so a part's
evidence, its validation, the merged artifact (`app.journal.stages.merge`) and the draft's
provenance all name the day's own lines.

A line whose prompt alone does not fit (with its assistant context for stage 1, with its
sourced notes, and in the first part the base a redraft revises, for stage 2) is refused as
`journal_line_too_long`: a day is split only between lines. A day that fits is one part,
with exactly the prompt it had before.

Here too: the job's plan of both stages before any call (`plan`), the merge of stage 1's
parts (`merge`, validated again over the whole day) and the warning a day in parts logs
(`warn`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from app.core import log as logctx
from app.core.settings import Settings
from app.journal import budget, stages
from app.journal.artifact import Line, VerifiedArtifact, verified_artifact
from app.journal.day import Source, user_sources
from app.journal.schema import Reconstruction
from app.journal.stages import Reconstructed
from app.journal.validator import validate
from app.llm.budget import Budget
from app.llm.errors import ModelError
from app.llm.types import Message

log = logging.getLogger(__name__)
T = TypeVar("T")
# How much of a prompt may be sized: the prompt's budget (`app.journal.budget.measure`) for a
# run of items, and whether the run is the day's first.
Measure = Callable[[Sequence[T], bool], Budget]


@dataclass(frozen=True, slots=True)
class Plan:
    """A job's budget, decided before any call (`plan`): the window and where it came from,
    the budget for the trace, stage 1's parts (sources and prompt), the day's fallback
    artifact and stage 2's parts of it."""

    window: int
    window_source: str
    budget: budget.Budget
    day: list[tuple[list[Source], list[Message]]]
    fallback: VerifiedArtifact
    narrate: list[stages.NarratePart]
    lines: int  # the day's lines of the user's
    chars_per_token: float


def plan(
    date: str,
    sources: Sequence[Source],
    fallback: VerifiedArtifact,
    brief: str,
    window: tuple[int, str],
    settings: Settings,
    **ids: Any,
) -> Plan:
    """The parts of a job's day in `window` (tokens, and where the number came from): the
    window refused first when the journal cannot use it, then stage 1's parts and stage 2's
    parts of the `fallback` artifact, every prompt measured (`budget.plan`: the trace's
    numbers). A day in parts is logged (`warn`, with `ids`: the job's)."""
    tokens, source = window
    budget.check_window(tokens, settings)
    day = reconstruct_parts(date, sources, tokens, settings)
    narrate = narrate_parts(fallback, brief, tokens, settings)
    prompts = [prompt for _, prompt in day] + [prompt for _, prompt in narrate]
    planned = budget.plan(tokens, prompts, settings)
    lines = len(user_sources(sources))
    found = Plan(tokens, source, planned, day, fallback, narrate, lines, settings.chars_per_token)
    if len(day) > 1:
        warn("reconstruct", len(day), found, **ids)
    return found


def warn(stage: str, count: int, planned: Plan, **ids: Any) -> None:
    """A day too big for one prompt of `stage`, logged with the limits that made it so."""
    spent = planned.budget
    log.warning(
        "journal day in parts: one prompt does not fit the window",
        extra=logctx.fields(
            **ids,
            stage=stage,
            parts=count,
            lines=planned.lines,
            limit="context_window",
            window=planned.window,
            journal_output_tokens=spent.reserved_output,
            budget_safety_margin=spent.margin,
            margin_tokens=spent.margin_tokens,
            chars_per_token=planned.chars_per_token,
        ),
    )


def split(
    items: Sequence[T], measure: Measure[T], name: Callable[[T, bool], str], stage: str
) -> list[list[T]]:
    """`items` in runs, in order, each the longest from where the one before ended whose
    prompt fits (`measure(run, first).fits`). A prompt grows with its run, so the longest is
    found by doubling and then halving the run: a few prompts measured a part, not one a
    line. An item whose prompt does not fit alone is `journal_line_too_long` (`name(item,
    first)` says which line, for the `stage` named)."""
    runs: list[list[T]] = []
    start = 0
    while start < len(items):
        first = not runs
        alone = measure(items[start : start + 1], first)
        if not alone.fits:
            raise _too_long(name(items[start], first), stage, alone)
        rest = len(items) - start
        good, bad = 1, rest + 1  # a run of `good` fits, one of `bad` does not
        while good < rest and bad > rest:
            probe = min(good * 2, rest)
            if measure(items[start : start + probe], first).fits:
                good = probe
            else:
                bad = probe
        while bad - good > 1 and good < rest:
            middle = (good + bad) // 2
            if measure(items[start : start + middle], first).fits:
                good = middle
            else:
                bad = middle
        runs.append(list(items[start : start + good]))
        start += good
    return runs


def reconstruct_parts(
    date: str, sources: Sequence[Source], window: int, settings: Settings
) -> list[tuple[list[Source], list[Message]]]:
    """Stage 1's parts of the day's `sources`, each with its prompt
    (`stages.reconstruct_prompt`): the whole day as one when it fits `window`."""
    whole = stages.reconstruct_prompt(date, sources)
    if budget.measure(window, whole, settings).fits:
        return [(list(sources), whole)]

    def measure(run: Sequence[list[Source]], _first: bool) -> Budget:
        return budget.measure(window, stages.reconstruct_prompt(date, _flat(run)), settings)

    def name(unit: list[Source], _first: bool) -> str:
        return unit[-1].source_id  # the user line; an assistant line before it is context

    runs = split(_units(sources), measure, name, "reconstruct")
    return [(part, stages.reconstruct_prompt(date, part)) for part in map(_flat, runs)]


def narrate_parts(
    artifact: VerifiedArtifact, brief: str, window: int, settings: Settings
) -> list[stages.NarratePart]:
    """Stage 2's parts of `artifact`, each a `part_of` it with its prompt
    (`stages.narrate_prompt`, told where the part stands): the whole artifact, with the
    prompt it always had, when that fits `window`."""
    whole = stages.narrate_prompt(artifact, brief)
    if budget.measure(window, whole, settings).fits:
        return [(artifact, whole)]

    def prompt(lines: Sequence[Line], first: bool) -> list[Message]:
        part = part_of(artifact, lines, first=first)
        return stages.narrate_prompt(part, brief, "first" if first else "later")

    def measure(lines: Sequence[Line], first: bool) -> Budget:
        return budget.measure(window, prompt(lines, first), settings)

    def name(line: Line, first: bool) -> str:
        revised = first and artifact.base is not None
        return f"{line.source_id} (with the stored text it revises)" if revised else line.source_id

    runs = split(artifact.sources, measure, name, "narrate")
    return [
        (part_of(artifact, run, first=k == 0), prompt(run, k == 0)) for k, run in enumerate(runs)
    ]


def part_of(artifact: VerifiedArtifact, lines: Sequence[Line], *, first: bool) -> VerifiedArtifact:
    """The artifact of some of its `lines`: those lines, the sourced notes on them, and the
    base a redraft revises only in the `first` part (the entry revises it once)."""
    ids = {line.source_id for line in lines}
    return VerifiedArtifact(
        reconstruction_status=artifact.reconstruction_status,
        sources=list(lines),
        corrections=[note for note in artifact.corrections if note.source_id in ids],
        uncertainties=[note for note in artifact.uncertainties if note.source_id in ids],
        contradictions=[note for note in artifact.contradictions if note.source_id in ids],
        plan_changes=[note for note in artifact.plan_changes if note.source_id in ids],
        base=artifact.base if first else None,
    )


def _units(sources: Sequence[Source]) -> list[list[Source]]:
    """The day's sources as units no part splits: each user line with the assistant line
    before it, when there is one (`number_sources` puts it right before)."""
    units: list[list[Source]] = []
    context: list[Source] = []
    for source in sources:
        if source.role != "user":
            context.append(source)
            continue
        units.append([*context, source])
        context = []
    if context:  # an assistant line after the last user line: `number_sources` makes none
        units.append(context)
    return units


def _flat(units: Sequence[list[Source]]) -> list[Source]:
    return [source for unit in units for source in unit]


def _too_long(line: str, stage: str, measured: Budget) -> ModelError:
    return ModelError(
        "journal_line_too_long",
        f"line {line} alone does not fit a {stage} prompt: estimated input "
        f"{measured.estimated_input} + reserved output {measured.reserved_output} = "
        f"{measured.needed} tokens > usable {measured.usable} of window {measured.window} "
        f"(journal_output_tokens, budget_safety_margin, chars_per_token); a day is split "
        f"only between lines, nothing was cut",
    )


def merge(
    sources: Sequence[Source], parts: Sequence[Reconstructed], fallback: VerifiedArtifact
) -> Reconstructed:
    """The day's stage 1 from its `parts` (`reconstruct_parts`, in order), each reconstructed and
    validated on its own lines as a day of one part is: their answers joined in source
    order — ids, chronologies, sourced notes — and validated once more over the whole day
    (`validate`, the same rules: coverage, order, a reorder only by confirmed times, verbatim
    evidence), then the artifact is built from that answer (`fallback.base` kept). A part cannot reorder across
    parts, so the joined answer passes when every part's did; were it to fail, its codes
    are recorded and the fallback taken, never a merge trusted unchecked.

    The day's reconstruction is the model's only when every part's is: one part failing is
    the day's `fallback` (all lines in their own order), with the codes of every part, as
    one failed answer is for a day of one part. A day partly in the model's order and
    partly in its own would be neither, and the draft's note that the reconstruction could
    not be verified and the entry follows the lines' own order would not be true."""
    records = [record for part in parts for record in part.records]
    answers: list[Reconstruction] = []
    codes: list[str] = []
    for part in parts:
        codes += [code for code in part.validation if code not in codes]
        if part.answer is not None:
            answers.append(part.answer)
    if codes or len(answers) != len(parts):
        return Reconstructed(fallback, codes or ["reconstruction_invalid"], records)
    joined = Reconstruction(
        source_order=_joined(a.source_order for a in answers),
        chronology=_joined(a.chronology for a in answers),
        contradictions=_joined(a.contradictions for a in answers),
        uncertainties=_joined(a.uncertainties for a in answers),
        plan_changes=_joined(a.plan_changes for a in answers),
        corrections=_joined(a.corrections for a in answers),
    )
    found = validate(sources, joined)
    if found:
        return Reconstructed(fallback, ["reconstruction_invalid", *found], records)
    return Reconstructed(verified_artifact(sources, joined, fallback.base), [], records, joined)


def _joined(lists: Iterable[list[T]]) -> list[T]:
    return [item for items in lists for item in items]
