"""Oversized days in parts (issue 40 item 4, `app/journal/parts.py`) through the real server and
the scripted fake model with a 32K window: a day too big for one prompt is reconstructed part
by part at line boundaries, merged and narrated; a day that fits is one call as before; a
line too long for any prompt is refused, and nothing is ever cut inside a line."""

from __future__ import annotations

import json
from typing import Any

import pytest

from app.api.app_keys import SETTINGS
from app.journal import parts, stages
from app.journal.artifact import (
    DONE_HEADINGS,
    Base,
    Line,
    VerifiedArtifact,
    fallback_artifact,
    join_parts,
)
from app.journal.day import Source
from app.journal.schema import ChronologyItem, Claim, Reconstruction, Sourced
from app.llm import budget as budgeting
from app.llm.errors import ModelError
from tests.conftest import AUTH
from tests.fakemodel import RecordedRequest
from tests.journal.test_api import (
    DATE,
    LINES,
    call,
    draft_of,
    import_day,
    jclient,  # noqa: F401 - the fixture
    journal_app,  # noqa: F401 - the fixture
    valid_reconstruction,
)
from tests.waiting import wait_job

WINDOW = 32768
DAY_LINES = 2000
# Every 50th line of yours answers an assistant line (its context, a unit with it); every
# 400th hedges (an uncertainty the reconstruction names, kept through the merge).
BIG_DAY = [
    message
    for i in range(1, DAY_LINES + 1)
    for message in (
        *([{"role": "assistant", "text": f"Und was kam nach Beet {i - 1}?"}] if i % 50 == 0 else []),
        {"role": "user",
         "text": f"Im Garten habe ich Beet {i} mit Tomaten bepflanzt"
                 + (", vielleicht auch mit Bohnen." if i % 400 == 0 else " und Kaffee getrunken.")},
    )
]
USER_TEXTS = [m["text"] for m in BIG_DAY if m["role"] == "user"]


def sent_json(request: RecordedRequest) -> dict[str, Any]:
    return json.loads(request.messages[-1]["content"])


def reconstruct_honestly(request: RecordedRequest) -> dict[str, Any]:
    """A model that reconstructs exactly the part it is sent: each of its user lines, in the
    order given, the whole line as a claim's evidence, each hedge as an uncertainty."""
    users = [s for s in sent_json(request)["sources"] if s["role"] == "user"]
    return {
        "source_order": [s["id"] for s in users],
        "chronology": [{"source_id": s["id"], "source": "user", "time": None,
                        "claims": [{"kind": "event", "evidence": s["text"]}]} for s in users],
        "uncertainties": [{"source_id": s["id"], "evidence": "vielleicht"}
                          for s in users if "vielleicht" in s["text"]],
    }


def narrate_first_and_last(request: RecordedRequest) -> str:
    """A narration of the first and the last line it is sent, word for word."""
    told = sent_json(request)["sources"]
    return f"{told[0]['text']}\n\n{told[-1]['text']}"


def fits(request: RecordedRequest, settings: Any) -> bool:
    """The request within the window as the gateway measures it, its output reserved."""
    return budgeting.measure(request.messages, window=WINDOW,
                             max_tokens=request.body["max_tokens"],
                             chars_per_token=settings.chars_per_token,
                             margin=settings.budget_safety_margin).fits


