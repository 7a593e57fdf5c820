"""The one history renderer: every prompt that shows the conversation uses it (seed 000 §3.7–3.8).

A rendered history is a text block of numbered speaker lines:

    [1] USER (neutral): Lösch die Einkaufsliste
    [1] NOVA (freude): Erledigt!
    [2] NOVA (von sich aus): Magst du morgen weiterplanen?
    [3] USER (neugierig, ERLEDIGT): Was meinst du?

Rules, each held by a test:

- **Who spoke comes only from the turn's own fields** (`rolle`, `herkunft`), never from its
  position. A user turn opens a group; an own impulse always opens its own group; other
  character turns join the current group. A group is a display unit, not an attribution.
- **Speaker labels** come from a per-language table (`LABELS`); the character's name,
  upper-cased, stands for NOVA. The occasion (`von sich aus`, `Anlass unbekannt`), the
  emotion and the action marker (`ERLEDIGT`/`FEHLGESCHLAGEN`) share one bracket in the speaker
  line — never inside the text, where the model would learn to write them.
- **Window**: `select_window` keeps the last n *exchanges* (groups with a user utterance) and
  every impulse group between and after them, so impulses never push the user out.
- **Budget**: no contribution is ever cut. Above the budget, whole oldest groups are dropped;
  the newest group always stays, even alone over budget. The budget is computed on the full
  rendered length.
- **Count check**: contributions out of the grouping == turns with content in, else an error
  log line (a regression guard: it fires when someone skips a turn in the grouping loop).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from app.core.i18n import language_of
from app.core.log import fields
from app.core.settings import Settings
from app.memory.turns import OCCASION_IMPULSE, OCCASION_UNKNOWN, ROLE_USER, Turn

log = logging.getLogger(__name__)

Group = list[Turn]


@dataclass(frozen=True, slots=True)
class Labels:
    """The words of one language's speaker lines."""

    user: str
    impulse: str  # occasion of an own impulse
    unknown: str  # occasion not recorded (old turns without `herkunft`)
    done: str  # action marker: completed
    failed: str  # action marker: done, but failed


LABELS: dict[str, Labels] = {
    "de": Labels(
        user="USER",
        impulse="von sich aus",
        unknown="Anlass unbekannt",
        done="ERLEDIGT",
        failed="FEHLGESCHLAGEN",
    ),
    "en": Labels(
        user="USER",
        impulse="on their own",
        unknown="occasion unknown",
        done="DONE",
        failed="FAILED",
    ),
}


def labels_for(language: str) -> Labels:
    """The table for `de`, `de-DE`, `de_AT`, …; English for a language without a table."""
    return LABELS[language_of(language)]


def occasion(turn: Turn, labels: Labels) -> str:
    """The occasion word of a character turn, from its `herkunft`; '' for a plain reply."""
    if turn.role == ROLE_USER:
        return ""
    if turn.occasion == OCCASION_IMPULSE:
        return labels.impulse
    if turn.occasion == OCCASION_UNKNOWN:
        # Empty means unknown, not "a reply": old turns never recorded their occasion.
        return labels.unknown
    return ""  # antwort, fortsetzung: the character speaks in the flow of the exchange


def speaker_label(turn: Turn, character_name: str, language: str = "de") -> str:
    """The speaker as the seed's table names it: `USER`, `NOVA`, `NOVA (von sich aus)`, …"""
    labels = labels_for(language)
    name = _speaker_name(turn, character_name, labels)
    word = occasion(turn, labels)
    return f"{name} ({word})" if word else name


def label_texts(character_name: str, language: str = "de") -> tuple[str, ...]:
    """Every label and marker a speaker line can carry (for checks that none leaks into text)."""
    labels = labels_for(language)
    return (
        labels.user,
        character_name.upper(),
        labels.impulse,
        labels.unknown,
        labels.done,
        labels.failed,
    )


def group_turns(turns: Sequence[Turn]) -> list[Group]:
    """Turns with content → display groups (see the module docstring), with the count check."""
    groups: list[Group] = []
    for turn in turns:
        if not turn.has_content:
            continue
        if not groups or turn.role == ROLE_USER or turn.occasion == OCCASION_IMPULSE:
            groups.append([turn])
        else:
            groups[-1].append(turn)
    _check_count(turns, groups)
    return groups


def _check_count(turns: Sequence[Turn], groups: Sequence[Group]) -> None:
    contributions = sum(len(group) for group in groups)
    with_content = sum(1 for turn in turns if turn.has_content)
    if contributions != with_content:
        log.error(
            "history grouping lost contributions",
            extra=fields(contributions=contributions, turns_with_content=with_content),
        )


def is_exchange(group: Group) -> bool:
    """An exchange is a group that holds a user utterance."""
    return any(turn.role == ROLE_USER for turn in group)


