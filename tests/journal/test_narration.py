"""The narration checked against the day's lines through the real server (issue 40): the
scripted fake model writes a draft that adds what no line says; the page never gets it as
the user's."""

from __future__ import annotations

from tests.journal.test_api import (
    DATE,
    draft_of,
    generate,
    import_day,
    jclient,  # noqa: F401 - the fixture
    journal_app,  # noqa: F401 - the fixture
    valid_reconstruction,
)

HONEST = (
    "Um 6:00 Uhr bin ich müde aufgestanden. Zum Frühstück gab es Brot mit Anna.\n\n"
    "Gegen 9 habe ich gelesen, vielleicht war es auch später."
)
INVENTED = (
    "Am Abend war ich noch mit Paul im Kino und wir haben einen Film über Island gesehen. "
    "Ich war glücklich wie lange nicht."
)


async def test_the_invented_paragraph_is_never_shown_as_the_users(jclient, fake_model):
    fake_model.script("journal_reconstruct", valid_reconstruction())
    # The model adds the paragraph, and keeps it when asked once to leave it out.
    fake_model.script("journal_generate", f"{HONEST}\n\n{INVENTED}", f"{HONEST}\n\n{INVENTED}")
    await import_day(jclient)
    draft = await draft_of(jclient, await generate(jclient))
    assert draft["text"] == HONEST
    for word in ("Paul", "Kino", "Island", "glücklich"):
        assert word not in draft["text"]
    left = draft["support"]["left_out"]
    assert [s["text"] for s in left] == [
        "Am Abend war ich noch mit Paul im Kino und wir haben einen Film über Island gesehen.",
        "Ich war glücklich wie lange nicht.",
    ]
    assert {"Paul", "Kino", "Film", "Island"} <= set(left[0]["unsupported"])
    assert "glücklich" in left[1]["unsupported"]
    # One corrective retry, naming each unsupported sentence and what is in no line.
    first, retry = fake_model.chats("journal_generate")
    assert "Paul" not in first.messages[-1]["content"]
    assert "Paul" in retry.messages[-1]["content"] and "Kino" in retry.messages[-1]["content"]
    assert retry.messages[-2] == {"role": "assistant", "content": f"{HONEST}\n\n{INVENTED}"}
    [narrate] = [s for s in draft["trace"]["stages"] if s["stage"] == "narrate"]
    assert narrate["codes"] == ["narration_unsupported"] and narrate["outcome"] == "model"
    assert "Paul" not in str(draft["trace"])  # the trace names no one
    # Each kept sentence links to the lines it came from.
    sentences = draft["support"]["sentences"]
    assert [s["sources"] for s in sentences] == [["u1"], ["u2"], ["u3"]]


async def test_a_retry_that_keeps_to_the_lines_is_the_draft(jclient, fake_model):
    fake_model.script("journal_reconstruct", valid_reconstruction())
    fake_model.script("journal_generate", f"{HONEST}\n\n{INVENTED}", HONEST)
    await import_day(jclient)
    draft = await draft_of(jclient, await generate(jclient))
    assert draft["text"] == HONEST and draft["support"]["left_out"] == []
    assert draft["narration"] == "model"


async def test_a_narration_of_nothing_supported_is_the_local_draft(jclient, fake_model):
    fake_model.script("journal_reconstruct", valid_reconstruction())
    fake_model.script("journal_generate", INVENTED, INVENTED)
    await import_day(jclient)
    draft = await draft_of(jclient, await generate(jclient))
    assert draft["narration"] == "local" and "Paul" not in draft["text"]
    assert draft["text"].startswith(DATE) and "Brot mit Anna" in draft["text"]
    assert len(draft["support"]["left_out"]) == 2


async def test_a_supported_narration_is_sent_once(jclient, fake_model):
    fake_model.script("journal_reconstruct", valid_reconstruction())
    fake_model.script("journal_generate", HONEST)
    await import_day(jclient)
    draft = await draft_of(jclient, await generate(jclient))
    assert draft["text"] == HONEST and len(fake_model.chats("journal_generate")) == 1


async def test_a_narration_that_tells_nothing_is_the_local_draft(jclient, fake_model):
    """What the real peer's tiny random model writes ("]", '"]'): no sentence draws on a
    line or asserts anything — no narration, as an empty reply is none."""
    fake_model.script("journal_reconstruct", valid_reconstruction())
    fake_model.script("journal_generate", '"]')
    await import_day(jclient)
    draft = await draft_of(jclient, await generate(jclient))
    assert draft["narration"] == "local" and draft["text"].startswith(DATE)
    assert "Brot mit Anna" in draft["text"] and '"]' not in draft["text"]
    [narrate] = [s for s in draft["trace"]["stages"] if s["stage"] == "narrate"]
    assert narrate["codes"] == ["narration_empty"] and narrate["outcome"] == "local_draft"
    assert len(fake_model.chats("journal_generate")) == 1
