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
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from app.core.settings import Settings
from app.journal import budget, stages
from app.journal.artifact import Line, VerifiedArtifact
from app.journal.day import Source
from app.llm.budget import Budget
from app.llm.errors import ModelError
from app.llm.types import Message

T = TypeVar("T")
# How much of a prompt may be sized: the prompt's budget (`app.journal.budget.measure`) for a
# run of items, and whether the run is the day's first.
Measure = Callable[[Sequence[T], bool], Budget]


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
