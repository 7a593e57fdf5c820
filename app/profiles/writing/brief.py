"""The compiled brief: what stage 2 of the journal gets from the writing profile (seed 004
§15, §16; design §8).

The full profile stays the local source of truth; the brief is a derived view, compiled
whenever it is needed: the journal's base rules (invent nothing, keep uncertainties), the
core, the deltas of the `autobiographical_journal` facet, at most six relevant traits, and
one or two exemplars from the user's own entries — at most `profile_brief_chars` (4 000)
characters, 3 000 and more when the profile has that much to say. A field that does not fit
its share is cut at a word bound and marked with `…`; a single word too long for its share is
left out, never cut in the middle.

A profile that is not confirmed yet has no brief: stage 2 then gets the default brief.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from app.profiles.governance import USER_ORIGINS
from app.profiles.writing.model import CORE_SCOPE, JOURNAL_FACET, Profile, Trait

# The journal's base rules, stage 2's system prompt as it stands when the profile has no
# brief yet (or is frozen); a compiled brief starts with it. Here, not in the journal,
# so the profile reads it without an arrow back up (`app.journal.stages` reads it here).
DEFAULT_BRIEF = """\
Write the user's diary entry for this day from the verified artifact you get as JSON.
First person, past tense, in the language of the user's lines. Keep quotes attributed as
they are. Keep every uncertainty and every unresolved contradiction as uncertain or
unresolved. Use the given times. Invent nothing: no fact, feeling, person, place or time
that is not in the artifact's `sources`. A source with `"act": "done"` was a request the
assistant carried out and one with `"act": "question"` a question to it: neither is part of
the day's story, leave both out (the done ones are listed under the entry for you).
Answer with the entry's text only.
"""

MAX_TRAITS = 6
MAX_EXEMPLARS = 2
ELLIPSIS = "…"
CORE_SHARE = 700
FACET_SHARE = 500
TRAIT_SHARE = 160
MIN_EXEMPLAR = 200

PROFILE_HEADING = (
    "The user's own voice (their writing profile; follow it for style only, "
    "never as a source of facts):"
)
EXEMPLAR_HEADING = (
    "Entries the user wrote themselves (for the voice only; none of their "
    "content belongs in this day's entry):"
)


@dataclass(frozen=True, slots=True)
class Exemplar:
    date: str
    text: str


def cut_at_word(text: str, limit: int) -> str:
    """`text` (whitespace collapsed) within `limit` characters: whole, or cut after a whole
    word and ended with `…`; "" when not even the first word fits."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    if limit <= len(ELLIPSIS):
        return ""
    room = limit - len(ELLIPSIS)
    head = flat[: room + 1]  # one more: is the character after the cut a space?
    if head[-1] == " ":
        return head[:-1].rstrip() + ELLIPSIS
    head = head[:-1]
    if " " not in head:
        return ""
    return head.rsplit(" ", 1)[0].rstrip() + ELLIPSIS


def relevant_traits(profile: Profile, limit: int = MAX_TRAITS) -> list[Trait]:
    """The journal's traits: core and journal-facet scope; locked ones and the user's own
    first, then the newest."""
    fitting = [t for t in profile.traits if t.scope in (CORE_SCOPE, JOURNAL_FACET)]
    fitting.sort(key=lambda t: (not t.locked, t.origin not in USER_ORIGINS, -(t.updated_at or 0.0)))
    return fitting[:limit]


def compile_brief(
    profile: Profile, exemplars: Sequence[Exemplar], *, base: str, max_chars: int
) -> str:
    """The brief for stage 2 (see the module's docstring); never longer than `max_chars`."""
    parts = [base.strip(), "", PROFILE_HEADING]
    core = cut_at_word(profile.core.value, CORE_SHARE)
    if core:
        parts.append(f"Core: {core}")
    facet = profile.facets.get(JOURNAL_FACET)
    delta = cut_at_word(facet.value, FACET_SHARE) if facet is not None else ""
    if delta:
        parts.append(f"In the journal: {delta}")
    lines = []
    for trait in relevant_traits(profile):
        key = cut_at_word(trait.key, 40)
        value = cut_at_word(trait.value, TRAIT_SHARE - len(key) - 4)
        if key and value:
            lines.append(f"- {key}: {value}")
    if lines:
        parts += ["Traits:", *lines]
    text = "\n".join(parts)
    return _with_exemplars(text, exemplars[:MAX_EXEMPLARS], max_chars)


def _with_exemplars(text: str, exemplars: Sequence[Exemplar], max_chars: int) -> str:
    if len(text) > max_chars:  # only a tiny max_chars gets here: keep whole lines
        kept: list[str] = []
        for line in text.split("\n"):
            if len("\n".join([*kept, line])) > max_chars:
                break
            kept.append(line)
        return "\n".join(kept)
    for count in range(len(exemplars), 0, -1):
        frame = f"{text}\n\n{EXEMPLAR_HEADING}"
        overhead = sum(len(f"\n[{e.date}] ") for e in exemplars[:count])
        share = (max_chars - len(frame) - overhead) // count
        if share < MIN_EXEMPLAR:
            continue
        shown = [f"[{e.date}] {cut_at_word(e.text, share)}" for e in exemplars[:count]]
        shown = [s for s, e in zip(shown, exemplars, strict=False) if cut_at_word(e.text, share)]
        if shown:
            return "\n".join([frame, *shown])
    return text