async def test_a_day_of_2000_lines_drafts_in_parts_on_a_32k_window(jclient, fake_model, caplog):
    fake_model.always("journal_reconstruct", reconstruct_honestly)
    fake_model.always("journal_generate", narrate_first_and_last)
    await import_day(jclient, BIG_DAY)
    ws = await jclient.ws_connect("/api/ws", headers=AUTH)
    started = await call(jclient, "POST", f"/api/journal/days/{DATE}/drafts", 202)
    job = await wait_job(jclient, started["job_id"], timeout=180)
    draft = await draft_of(jclient, job)
    settings = jclient.app[SETTINGS]

    # Several reconstruct calls, each within the window, of whole lines with their own ids.
    calls = fake_model.chats("journal_reconstruct")
    assert len(calls) >= 3 and all(fits(request, settings) for request in calls)
    by_id: dict[str, str] = {}
    for request in calls:
        sources = sent_json(request)["sources"]
        for k, source in enumerate(sources):
            by_id[source["id"]] = source["text"]
            if source["role"] == "assistant":  # its context travels with its user line
                assert sources[k + 1]["role"] == "user"
    ids = [i for request in calls for i in
           (s["id"] for s in sent_json(request)["sources"] if s["role"] == "user")]
    assert ids == [f"u{n}" for n in range(1, DAY_LINES + 1)]  # once each, in order
    assert [by_id[i] for i in ids] == USER_TEXTS  # no line cut, none changed
    first_ids = [sent_json(r)["sources"][0]["id"] for r in calls]
    assert first_ids[0] == "u1" and len(set(first_ids)) == len(calls)

    # The merged artifact is valid; stage 2 went in parts (the day does not fit one
    # narration prompt), each within the window, together every line once, in order.
    assert draft["reconstruction_status"] == "valid" and draft["validation"] == []
    narrations = fake_model.chats("journal_generate")
    assert len(narrations) >= 2 and all(fits(request, settings) for request in narrations)
    told = [line for request in narrations for line in sent_json(request)["sources"]]
    assert [line["source_id"] for line in told] == ids
    assert [line["text"] for line in told] == USER_TEXTS
    hedged = [u for request in narrations for u in sent_json(request)["uncertainties"]]
    assert [u["source_id"] for u in hedged] == [f"u{n}" for n in range(400, 2001, 400)]
    assert "first part" in narrations[0].messages[0]["content"]
    assert all("later part" in r.messages[0]["content"] for r in narrations[1:])

    # The draft: each part's narration in order, its provenance naming lines of several parts.
    expected = "\n\n".join(narrate_first_and_last(request) for request in narrations)
    assert draft["text"] == expected and draft["support"]["left_out"] == []
    named = {i for s in draft["support"]["sentences"] for i in s["sources"]}
    part_of = {i: k for k, request in enumerate(calls)
               for i in (s["id"] for s in sent_json(request)["sources"])}
    assert "u1" in named and f"u{DAY_LINES}" in named
    assert len({part_of[i] for i in named}) >= 2
    stages_run = [s["stage"] for s in draft["trace"]["stages"]]
    assert stages_run == ["reconstruct"] * len(calls) + ["narrate"] * len(narrations)
    assert len(draft["trace"]["estimated_input"]) >= len(calls) + 2

    # The page was told which part ran; the log names the limit that made the parts.
    seen = []
    while not seen or seen[-1]["state"] not in ("done", "failed"):
        message = json.loads(await ws.receive_str(timeout=5))
        if message["type"] == "journal_progress":
            seen.append(message)
    told_parts = [(m["state"], m.get("part"), m.get("parts")) for m in seen if "part" in m]
    assert told_parts == [("reconstruct", k, len(calls)) for k in range(1, len(calls) + 1)] + [
        ("narrate", k, len(narrations)) for k in range(1, len(narrations) + 1)]
    await ws.close()
    warned = [r for r in caplog.records if r.getMessage().startswith("journal day in parts")]
    assert [r.fields["stage"] for r in warned] == ["reconstruct", "narrate"]
    assert warned[0].fields["parts"] == len(calls) and warned[0].fields["window"] == WINDOW
    assert warned[0].fields["limit"] == "context_window"


async def test_a_day_that_fits_is_one_call_of_each_stage_as_before(jclient, fake_model):
    fake_model.script("journal_reconstruct", valid_reconstruction())
    fake_model.script("journal_generate", "Zum Frühstück gab es Brot mit Anna.")
    await import_day(jclient)
    ws = await jclient.ws_connect("/api/ws", headers=AUTH)
    started = await call(jclient, "POST", f"/api/journal/days/{DATE}/drafts", 202)
    draft = await draft_of(jclient, await wait_job(jclient, started["job_id"]))
    [reconstruct] = fake_model.chats("journal_reconstruct")
    [narrate] = fake_model.chats("journal_generate")
    assert [s["text"] for s in sent_json(reconstruct)["sources"]] == [m["text"] for m in LINES]
    assert not any(rule in narrate.messages[0]["content"] for rule in stages.PART_RULES.values())
    assert [s["stage"] for s in draft["trace"]["stages"]] == ["reconstruct", "narrate"]
    while True:
        message = json.loads(await ws.receive_str(timeout=5))
        if message["type"] == "journal_progress":
            assert "part" not in message and "parts" not in message
            if message["state"] == "done":
                break
    await ws.close()


