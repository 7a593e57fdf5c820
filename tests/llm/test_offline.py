"""The offline provider: lexicon perception (German and English), extractive summaries,
reflective replies, and a valid, neutral instance for every schema the product asks for."""

from __future__ import annotations

import enum
from typing import Annotated, Literal

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.llm import Gateway
from app.llm.offline import handlers
from app.llm.offline.handlers import (
    BASE_ANSWERS,
    extended,
    perceive_text,
    reflective_reply,
    summarize,
)
from app.llm.schema import decode, fill, neutral_instance
from app.pipeline.schemas import Perception  # the product's own schema, not a copy
from app.consolidation import offline as pixie_offline
from app.wiring.purposes import OFFLINE_ANSWERS, model_schemas


@pytest.fixture
async def offline(make_settings):
    async with Gateway(make_settings(llm_provider="offline")) as gateway:
        yield gateway


def user(text: str) -> list[dict[str, str]]:
    return [{"role": "system", "content": "Du bist Nova."}, {"role": "user", "content": text}]


# --- perception ------------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "emotion", "tone"), [
    ("Ich bin heute so traurig, meine Katze Mimi ist gestorben.", "trauer", "empathisch"),
    ("Juhu, ich habe die Prüfung bestanden! Ich freue mich riesig!", "begeisterung", "herzlich"),
    ("Das nervt mich total, der Bus ist schon wieder zu spät.", "wut", "empathisch"),
    ("Ich habe Angst vor dem Gespräch morgen.", "angst", "empathisch"),
    ("I'm so happy today, we had a wonderful picnic.", "freude", "herzlich"),
    ("I am really worried about my exam tomorrow.", "angst", "empathisch"),
    ("Der Zug fährt um 9 Uhr.", "neutral", "neutral"),
    ("Ich bin nicht glücklich mit der Wohnung.", "trauer", "empathisch"),  # negated joy
])
def test_perception_reads_emotion_and_tone_in_german_and_english(text, emotion, tone):
    seen = perceive_text(text)
    assert seen.emotion == emotion and seen.tone == tone
    assert 0.0 <= seen.arousal <= 1.0


def test_perception_reads_arousal_intentions_mode_style_and_topics():
    calm = perceive_text("Der Zug fährt um 9 Uhr.")
    loud = perceive_text("Ich bin SO wütend!!! Das ist echt unverschämt!")
    assert loud.arousal > calm.arousal
    assert calm.intentions == ["information_teilen"] and calm.mode == "alltag"
    question = perceive_text("Wie spät ist es eigentlich?")
    assert question.intentions[0] == "frage" and question.tone == "sachlich"
    request = perceive_text("Kannst du mich morgen an den Arzttermin erinnern?")
    assert {"frage", "bitte", "erinnerung"} <= set(request.intentions)
    assert perceive_text("Hallo!").intentions == ["begruessung", "smalltalk"]
    assert perceive_text("Ich will nicht mehr leben.").mode == "krise"
    assert perceive_text("Haha, der Witz ist gut").mode == "spiel"
    assert perceive_text("Hey du, alles klar? :)").language_style == "locker"
    assert perceive_text("Könnten Sie mir bitte helfen?").language_style == "formell"
    assert perceive_text("Mein Hund Bello bellt, Bello bellt laut.").topics[:2] == [
        "Bello", "bellt"]
    assert perceive_text("I feel lonely tonight.").language == "en"
    assert perceive_text("Ich fühle mich einsam.").relationship_dynamic == "vertrauen"


async def test_perception_fills_the_schema_from_the_last_user_contribution(offline):
    history = ("[1] USER (neutral): Hallo\n[1] NOVA (freude): Hallo! Wie geht's?\n"
               "[2] USER (neutral): Ich bin so traurig, Oma Erna ist im Krankenhaus.")
    result = await offline.complete("perception", user(history), schema=Perception,
                                    max_tokens=400)
    value = result.value
    assert isinstance(value, Perception)
    assert value.emotions_vector == "plateau" and value.relationship_dynamic == "vertrauen"
    assert (value.emotion, value.tone, value.language) == ("trauer", "empathisch", "de")
    assert "emotionaler_ausdruck" in value.intentions
    assert "Oma Erna" in value.core and "Hallo" not in value.core
    assert result.provider == "offline" and result.usage.estimated


