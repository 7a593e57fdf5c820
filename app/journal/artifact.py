"""The `VerifiedArtifact` (design §8): built locally; the only content stage 2 ever sees.

Every selected user line is in it with its full, canonical text — rehydrated from the day's
sources, never taken from the model: a claim never shortens its source. With a valid
reconstruction the lines follow its chronology and carry their confirmed time tokens, and
the sourced corrections, uncertainties, contradictions and plan changes come along; with a
fallback the lines keep their own order and nothing of the model's answer is used. Model
labels (`kind`) are dropped; assistant text never enters.

Two things come from this machine besides the lines, never from a model:
- a line's `act` (`app.journal.day.act_of`): `done` for a request the character carried out,
  `question` for a question to it. Neither belongs to the day's story: an entry lists the
  done ones under its text (`with_done_list`) and leaves questions out; the draft's refs
  still name them.
- `base` (seed 004 `include_existing`): the stored text a redraft revises — the entry's
  current version, or without an entry the day's last draft — read from the journal by id.
  It is the user's own text (every version was written, accepted or restored by the user),
  so stage 2 may keep what it says; stage 1 never sees it, and nothing of it becomes
  evidence for the reconstruction: the validator still holds every claim against the day's
  own lines.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Literal

import msgspec

from app.core.i18n import LANGUAGES, texts
from app.journal import times
from app.journal.day import Source, user_sources
from app.journal.schema import Reconstruction, Sourced

Status = Literal["valid", "fallback"]
LineAct = Literal["done", "question"]


class Line(msgspec.Struct, omit_defaults=True):
    """A user line, whole; `time` only where the reconstruction confirmed one, `act` only for
    a line that is not part of the day's story (done, question)."""

    source_id: str
    text: str
    time: str | None = None
    act: LineAct | None = None


class Base(msgspec.Struct):
    """The stored text a redraft starts from: `origin` `entry` (the entry's current version)
    or `draft` (the day's last draft, when there is no entry)."""

    origin: Literal["entry", "draft"]
    text: str


class VerifiedArtifact(msgspec.Struct, tag_field="kind", tag="verified_artifact", kw_only=True):
    """design §8 `{"kind": "verified_artifact", "reconstruction_status", "sources",
    "corrections", "uncertainties", "contradictions", "plan_changes", "base"}`."""

    reconstruction_status: Status
    sources: list[Line]
    corrections: list[Sourced] = []
    uncertainties: list[Sourced] = []
    contradictions: list[Sourced] = []
    plan_changes: list[Sourced] = []
    base: Base | None = None

    def told(self) -> list[Line]:
        """The lines of the day's story: neither done nor a question."""
        return [line for line in self.sources if line.act is None]


def _line(source: Source, time: str | None = None) -> Line:
    return Line(source.source_id, source.text, time, source.act or None)


def fallback_artifact(sources: Sequence[Source], base: Base | None = None) -> VerifiedArtifact:
    """Every user line in its own order, nothing of the model's answer."""
    return VerifiedArtifact(
        reconstruction_status="fallback",
        sources=[_line(s) for s in user_sources(sources)],
        base=base,
    )


def verified_artifact(
    sources: Sequence[Source], answer: Reconstruction, base: Base | None = None
) -> VerifiedArtifact:
    """The artifact of an `answer` the validator passed (no code; any code means the
    fallback): its chronology's order and confirmed times, its sourced notes."""
    by_id = {s.source_id: s for s in user_sources(sources)}
    lines: list[Line] = []
    seen: set[str] = set()
    for item in answer.chronology:
        if item.source_id in seen:
            continue
        seen.add(item.source_id)
        lines.append(_line(by_id[item.source_id], item.time))
    return VerifiedArtifact(
        reconstruction_status="valid",
        sources=lines,
        corrections=answer.corrections,
        uncertainties=answer.uncertainties,
        contradictions=answer.contradictions,
        plan_changes=answer.plan_changes,
        base=base,
    )


