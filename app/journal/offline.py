"""What the offline model answers for the journal's two stages (design §8, issue 13 item 11).

Listed by `purpose_handlers`, which the wiring composes into the offline model's answers
(`app.wiring.purposes`), so the journal works with no model server: stage 1 answers a valid
reconstruction of the day built from its own lines (every user line in order, its whole text
as the one claim's evidence, a time token when the line holds one), stage 2 a plain entry made
of the artifact's told lines, unchanged (after the base of a redraft, without the lines that
stand in it already, and without a line of nothing but commands to the character, carried
out or not: the chat's own rules, `app.pipeline.offline_rules.routing.journal_commands`,
which the wiring hands to `purpose_handlers` — the journal does not load its sibling). No model made either: the
stages label them `offline` (`app.journal.stages`).
"""

from __future__ import annotations

from collections.abc import Callable

import msgspec

from app.journal import times
from app.journal.artifact import VerifiedArtifact, lines_not_in_base, on_base
from app.journal.schema import (
    PURPOSE_NARRATE,
    PURPOSE_RECONSTRUCT,
    ChronologyItem,
    Claim,
    Reconstruction,
)
from app.journal.stages import DayInput
from app.llm.offline.handlers import Answers, OfflineRequest

_DAY = msgspec.json.Decoder(DayInput)
_ARTIFACT = msgspec.json.Decoder(VerifiedArtifact)


def _last_user(request: OfflineRequest) -> str:
    return next((m["content"] for m in reversed(request.messages) if m["role"] == "user"), "")


def reconstruct(request: OfflineRequest) -> Reconstruction:
    try:
        day = _DAY.decode(_last_user(request))
    except msgspec.DecodeError:
        return Reconstruction()
    users = [line for line in day.sources if line.role == "user"]
    chronology = []
    for line in users:
        found = times.find(line.text)
        chronology.append(
            ChronologyItem(
                line.id,
                "user",
                found[0] if len(found) == 1 else None,
                [Claim("statement", times.normalize(line.text))],
            )
        )
    return Reconstruction(source_order=[line.id for line in users], chronology=chronology)


def narrate(request: OfflineRequest, only_commands: Callable[[str], bool]) -> str:
    """`only_commands(text)`: is a line nothing but commands to the character?"""
    try:
        artifact = _ARTIFACT.decode(_last_user(request))
    except msgspec.DecodeError:
        return ""
    # Each told line whole, in the artifact's order (a confirmed time stands in its own
    # line), after the base a redraft revises; a request carried out or a question is no
    # part of the story (the stage lists the done ones under the text), and neither is a
    # line of nothing but commands to the character that were not carried out (a question
    # back never answered: "Setz Brot auf die Liste" — "Auf welche?"; a crossing-off that
    # found nothing: "Cross the apples off").
    told = [
        line.text.strip() for line in lines_not_in_base(artifact) if not only_commands(line.text)
    ]
    return "\n\n".join(on_base(artifact, told))


def purpose_handlers(only_commands: Callable[[str], bool]) -> Answers:
    """The two stages' offline answers; `only_commands`: see `narrate`."""
    return {
        PURPOSE_RECONSTRUCT: reconstruct,
        PURPOSE_NARRATE: lambda request: narrate(request, only_commands),
    }