def select_window(groups: Sequence[Group], exchanges: int) -> list[Group]:
    """The last `exchanges` exchanges plus every impulse group between and after them.

    Counts exchanges, not groups: counting groups would let impulses push the user out of
    the window (seed 000 §3.8, the regression measured on 24.08.2026).
    """
    if exchanges < 1:
        raise ValueError(f"a window holds at least one exchange, not {exchanges}")
    seen = 0
    for index in range(len(groups) - 1, -1, -1):
        if is_exchange(groups[index]):
            seen += 1
            if seen == exchanges:
                return list(groups[index:])
    return list(groups)


@dataclass(frozen=True, slots=True)
class History:
    """A rendered history and what was left out of it (nothing is ever cut inside)."""

    text: str
    groups: int  # groups shown
    contributions: int  # speaker lines shown
    dropped_by_window: int  # older groups outside the window
    dropped_by_budget: int  # whole oldest groups dropped to meet the budget


def build_history(
    turns: Sequence[Turn],
    settings: Settings,
    *,
    character_name: str = "Nova",
    language: str = "de",
    exchanges: int | None = None,
    budget_chars: int | None = None,
    whole: bool = False,
) -> History:
    """Group, window, budget and render `turns` (oldest first).

    `exchanges` and `budget_chars` default to `session_window_exchanges` and
    `session_history_budget_chars`. `whole=True` shows every group with neither window nor
    budget — for the summarizer, which must see every turn it folds away.
    """
    labels = labels_for(language)
    groups = group_turns(turns)
    if whole:
        window = groups
    else:
        window = select_window(
            groups, exchanges if exchanges is not None else settings.session_window_exchanges
        )
    bodies = [[_speaker_part(turn, character_name, labels) for turn in group] for group in window]
    start = 0
    if not whole:
        budget = budget_chars if budget_chars is not None else settings.session_history_budget_chars
        start = _budget_start(bodies, budget)
    shown = bodies[start:]
    text = "\n".join(
        f"[{number}] {body}" for number, group in enumerate(shown, 1) for body in group
    )
    return History(
        text=text,
        groups=len(shown),
        contributions=sum(map(len, shown)),
        dropped_by_window=len(groups) - len(window),
        dropped_by_budget=start,
    )


def render_history(turns: Sequence[Turn], settings: Settings, **options: Any) -> str:
    """The history block for a prompt: `build_history(...).text`, with its keyword options."""
    return build_history(turns, settings, **options).text


def _speaker_name(turn: Turn, character_name: str, labels: Labels) -> str:
    return labels.user if turn.role == ROLE_USER else character_name.upper()


def _speaker_part(turn: Turn, character_name: str, labels: Labels) -> str:
    """`NAME (emotion, occasion, marker): content` — everything but the group number."""
    details = [
        detail for detail in (turn.emotion, occasion(turn, labels), _marker(turn, labels)) if detail
    ]
    name = _speaker_name(turn, character_name, labels)
    speaker = f"{name} ({', '.join(details)})" if details else name
    return f"{speaker}: {turn.content}"


def _marker(turn: Turn, labels: Labels) -> str:
    """ERLEDIGT / FEHLGESCHLAGEN on a turn whose agent action finished; '' otherwise."""
    if not turn.action_done:
        return ""
    return labels.done if turn.action_succeeded else labels.failed


def _rendered_length(sizes: Sequence[tuple[int, int]], start: int) -> int:
    """Length of the text that groups `start…` render to, numbered from 1, joined by newlines.

    `sizes` holds per group (characters of its speaker parts, number of lines)."""
    total, lines = 0, 0
    for number, (chars, count) in enumerate(sizes[start:], 1):
        total += chars + count * (len(str(number)) + 3)  # "[n] " before every line
        lines += count
    return total + max(lines - 1, 0)


def _budget_start(bodies: Sequence[Sequence[str]], budget: int) -> int:
    """How many oldest groups to drop so the rest fits `budget`; the newest group always stays."""
    if not bodies:
        return 0
    sizes = [(sum(map(len, group)), len(group)) for group in bodies]
    # The length falls as `start` grows: bisect for the first start that fits, stopping at
    # the newest group, which stays whatever its length.
    low, high = 0, len(sizes) - 1
    while low < high:
        middle = (low + high) // 2
        if _rendered_length(sizes, middle) <= budget:
            high = middle
        else:
            low = middle + 1
    start = low
    length = _rendered_length(sizes, start)
    if start:
        log.warning(
            "session_history_budget_chars dropped oldest history groups",
            extra=fields(
                limit="session_history_budget_chars",
                budget=budget,
                dropped_groups=start,
                kept_groups=len(bodies) - start,
                chars=length,
            ),
        )
    if length > budget:
        log.warning(
            "session_history_budget_chars exceeded by the newest group alone; kept whole",
            extra=fields(limit="session_history_budget_chars", budget=budget, chars=length),
        )
    return start