class EnglishPerception(msgspec.Struct, rename={"mood": "emotion"}):
    mood: Literal["anger", "joy", "neutral", "sadness"]
    arousal: Annotated[float, msgspec.Meta(ge=0.0, le=1.0)]
    intentions: list[Literal["question", "request", "share_information"]]
    mode: Literal["everyday", "crisis"]


async def test_perception_speaks_the_schemas_vocabulary(offline):
    result = await offline.complete(
        "perception", user("Warum ist der Himmel blau? Ich bin so froh heute."),
        schema=EnglishPerception, max_tokens=200)
    assert result.value == EnglishPerception("joy", result.value.arousal,
                                             ["question", "share_information"], "everyday")


# --- summary ---------------------------------------------------------------------------------

HISTORY = """Previous summary:
Anna wohnt seit 2019 in Leipzig.

Conversation excerpt:
[1] USER (neutral): Morgen fahre ich mit Paul nach Dresden. Das Wetter ist egal.
[1] NOVA (freude): Wie schön! Was habt ihr vor?
[2] NOVA (von sich aus): Denk an die Tickets für 14 Uhr.
[3] USER (neutral): Ja. Wir besuchen die Frauenkirche und treffen Tante Gisela um 15:30."""


def test_the_summary_keeps_names_numbers_and_impulse_labels_in_whole_sentences():
    text = summarize(user(HISTORY), max_chars=2000)
    for kept in ("Anna wohnt seit 2019 in Leipzig.", "Paul nach Dresden",
                 "Nova (von sich aus): Denk an die Tickets für 14 Uhr.",
                 "Tante Gisela um 15:30."):
        assert kept in text
    assert "USER:" not in text and "NOVA" not in text  # no raw renderer labels
    assert "Previous summary" not in text and "Conversation excerpt" not in text


def test_a_short_summary_drops_whole_sentences_and_keeps_facts_first():
    text = summarize(user(HISTORY), max_chars=160)
    assert len(text) <= 160
    lines = text.splitlines()
    sentences = ["Anna wohnt seit 2019 in Leipzig.",
                 "Du: Ja.", "Du: Das Wetter ist egal.", "Nova: Wie schön!",
                 "Du: Morgen fahre ich mit Paul nach Dresden.",
                 "Nova (von sich aus): Denk an die Tickets für 14 Uhr.",
                 "Du: Wir besuchen die Frauenkirche und treffen Tante Gisela um 15:30."]
    assert all(line in sentences for line in lines)  # nothing cut inside a sentence
    assert "Du: Wir besuchen die Frauenkirche und treffen Tante Gisela um 15:30." in lines
    assert "Du: Das Wetter ist egal." not in lines


async def test_summary_through_the_gateway_as_text(offline):
    result = await offline.complete("summary", user(HISTORY), max_tokens=1000)
    assert result.text == summarize(user(HISTORY), max_chars=2000)  # plain text, no JSON
    assert "Tante Gisela um 15:30" in result.text


def test_a_sentence_said_twice_is_summarized_once():
    text = summarize(user("[1] USER (neutral): Ich bin Anna.\n[2] USER (neutral): Ich bin Anna."),
                     max_chars=500)
    assert text == "Du: Ich bin Anna."


class Summary(msgspec.Struct):
    summary: str


async def test_a_structured_summary_fills_the_text_field(offline):
    result = await offline.complete("summary", user(HISTORY), schema=Summary, max_tokens=1000)
    assert "Tante Gisela um 15:30" in result.value.summary


# --- responder -------------------------------------------------------------------------------

async def test_the_reply_reflects_the_users_words_in_the_users_language(offline):
    german = await offline.complete(
        "responder", user("Ich bin traurig. Mein Fahrrad wurde gestohlen."), max_tokens=300)
    assert "traurig" in german.text and "Du schreibst" not in german.text
    english = await offline.complete(
        "responder", user("I'm so tired. Work was endless today."), max_tokens=300)
    assert "exhausting" in english.text and "You wrote" not in english.text
    hello = await offline.complete("responder", user("Hallo!"), max_tokens=100)
    assert hello.text.startswith("Hallo!")


def test_a_reply_never_quotes_the_user_and_fits():
    words = "Ich war heute im Park und habe dort sehr lange mit meiner Nachbarin gesprochen"
    full = reflective_reply(words + ".", max_chars=1000)
    assert words not in full and "Du schreibst" not in full
    short = reflective_reply(words + ".", max_chars=60)
    assert len(short) <= 60 and short.endswith("?")


