"""Schemas, prompt templates and character definitions: the pipeline's data.

- every structured schema's minimal valid instance is the neutral outcome (design §6), and the
  real gateway validates the offline model's answer for each;
- every template renders in German and English with the fields the table names, and a file
  in the data dir replaces the shipped one;
- characters: `nova` built in, more from the data dir, a broken file left out with an error
  that names it, a removed file takes its character away.
"""

from __future__ import annotations

import json
import logging
import math

import msgspec
import pytest

from app.characters.book import CharacterBook, CharacterError, parse_character
from app.llm.schema import (
    STRUCTURED_HEADROOM,
    STRUCTURED_MIN_TOKENS,
    filled_instance,
    json_schema,
    neutral_instance,
    schema_name,
    written_tokens,
)
from app.pipeline import schemas
from app.pipeline.dispatcher import action_outcome, follow_up
from app.pipeline.prompts import BLOCKS, PURPOSES, PromptLibrary, frame, read_frame
from app.pipeline.state import Path2State
from app.pipeline.vocabulary import UserPayload
from app.wiring.purposes import model_schemas
from tests.golden import golden
from tests.pipeline_support import node_context


def test_every_schema_is_listed_under_its_purpose():
    listed = model_schemas()
    for purpose, spec in PURPOSES.items():
        if spec.schema is not None:
            assert listed[purpose] is spec.schema
    # A schema the pipelines define but no purpose sends would escape the offline and
    # peer checks that walk the list.
    assert set(schemas.SCHEMAS) <= set(listed.values())


@pytest.mark.parametrize("schema", schemas.SCHEMAS, ids=lambda s: s.__name__)
def test_the_minimal_instance_is_the_neutral_outcome(schema):
    neutral = neutral_instance(schema)
    values = msgspec.to_builtins(neutral)
    for name, value in values.items():
        assert value in (False, None, 0, 0.0, "", []), f"{schema.__name__}.{name} = {value!r}"
    assert neutral == schema()  # the struct's own defaults are the same neutral instance


def test_neutral_answers_mean_no_action_no_retry_no_follow_up():
    state = Path2State(turn_id="t", user_id="u", character_id="nova", message_ids=[],
                       origin="reply", source="user", trigger_count=0,
                       payload=UserPayload())
    state.route = neutral_instance(schemas.Route)
    state.verdict = neutral_instance(schemas.Verdict)
    assert not state.route.needs_action and not state.route.answers_pending
    assert neutral_instance(schemas.Plan).steps == []
    assert follow_up(state) is None and action_outcome([]) is None
    assert not state.verdict.misses_request


def _enums(node):
    if isinstance(node, dict):
        if "enum" in node:
            yield node["enum"]
        for value in node.values():
            yield from _enums(value)
    elif isinstance(node, list):
        for value in node:
            yield from _enums(value)


def test_no_schema_offers_a_literal_whose_first_value_acts():
    # A Literal's values are listed sorted; the first is what a neutral instance takes. Only
    # agent names (chosen from a list the router fills) and actions whose first value is
    # "none" are allowed.
    for schema in schemas.SCHEMAS:
        for values in _enums(json_schema(schema)):
            if list(values) == sorted(schemas.AGENTS):
                continue
            assert values[0] == "none", f"{schema.__name__}: {values}"
            assert list(values) == sorted(values)


def test_a_neutral_memory_change_keeps_nothing():
    change = neutral_instance(schemas.MemoryChange)
    assert change.action == "none" and not change.text


async def test_the_offline_answer_of_every_purpose_passes_the_real_gateway(
        make_settings, redis_client, tmp_path):
    settings = make_settings(llm_provider="offline")
    async with node_context(settings, redis_client, tmp_path) as (ctx, _):
        b = ctx.blocks
        for purpose, spec in PURPOSES.items():
            completion = await ctx.ask(purpose, [
                (b.history, "[1] USER (neutral): Setz Milch auf die Einkaufsliste"),
                (b.task, "Setz Milch auf die Einkaufsliste"),
                (b.request, "Setz Milch auf die Einkaufsliste und erinnere mich morgen an "
                            "den Zahnarzt"),
                (b.now, "2026-11-30T10:15:00+01:00 (Montag)"),
                (b.answer, "Milch steht drauf.")])
            if spec.schema is not None:
                assert isinstance(completion.value, spec.schema), purpose
            else:
                assert completion.text.strip(), purpose
        assert [c.purpose for c in ctx.calls] == list(PURPOSES)