async def test_a_line_too_long_for_any_prompt_is_refused_and_nothing_is_sent(aiohttp_client,
                                                                           journal_app,
                                                                           fake_model):
    # usable 27852 - 4096 reserved = 23756 tokens = 47512 chars: one line of 50 000 is too long
    client = await aiohttp_client(journal_app(max_message_chars=60000))
    await import_day(client, [{"role": "user", "text": "Kurz."},
                              {"role": "user", "text": "Wort " * 10000},
                              {"role": "user", "text": "Auch kurz."}])
    started = await call(client, "POST", f"/api/journal/days/{DATE}/drafts", 202)
    job = await wait_job(client, started["job_id"])
    assert job["state"] == "failed" and job["error"]["code"] == "journal_line_too_long"
    assert "line u2 alone" in job["error"]["message"]
    assert "nothing was cut" in job["error"]["message"]
    assert fake_model.chats() == []
    assert (await call(client, "GET", "/api/journal/days"))[0]["draft_id"] is None


async def test_one_part_failing_is_the_days_fallback_with_its_codes(jclient, fake_model):
    # Three lines of 20 000 chars (10 000 tokens each of 23 756): two parts, u1 u2 and u3. The
    # second part's answer names a line that is not there: the day is written from all lines
    # in their own order, although the first part's answer was valid.
    fake_model.script("journal_reconstruct", reconstruct_honestly,
                      lambda request: {**reconstruct_honestly(request), "source_order": ["u9"]})
    fake_model.always("journal_generate", narrate_first_and_last)
    await import_day(jclient, [{"role": "user", "text": f"{i} " + "Wort " * 3999}
                               for i in range(3)])
    job = await wait_job(jclient, (await call(jclient, "POST",
                                              f"/api/journal/days/{DATE}/drafts", 202))["job_id"])
    draft = await draft_of(jclient, job)
    first, _ = fake_model.chats("journal_reconstruct")
    assert [s["id"] for s in sent_json(first)["sources"]] == ["u1", "u2"]
    assert draft["reconstruction_status"] == "fallback"
    assert draft["validation"][0] == "reconstruction_invalid"
    assert {"unknown_source", "order_changed"} <= set(draft["validation"])
    outcomes = [s["outcome"] for s in draft["trace"]["stages"] if s["stage"] == "reconstruct"]
    assert outcomes == ["valid", "fallback"]
    told = [line for r in fake_model.chats("journal_generate") for line in sent_json(r)["sources"]]
    assert [line["source_id"] for line in told] == ["u1", "u2", "u3"]


# --- the parts' pieces -------------------------------------------------------------------------

def _sources(count: int, chars: int = 60) -> list[Source]:
    return [Source(f"u{n}", "user", f"{n} " + "x" * chars, f"m{n}", "c") for n in range(1, count + 1)]


def test_each_part_is_the_longest_run_of_whole_lines_that_fits(settings):
    sources = _sources(900)
    found = parts.reconstruct_parts(DATE, sources, WINDOW, settings)
    assert len(found) > 1
    assert [s for part, _ in found for s in part] == sources
    for k, (part, prompt) in enumerate(found):
        assert prompt == stages.reconstruct_prompt(DATE, part)
        assert budgeting.measure(prompt, window=WINDOW, max_tokens=settings.journal_output_tokens,
                                 chars_per_token=settings.chars_per_token,
                                 margin=settings.budget_safety_margin).fits
        if k + 1 < len(found):  # one line more and it would not fit
            longer = stages.reconstruct_prompt(DATE, [*part, found[k + 1][0][0]])
            assert not budgeting.measure(
                longer, window=WINDOW, max_tokens=settings.journal_output_tokens,
                chars_per_token=settings.chars_per_token,
                margin=settings.budget_safety_margin).fits