@pytest.mark.parametrize("words, expected", [
    ("Hallo", "Hallo!"), ("Hallo Nova", "Hallo!"), ("Wie geht es dir?", "Mir geht es gut"),
    ("wie geht's", "Mir geht es gut"), ("Hallo, wie geht's dir?", "Mir geht es gut"),
    ("How are you?", "I'm doing well"),
])
def test_greetings_and_how_are_you_get_a_proper_answer(words, expected):
    assert reflective_reply(words, max_chars=300).startswith(expected)


def test_the_same_fallback_never_comes_twice_in_a_row():
    previous = ""
    for words in ("Ich war im Park.", "Ich war im Park.", "Und dann bin ich heim.",
                  "Ich war im Park.", "Was soll ich tun?", "Was soll ich tun?"):
        reply = reflective_reply(words, max_chars=300, previous=previous)
        assert reply != previous, words
        previous = reply


async def test_the_offline_stream_yields_the_same_answer_piecewise(offline):
    stream = offline.stream("responder", user("Ich freue mich auf den Urlaub."), max_tokens=200)
    pieces = [piece async for piece in stream]
    assert len(pieces) > 3
    whole = await offline.complete("responder", user("Ich freue mich auf den Urlaub."),
                                   max_tokens=200)
    assert "".join(pieces) == whole.text == stream.completion.text


# --- every schema ----------------------------------------------------------------------------

class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Inner(msgspec.Struct):
    label: str
    weight: Annotated[int, msgspec.Meta(ge=3)]


class Cat(msgspec.Struct, tag=True):
    name: str


class Dog(msgspec.Struct, tag=True):
    good: bool


class Everything(msgspec.Struct, forbid_unknown_fields=True):
    flag: bool
    count: int
    ratio: Annotated[float, msgspec.Meta(gt=0.5, le=2.0)]
    choice: Literal["zebra", "none", "apple"]
    color: Color
    items: list[Inner]
    some: Annotated[list[str], msgspec.Meta(min_length=2)]
    pair: tuple[int, str]
    mapping: dict[str, int]
    maybe: str | None
    nested: Inner
    pet: Cat | Dog
    named: str = "default stays"


REPRESENTATIVE = {"everything": Everything, "english_perception": EnglishPerception}


def test_the_neutral_instance_is_the_minimal_valid_one():
    value = neutral_instance(Everything)
    assert value.flag is False and value.count == 0 and value.ratio > 0.5
    assert value.choice == "apple"  # the first value as the schema lists it (sorted)
    assert value.color is Color.BLUE
    assert value.items == [] and value.some == ["", ""] and value.pair == (0, "")
    assert value.mapping == {} and value.maybe is None and value.nested == Inner("", 3)
    assert value.pet == Cat("") and value.named == "default stays"


def test_fill_takes_valid_values_and_leaves_the_neutral_default_for_the_rest():
    value = fill(Everything, {"flag": True, "count": "not a number", "choice": ("nope", "zebra"),
                              "some": ["a", 1, "b"], "nested": {"label": "x", "weight": 5}})
    assert value.flag is True and value.count == 0 and value.choice == "zebra"
    assert value.some == ["a", "b"] and value.nested == Inner("x", 5)


@pytest.mark.parametrize("answers", [BASE_ANSWERS, OFFLINE_ANSWERS], ids=["base", "product"])
async def test_every_schema_gets_a_valid_answer_offline(make_settings, answers):
    schemas = {**model_schemas(), **REPRESENTATIVE}
    async with Gateway(make_settings(llm_provider="offline"), offline_answers=answers) as offline:
        for purpose, schema in schemas.items():
            for text in ("Hallo, wie geht es dir heute?", "Erinnere mich morgen um 8 an Anna!",
                         "I feel sad and lonely.", ""):
                result = await offline.complete(purpose, user(text), schema=schema,
                                                max_tokens=500)
                assert isinstance(result.value, schema), purpose
                assert decode(result.text, schema) == result.value, purpose


def test_the_product_lists_its_schemas():
    listed = model_schemas()
    assert {"perception", "router", "thinker", "journal_reconstruct", "profile_review"} <= set(
        listed)


class Route(msgspec.Struct, kw_only=True):
    needs_action: bool = False
    agents: list[Literal["lists", "reminders"]] = msgspec.field(default_factory=list)