# --- output reserves (issue 36) ----------------------------------------------------------------

async def test_each_structured_purpose_sends_the_reserve_fitted_to_its_schema(
        fake_model, make_settings, redis_client, tmp_path):
    settings = make_settings(**fake_model.overrides())
    structured = {name: spec for name, spec in PURPOSES.items() if spec.schema is not None}
    async with node_context(settings, redis_client, tmp_path) as (ctx, _):
        for purpose in structured:
            await ctx.ask(purpose, [(ctx.blocks.history, "[1] USER (neutral): Hallo")])
    for purpose, spec in structured.items():
        [request] = fake_model.chats(purpose)
        filled = msgspec.json.encode(filled_instance(json_schema(spec.schema))).decode()
        expected = max(STRUCTURED_MIN_TOKENS, STRUCTURED_HEADROOM * written_tokens(filled))
        assert request.body["max_tokens"] == spec.max_tokens == expected, purpose
    assert structured["perception"].max_tokens < 400  # the round reserve it had before


# What a talkative model writes for each purpose: sentences where the filled instance has a few
# words, lists longer than two. Each must fit its reserve even at 3 characters per token
# (German text with names and numbers; the reserve's own rule counts 3.5).
LONG_ANSWERS: dict[str, dict] = {
 "perception": {"emotion": "erschoepfung", "arousal": 0.35, "intentions": ["information_teilen", "emotionaler_ausdruck", "smalltalk"], "mode": "alltag",
   "core": "Der Mensch war heute von acht bis neunzehn Uhr bei der Arbeit in Hamburg, hatte zwei lange Besprechungen mit Frau Berger und ist jetzt sehr müde und erschöpft.",
   "emotions_vector": "fallend", "language_style": "locker", "relationship_dynamic": "vertrauen", "tone": "behutsam", "topics": ["Arbeit", "Müdigkeit", "Besprechung"], "language": "de"},
 "salience": {"importance": 0.7, "segments": ["Der Mensch hatte einen langen Arbeitstag bis neunzehn Uhr in Hamburg", "Zwei lange Besprechungen mit Frau Berger", "Er ist sehr müde und erschöpft"]},
 "router": {"needs_action": True, "agents": ["lists", "reminders"], "answers_pending": False},
 "planner": {"steps": [{"agent": "lists", "task": "Setz Milch, Eier und Butter auf die Einkaufsliste"}, {"agent": "reminders", "task": "Erinnere mich morgen um neun Uhr an den Zahnarzttermin"}, {"agent": "lists", "task": "Zeig mir die Einkaufsliste"}]},
 "agent_lists": {"list_name": "Wocheneinkauf", "add": ["Milch", "Eier", "Butter", "2 kg Mehl", "Zucker", "Salz", "Tomaten", "Gurken", "Käse", "Brot", "Äpfel", "Kaffee"], "remove": ["Joghurt"], "show": False, "clear": False, "create_list": False},
 "agent_reminders": {"text": "Zahnarzttermin bei Dr. Hoffmann in der Lindenstraße, Versichertenkarte mitnehmen", "due_at": "2026-11-30T09:00:00+01:00", "show": False, "delete": False, "move": False},
 "thinker": {"misses_request": True, "reason": "Die Antwort geht nicht auf die Frage nach dem Termin am Dienstag ein und nennt weder die Uhrzeit noch den Ort, nach denen der Mensch gefragt hat.", "follow_up": True, "commitment": False, "intent": "nachfragen, wie der Termin am Dienstag gelaufen ist"},
 "salience_character": {"importance": 0.6, "segments": ["Nova hat nach dem langen Arbeitstag in Hamburg gefragt", "Nova hat Mitgefühl für die Müdigkeit gezeigt", "Nova hat eine Pause vorgeschlagen"], "emotion": "mitgefuehl", "arousal": 0.3},
 "consolidation": {"memories": [{"action": "remember", "memory_id": "", "text": "Der Mensch arbeitet in Hamburg und hat oft Besprechungen mit Frau Berger.", "kind": "fact"}, {"action": "supersede", "memory_id": "m-2026-0042", "text": "Seine Schwester Anna wohnt jetzt in Leipzig, nicht mehr in Dresden.", "kind": "person"}, {"action": "remember", "memory_id": "", "text": "Er möchte wieder mit dem Klavierspielen anfangen.", "kind": "plan"}, {"action": "refresh", "memory_id": "m-2026-0007", "text": "", "kind": "preference"}]},
}


