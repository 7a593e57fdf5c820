"""The offline draft leaves out what was a command to the character, in either language, also
when it was not carried out (issue 40 item 5): through the offline answers the wiring
composes (`app.wiring.purposes.OFFLINE_ANSWERS`, with the chat's own command rules)."""

from __future__ import annotations

import msgspec
import pytest

from app.journal.artifact import Line, VerifiedArtifact
from app.journal.schema import PURPOSE_NARRATE
from app.llm.offline.handlers import OfflineRequest
from app.pipeline.offline_rules.routing import only_commands
from app.wiring.purposes import OFFLINE_ANSWERS

DIARY = [
    "Heute war ich mit Anna im Park.",
    "Abends habe ich die Äpfel vom Markt gegessen.",
    "Went for a long walk with the dog.",
    "I crossed the street at the market and bought apples.",
]
# Commands to the character, none carried out (no list held apples, the reminder's question
# back was never answered), in German and English.
COMMANDS = [
    "Cross the apples off",
    "Strike the apples from the Einkaufsliste",
    "Cross the apples off the shopping list.",
    "Delete the apples from my list",
    "Streich die Äpfel von der Einkaufsliste",
    "Streich die Äpfel",
    "Nimm die Äpfel wieder runter",
    "Erinnere mich morgen an den Zahnarzt",
    "Remind me to call mom tomorrow",
    "Lösch die Erinnerung an den Zahnarzt",
]


def offline_draft(lines: list[str]) -> str:
    artifact = VerifiedArtifact(
        reconstruction_status="valid",
        sources=[Line(f"u{i}", text) for i, text in enumerate(lines, 1)],
    )
    message = {"role": "user", "content": msgspec.json.encode(artifact).decode()}
    request = OfflineRequest(PURPOSE_NARRATE, [message], None, 2000, 2.0)
    answer = OFFLINE_ANSWERS[PURPOSE_NARRATE](request)
    assert isinstance(answer, str)
    return answer


def test_the_offline_draft_leaves_out_commands_that_did_not_succeed_and_keeps_the_diary():
    mixed = [line for pair in zip(DIARY, COMMANDS, strict=False) for line in pair]
    mixed += COMMANDS[len(DIARY) :]
    assert offline_draft(mixed) == "\n\n".join(DIARY)


@pytest.mark.parametrize("command", COMMANDS)
def test_each_command_is_one_for_the_journal(command):
    assert offline_draft(["Heute war ich im Park.", command]) == "Heute war ich im Park."


@pytest.mark.parametrize(
    "line",
    [
        *DIARY,
        "Mein Chef sagte: streich die Äpfel von der Liste",  # somebody else's words
        "Heute war ich im Park und setz Milch auf die Liste",  # it tells something too
        "Ich habe die Äpfel von der Einkaufsliste gestrichen.",  # told, not asked for
    ],
)
def test_a_diary_line_stays(line):
    assert offline_draft([line]) == line


def test_the_chat_still_asks_for_an_item_on_a_list():
    """The router's reading is unchanged: without knowing what a list holds, a bare
    crossing-off ("Streich die Wand") is no command it is sure of."""
    assert only_commands("Streich die Wand") is False
    assert only_commands("Strike the apples from the Einkaufsliste") is True