async def test_a_purpose_gets_its_handler_from_the_gateways_table(make_settings):
    answers = extended(BASE_ANSWERS, {"router": lambda request: {
        "needs_action": "erinnerung" in perceive_text(request.user_text).intentions}})
    async with Gateway(make_settings(llm_provider="offline"), offline_answers=answers) as offline:
        result = await offline.complete("router", user("Erinnere mich an den Müll."),
                                        schema=Route, max_tokens=100)
        assert result.value.needs_action is True
        result = await offline.complete("router", user("Schönes Wetter heute."), schema=Route,
                                        max_tokens=100)
        assert result.value.needs_action is False


async def test_each_gateway_answers_with_its_own_table(make_settings):
    """Gateways in one process (two apps, a test's own) share no table: what one is built
    with changes nothing for another."""
    from app.pipeline.prompts import BLOCKS, PURPOSES, frame
    settings = make_settings(llm_provider="offline")
    loud = extended(BASE_ANSWERS, {"summary": lambda request: "LOUD"}, replacing={"summary"})
    asked = user(frame([(BLOCKS["de"].history,
                         "[1] USER (neutral): Setz Milch auf die Einkaufsliste")]))
    schema = PURPOSES["router"].schema
    async with Gateway(settings, offline_answers=loud) as a, Gateway(settings) as base, \
            Gateway(settings, offline_answers=OFFLINE_ANSWERS) as product:
        summaries = [(await g.complete("summary", user(HISTORY), max_tokens=1000)).text
                     for g in (a, base, product)]
        routes = [(await g.complete("router", asked, schema=schema, max_tokens=200)).value
                  for g in (a, base, product)]
    assert summaries[0] == "LOUD" and "LOUD" not in summaries[1:]
    assert summaries[1] == summaries[2]  # the product keeps the provider's own summary
    assert routes[0] == routes[1] == neutral_instance(schema)  # no router rule in the base
    assert routes[2].needs_action and routes[2].agents == ["lists"]


# --- composing the answers -------------------------------------------------------------------

PURPOSE_NAMES = st.sets(st.sampled_from(["a", "b", "c", "d", "e", "f"]), max_size=6)


def _table(purposes: set[str], tag: str) -> dict[str, handlers.Handler]:
    return {purpose: (lambda request, tag=tag: tag) for purpose in purposes}


@given(base=PURPOSE_NAMES, added=PURPOSE_NAMES, replacing=PURPOSE_NAMES)
def test_a_table_extends_another_only_where_it_says_so(base, added, replacing):
    first, second = _table(base, "first"), _table(added, "second")
    shared = base & added
    if replacing != shared:
        with pytest.raises(ValueError, match="replaced"):
            extended(first, second, replacing=replacing)
        return
    result = extended(first, second, replacing=replacing)
    assert set(result) == base | added
    assert {p: h(None) for p, h in result.items()} == {
        **{p: "first" for p in base}, **{p: "second" for p in added}}
    assert set(first) == base  # the tables themselves are left as they were
    with pytest.raises(TypeError):
        result["x"] = first.get("a")  # type: ignore[index]


def test_the_product_says_which_answers_replace_the_providers_own():
    assert OFFLINE_ANSWERS["perception"] is BASE_ANSWERS["perception"]
    assert OFFLINE_ANSWERS["summary"] is BASE_ANSWERS["summary"]
    assert OFFLINE_ANSWERS["responder"] is pixie_offline.responder  # wraps the pipeline's
    assert OFFLINE_ANSWERS["salience"] is pixie_offline.salience


@pytest.mark.parametrize("words, echoed", [
    ("Meine Schwester hat angerufen.", "Was bedeutet Schwester für dich?"),
    ("Schwester Anna hat angerufen.", "Was bedeutet Schwester für dich?"),  # a noun opening
    ("Gardening relaxes me a lot.", "What does gardening mean to you?"),  # an ordinary word
    ("Paris was lovely in the rain.", "What does Paris mean to you?"),  # a name opening
])
def test_a_reply_echoes_a_word_as_the_user_spells_it(words, echoed):
    said: list[str] = []
    for _ in range(12):  # every variant once: the echo is one of them
        said.append(reflective_reply(words, max_chars=300, previous=said))
    assert any(echoed in reply for reply in said), said


def test_topics_are_spelled_as_written_and_counted_in_any_case():
    assert perceive_text("Mein Hund Bello bellt, bello bellt laut.").topics[:2] == [
        "Bello", "bellt"]
    assert perceive_text("Fußball am Abend. Ich liebe Fußball.").topics[0] == "Fußball"