def test_a_part_of_the_artifact_keeps_its_lines_notes_and_the_base_only_first():
    artifact = VerifiedArtifact(
        reconstruction_status="valid",
        sources=[Line("u1", "eins"), Line("u2", "zwei vielleicht"), Line("u3", "drei")],
        uncertainties=[Sourced("u2", "vielleicht")],
        corrections=[Sourced("u3", "drei")],
        base=Base("entry", "Mein Tag."))
    first = parts.part_of(artifact, artifact.sources[:2], first=True)
    later = parts.part_of(artifact, artifact.sources[2:], first=False)
    assert [line.source_id for line in first.sources] == ["u1", "u2"]
    assert first.uncertainties == artifact.uncertainties and first.corrections == []
    assert later.corrections == artifact.corrections and later.uncertainties == []
    assert first.base == artifact.base and later.base is None


def test_parts_texts_join_in_order_with_a_done_list_at_the_end():
    # The list's heading is the first language's; `with_done_list` writes the user's after.
    heading = DONE_HEADINGS[0]
    assert join_parts(["Erst.", "", "Dann.\n\nDone:\n- Milch"]) == (
        f"Erst.\n\nDann.\n\n{heading}:\n- Milch")
    assert join_parts(["Erst.\n\nDone:\n- Brot", "Dann.\n\nErledigt:\n- Milch"]) == (
        f"Erst.\n\nDann.\n\n{heading}:\n- Brot\n- Milch")


def test_a_merged_answer_is_validated_again_over_the_whole_day():
    # Two parts whose records claim they passed, but the second's evidence is in no line:
    # the merge does not trust the parts' word, it checks the joined answer itself.
    sources = _sources(2, chars=5)
    def answer(source: Source, evidence: str) -> Reconstruction:
        return Reconstruction(source_order=[source.source_id], chronology=[ChronologyItem(
            source.source_id, "user", None, [Claim("event", evidence)])])
    fallback = fallback_artifact(sources)
    passed = [stages.Reconstructed(fallback_artifact([s]), [], [], answer(s, e))
              for s, e in zip(sources, (sources[0].text, "erfunden"), strict=True)]
    merged = parts.merge(sources, passed, fallback)
    assert merged.artifact is fallback
    assert merged.validation == ["reconstruction_invalid", "evidence_not_verbatim"]
    honest = [stages.Reconstructed(fallback_artifact([s]), [], [], answer(s, s.text))
              for s in sources]
    merged = parts.merge(sources, honest, fallback)
    assert merged.validation == [] and merged.artifact.reconstruction_status == "valid"
    assert [line.source_id for line in merged.artifact.sources] == ["u1", "u2"]


def test_a_line_that_alone_does_not_fit_names_itself(settings):
    sources = [*_sources(2), Source("u3", "user", "y" * 60000, "m3", "c")]
    with pytest.raises(ModelError) as caught:
        parts.reconstruct_parts(DATE, sources, WINDOW, settings)
    assert caught.value.code == "journal_line_too_long" and "line u3 alone" in caught.value.message


async def test_the_offline_model_writes_a_long_day_in_parts(client):
    # No model server: the offline stand-in answers every part; the draft is every line of
    # the day once, in order, the date heading it once.
    await import_day(client, BIG_DAY)
    started = await call(client, "POST", f"/api/journal/days/{DATE}/drafts", 202)
    draft = await draft_of(client, await wait_job(client, started["job_id"], timeout=180))
    assert draft["reconstruction_status"] == "valid" and draft["validation"] == []
    stages_run = [s["stage"] for s in draft["trace"]["stages"]]
    assert stages_run.count("reconstruct") > 1 and stages_run.count("narrate") > 1
    assert draft["narration"] == "local"
    assert [p for p in draft["text"].split("\n\n") if p] == USER_TEXTS