def test_a_long_answer_of_each_purpose_fits_its_reserve():
    structured = {name for name, spec in PURPOSES.items() if spec.schema is not None}
    assert set(LONG_ANSWERS) == structured
    for purpose, answer in LONG_ANSWERS.items():
        spec = PURPOSES[purpose]
        assert spec.schema is not None
        msgspec.convert(answer, spec.schema)  # a valid answer
        text = json.dumps(answer, ensure_ascii=False)  # with the spaces a model writes
        assert math.ceil(len(text) / 3.0) <= spec.max_tokens, purpose


@pytest.mark.parametrize("language", sorted(BLOCKS))
@pytest.mark.parametrize("purpose", sorted(PURPOSES))
def test_every_template_renders_with_its_fields(purpose, language, make_settings):
    library = PromptLibrary(make_settings())
    values = {name: f"<{name}>" for name in PURPOSES[purpose].fields}
    text = library.system(purpose, language, **values)
    for value in values.values():
        assert value in text
    assert "{" not in text and "}" not in text


def test_a_template_in_the_data_dir_replaces_the_shipped_one(make_settings, data_dir):
    library = PromptLibrary(make_settings())
    shipped = library.system("router", "de", character_name="Nova")
    override = data_dir / "prompts" / "de" / "router.txt"
    override.parent.mkdir(parents=True)
    override.write_text("Entscheide für {character_name}. Ganz knapp.", encoding="utf-8")
    assert library.system("router", "de", character_name="Nova") == \
        "Entscheide für Nova. Ganz knapp."
    assert library.system("router", "en", character_name="Nova") != shipped  # English kept
    override.unlink()
    assert library.system("router", "de", character_name="Nova") == shipped


def test_a_template_missing_a_field_is_an_error_naming_it(make_settings):
    with pytest.raises(KeyError, match="interaction_hint"):
        PromptLibrary(make_settings()).system("responder", "de", character_name="Nova")


def test_frames_leave_out_empty_blocks_and_read_back():
    text = frame([("A", "eins"), ("B", ""), ("C", None), ("D", "zwei\ndrei")])
    assert text == "### A\neins\n\n### D\nzwei\ndrei"
    assert read_frame(text) == {"A": "eins", "D": "zwei\ndrei"}


# --- characters --------------------------------------------------------------------------------

NOVA_LIKE = 'id = "{id}"\nname = "{name}"\nlanguage = "{language}"\npersona = "Du bist {name}."\n'


def test_nova_is_built_in(make_settings):
    book = CharacterBook(make_settings())
    nova = book.get("local", "nova")
    assert nova is not None and nova.name == "Nova" and nova.language == "de"
    assert "Du bist Nova" in nova.persona
    assert (nova.baseline.emotion, nova.baseline.arousal, nova.baseline.mode) == (
        "neutral", 0.5, "alltag")
    assert book.catalog().get("local", "nova").name == "Nova"