def lines_not_in_base(artifact: VerifiedArtifact) -> list[Line]:
    """The told lines a text made without a model adds to the base: those that do not stand
    in it already, word for word (after NFKC and whitespace), as an accepted offline draft
    holds its lines."""
    if artifact.base is None:
        return artifact.told()
    base = times.normalize(artifact.base.text)
    return [line for line in artifact.told() if times.normalize(line.text) not in base]


def on_base(artifact: VerifiedArtifact, added: Sequence[str]) -> list[str]:
    """The parts of a text made without a model: the base's text (its done list kept for the
    end), then `added`, then that done list (`with_done_list` merges it with the day's)."""
    if artifact.base is None:
        return list(added)
    body, items = split_done_list(artifact.base.text)
    block = [_done_block(DONE_HEADINGS[0], items)] if items else []
    return [part for part in (body.strip(), *added, *block) if part]


def local_draft(date: str, artifact: VerifiedArtifact) -> str:
    """The honest entry made without a model (stage 2's fallback): the user's own told lines
    as a dated list, each whole, in the artifact's order (a confirmed time is in its own
    line), after the base when there is one. The done lines follow (`with_done_list`)."""
    lines = local_lines(artifact)
    return "\n\n".join([date, *on_base(artifact, [lines] if lines else [])])


def local_lines(artifact: VerifiedArtifact) -> str:
    """The told lines `local_draft` lists (`lines_not_in_base`), each whole, without the date:
    alone, the local text of a later part of a day narrated in parts (the date heads the
    first part's); '' when the part tells nothing."""
    return "\n".join(f"- {line.text}" for line in lines_not_in_base(artifact))


def join_parts(texts: Sequence[str]) -> str:
    """The texts of a day narrated in parts as one, in order, a blank line between. A done
    list a part ends with (a revised base's, in the first part) moves to the end, where
    `with_done_list` merges it with the day's: never a list amid the entry."""
    bodies: list[str] = []
    items: list[str] = []
    for text in texts:
        body, done = split_done_list(text)
        bodies.append(body.strip())
        items += done
    block = [_done_block(DONE_HEADINGS[0], items)] if items else []
    return "\n\n".join(part for part in (*bodies, *block) if part)


# The done list's heading in every language, as `with_done_list` writes it.
DONE_HEADINGS = tuple(texts("journal", code)["done"] for code in LANGUAGES)
_DONE_LIST = re.compile(
    r"(?:\A|\n\n)(?:" + "|".join(map(re.escape, DONE_HEADINGS)) + r"):\n((?:- [^\n]*(?:\n|\Z))+)\Z"
)


def split_done_list(text: str) -> tuple[str, list[str]]:
    """`text` without the done list at its end (in any language), and that list's items."""
    found = _DONE_LIST.search(text.rstrip())
    if found is None:
        return text, []
    items = [line[2:].strip() for line in found[1].splitlines() if line.startswith("- ")]
    return text.rstrip()[: found.start()], items


def with_done_list(text: str, artifact: VerifiedArtifact, language: str) -> str:
    """`text` with the lines the character carried out listed under it, each whole, under
    the heading "Erledigt" / "Done" (in `language`): one list at the end, holding the list
    `text` ends with already (a revised base's) and every done line not in it yet; `text`
    as it is when there is nothing to list."""
    body, items = split_done_list(text)
    listed = {times.normalize(item) for item in items}
    items += [
        line.text.strip()
        for line in artifact.sources
        if line.act == "done" and times.normalize(line.text) not in listed
    ]
    if not items:
        return text
    heading = texts("journal", language)["done"]
    return "\n\n".join(part for part in (body.rstrip(), _done_block(heading, items)) if part)


def _done_block(heading: str, items: Sequence[str]) -> str:
    return "\n".join([f"{heading}:", *(f"- {item}" for item in items)])