def test_the_data_dir_adds_replaces_and_takes_away_characters(make_settings, data_dir):
    folder = data_dir / "characters"
    folder.mkdir()
    (folder / "luna.toml").write_text(
        NOVA_LIKE.format(id="luna", name="Luna", language="en") +
        '[baseline]\nemotion = "ruhe"\narousal = 0.3\n', encoding="utf-8")
    book = CharacterBook(make_settings())
    luna = book.get("local", "luna")
    assert luna is not None and luna.language == "en"
    assert (luna.baseline.emotion, luna.baseline.arousal) == ("ruhe", 0.3)
    catalog = book.catalog()
    assert [c.id for c in catalog.all("local")] == ["nova", "luna"]

    (folder / "nova.toml").write_text(NOVA_LIKE.format(id="nova", name="Nova Zwei",
                                                       language="de"), encoding="utf-8")
    assert book.get("local", "nova").name == "Nova Zwei"
    (folder / "luna.toml").unlink()
    assert catalog.get("local", "luna") is None
    (folder / "nova.toml").unlink()
    assert book.get("local", "nova").name == "Nova"  # the built-in one again


@pytest.mark.parametrize("text, problem", [
    ("id = ", "not valid TOML"),
    (NOVA_LIKE.format(id="Luna!", name="Luna", language="de"), "id"),
    (NOVA_LIKE.format(id="luna", name="Luna", language="fr"), "language"),
    ('id = "luna"\nname = "Luna"\nlanguage = "de"\n', "persona"),
    (NOVA_LIKE.format(id="luna", name="Luna", language="de") + 'mood = "x"\n', "unknown"),
    (NOVA_LIKE.format(id="luna", name="Luna", language="de") + "[baseline]\narousal = 2.0\n",
     "arousal"),
    (NOVA_LIKE.format(id="luna", name="Luna", language="de") + "[baseline]\nlaune = 1\n",
     "unknown"),
    (NOVA_LIKE.format(id="luna", name="Luna", language="de") +
     "[baseline]\nturn_zeit = 1.0\n", "turn_zeit"),
])
def test_a_bad_definition_names_its_problem(text, problem):
    with pytest.raises(CharacterError, match=problem):
        parse_character(text, "test")


def test_a_broken_file_is_left_out_with_an_error_and_the_rest_loads(make_settings, data_dir,
                                                                   caplog):
    folder = data_dir / "characters"
    folder.mkdir()
    (folder / "broken.toml").write_text("id = ", encoding="utf-8")
    (folder / "luna.toml").write_text(NOVA_LIKE.format(id="luna", name="Luna", language="de"),
                                      encoding="utf-8")
    caplog.set_level(logging.ERROR, logger="app.characters.book")
    book = CharacterBook(make_settings())
    assert sorted(d.id for d in book.all("local")) == ["luna", "nova"]
    [record] = caplog.records
    assert record.fields["file"].endswith("broken.toml")
    assert "not valid TOML" in record.fields["problem"]


async def test_characters_are_listed_by_the_api(make_settings, data_dir, aiohttp_client):
    from app.wiring.server import create_app
    from tests.conftest import AUTH, TOKEN
    folder = data_dir / "characters"
    folder.mkdir()
    (folder / "luna.toml").write_text(NOVA_LIKE.format(id="luna", name="Luna", language="en"),
                                      encoding="utf-8")
    client = await aiohttp_client(create_app(make_settings(llm_provider="offline"),
                                             local_token=TOKEN))
    listed = await (await client.get("/api/characters", headers=AUTH)).json()
    assert [(c["id"], c["name"], c["language"]) for c in listed] == [
        ("nova", "Nova", "de"), ("luna", "Luna", "en")]
    assert all("persona" not in c for c in listed)



@pytest.mark.parametrize("schema", schemas.SCHEMAS, ids=lambda s: s.__name__)
def test_every_schema_is_sent_byte_for_byte_as_before(schema):
    # Field order and names are what the model reads: the shared EI base must not move one.
    assert json.dumps([schema_name(schema), json_schema(schema)], ensure_ascii=False).encode() \
        == golden(f"schema_{schema.__name__}")
    assert msgspec.json.encode(msgspec.json.schema(schema)) == \
        golden(f"rawschema_{schema.__name__}")
