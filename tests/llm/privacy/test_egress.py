"""The second gate (issue 23, item 2): the final request body of every remote call holds no
registered name in the normalised view, or the call is refused before anything is sent; and
the normalised view itself (`app/llm/privacy/normalise.py`) — what it folds, how a span maps
back, that the reply check and the gate read the same view (issue 24, item 5).

The disguises are made from the Unicode data itself (Cyrillic, Greek, fullwidth and
mathematical letters that the confusables data lists as look-alikes of a Latin letter; the
default-ignorable code points), not from the fold's own table."""

from __future__ import annotations

import json
import logging
import unicodedata

import msgspec
import pytest
from confusable_homoglyphs.confusables import confusables_data
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from app.llm import Gateway, ModelError
from app.llm.privacy import EgressGate, EgressRefused, IdentityRegistry, Masker, NameIndex, Person
from app.llm.privacy.normalise import normalise, view
from app.llm.privacy.rules import FUNCTION_WORDS, HOMONYMS, TITLES
from app.llm.privacy.words import HONORIFIC_WORDS, dictionary
from app.storage.database import Database
from tests.fakemodel import UNNAMED
from tests.privacy_support import leaked

INVISIBLE = ["\u00ad", "\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u180e", "\u2063"]
_SCRIPTS = ("CYRILLIC", "GREEK", "FULLWIDTH", "MATHEMATICAL BOLD", "MATHEMATICAL ITALIC")


def _look_alikes() -> dict[str, list[str]]:
    """Latin letter -> the letters of other scripts the confusables data says look like it
    (letters: a digit `𝟏` for an `l` is another character, not a disguise of a name; no
    fullwidth `Ｉ` for an `l`: it is the letter I, as the ASCII `I` is; and no capital iota
    for a small `i`: without its dot, between small letters, it reads as an `l`)."""
    table: dict[str, list[str]] = {}
    for letter in "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ":
        for glyph in confusables_data.get(letter, ()):
            compatible = unicodedata.normalize("NFKC", glyph["c"])
            if (len(glyph["c"]) == 1 and glyph["c"].isalpha() and glyph["n"].startswith(_SCRIPTS)
                    and (not compatible.isascii() or compatible == letter)
                    and not (letter == "i" and glyph["c"].isupper())):
                table.setdefault(letter, []).append(glyph["c"])
    return table


LOOK_ALIKES = _look_alikes()
# Real names (umlauts, accents, compounds) that are no ordinary word.
REAL = ["Jürgen", "Björn", "Zoë", "José", "Käthe Rößler", "Anna-Lena",
        "Müller-Lüdenscheidt",
        "Sören Klüver", "Ayşe Özkan", "Gwendolyn Harcourt", "Priya Natarajan", "Malte",
        "Oskar Lemke", "Tamsin", "Wiebke Ahrens", "Declan", "Ifeoma Nwosu", "Hildegard"]


def _ordinary(word: str) -> bool:
    """A word, or a person word (which alone is no name: the API refuses "Frau", "Mann")."""
    low = word.lower()
    return (low in dictionary() or low in HOMONYMS or low in FUNCTION_WORDS
            or low in HONORIFIC_WORDS or low in TITLES)


def _invented() -> st.SearchStrategy[str]:
    """A name nobody has (so that no rule may call it an ordinary word)."""
    return st.text("bcdfghklmnprstvwzaeiouäöü", min_size=3, max_size=9).map(
        str.capitalize).filter(lambda w: not _ordinary(w))


names = st.one_of(st.sampled_from(REAL), _invented(),
                  st.tuples(_invented(), _invented()).map(" ".join))


@st.composite
def disguised(draw: st.DrawFn, name: str) -> str:
    """One word of `name`, written as a person might or an attacker would."""
    word = draw(st.sampled_from([w for w in name.replace("-", " ").split()
                                 if len(w) >= 2 and not _ordinary(w)]))
    case = draw(st.sampled_from([str, str.lower, str.upper]))
    word = case(word)
    if draw(st.booleans()):  # another spelling
        for umlaut, pair in (("ä", "ae"), ("ö", "oe"), ("ü", "ue"), ("ß", "ss"), ("Ä", "Ae"),
                             ("Ö", "Oe"), ("Ü", "Ue")):
            word = word.replace(umlaut, pair)
        word = "".join(c for c in unicodedata.normalize("NFD", word)
                       if not unicodedata.combining(c) or c == "\u0308")
    letters = list(word)
    for i in draw(st.sets(st.integers(0, len(letters) - 1), max_size=2)):
        if letters[i] in LOOK_ALIKES and draw(st.booleans()):
            letters[i] = draw(st.sampled_from(LOOK_ALIKES[letters[i]]))
    for i in sorted(draw(st.sets(st.integers(1, max(1, len(letters) - 1)), max_size=2)),
                    reverse=True):
        letters.insert(i, draw(st.sampled_from(INVISIBLE)))
    word = "".join(letters)
    shape = draw(st.sampled_from(["{}", "{}s", "{}'s", "{}’s", "{}-Marie", "Jan-{}", "{}-Kühn"]))
    return shape.format(word)


TEMPLATES = ["{} hat heute angerufen, es geht ihr besser.", "gestern war ich mit {} im kino",
             "I met {} at the station and we talked for hours.", "Termin mit {} um 15 Uhr",
             "{} und ich fahren am Wochenende weg", "schreib {} bitte zurück"]


def _leaked(name: str, body: str) -> list[str]:
    return leaked([name], body)


# --- the view -----------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "seen"), [
    ("Car\u00adla", "Carla"), ("Ma\u200bts", "Mats"), ("Frie\u200cda", "Frieda"),
    ("He\u2060di", "Hedi"), ("Tam\ufeffsin", "Tamsin"), ("Ｎｅｌｅ", "Nele"), ("𝐋𝐞𝐨𝐧", "Leon"),
    ("Аnna", "Anna"), ("Οtto", "Otto"), ("Lіsa", "Lisa"), ("Іrene", "Irene"), ("Κate", "Kate"),
    ("Marie\u2011Luise", "Marie-Luise"), ("Ju\u0308rgen", "Jürgen"),
    ("Carla\u00a0Brandt", "Carla Brandt"),
    ("yılmaz", "yilmaz"), ("Klaus’", "Klaus'"),
    ("José, Ursu\u0301la, Łukasz, Ayşe, Søren", "Jose, Ursula, Lukasz, Ayse, Soren"),
    ("Jürgen, Straße, Weiß, Ærø", "Jürgen, Straße, Weiß, AEro"),  # umlauts and ß stay
    ("0170 1234567 l1 O0", "0170 1234567 l1 O0")])  # ASCII is never folded
def test_the_view_folds_disguises_and_keeps_the_rest(text, seen):
    assert normalise(text) == seen


@settings(max_examples=200, deadline=None)
@given(name=names, data=st.data())
def test_a_span_of_the_view_maps_back_to_exactly_the_disguised_characters(name, data):
    written = data.draw(disguised(name))
    before, after = data.draw(st.sampled_from([("", " kommt"), ("Heute hat ", " angerufen."),
                                               ("I met ", " today")]))
    text = before + written + after
    shown = view(text)
    # The frames are ASCII, which the view never folds: the name's view starts where the frame
    # ends (searching for it could find it inside the frame: "eut" in "Heute").
    start = len(before)
    end = start + len(normalise(written))
    assert shown.text[start:end] == normalise(written)
    assert (shown.start(start), shown.end(end)) == (len(before), len(before) + len(written))


@settings(max_examples=150, deadline=None)
@given(name=names, data=st.data())
def test_a_disguised_registered_name_is_masked_whole(name, data):
    written = data.draw(disguised(name))
    text = data.draw(st.sampled_from(TEMPLATES)).format(written)
    masker = Masker(NameIndex([name]))
    masked = masker.mask(text)
    assert not _leaked(name, masked), (text, masked)
    assert masker.unmask(masked) == text  # the placeholder replaced exactly what stood there


# --- the gate -----------------------------------------------------------------------------

def body(*contents: str, **more: object) -> bytes:
    return msgspec.json.encode({"model": "fake", "messages": [
        {"role": "user", "content": c} for c in contents], **more})


@pytest.mark.parametrize("content", [
    "Car\u00adla kommt", "carlamustermann", "Hallo CarlaMustermann", "#HappyBirthdayCarla",
    "carla_mustermann.pdf", "Carlas Auto", "Anna-Carla kommt", "Сarla", "ＣＡＲＬＡ",
    "Mustermann's van", "frau mustermann"])
def test_the_gate_refuses_a_body_with_a_registered_name_in_any_form(content):
    gate = EgressGate(NameIndex(["Carla Mustermann"]))
    if content == "carlamustermann":  # run together in lower case: no bound to find
        assert gate.gaps(body(content)) == []
        return
    with pytest.raises(EgressRefused) as refused:
        gate.check(body("Hallo.", content))
    assert refused.value.code == "privacy_blocked"
    assert "carla" not in refused.value.message.lower()
    assert "mustermann" not in refused.value.message.lower()


def test_the_gate_passes_a_masked_body_and_the_ordinary_words():
    gate = EgressGate(NameIndex(["Frank Freitag", "Max", "Rose"]))
    gate.check(body("[PERSON_1] kommt am Freitag, frank und frei, max zwei Stunden",
                    "Rosen aus dem Garten", "Max-Planck-Institut"))
    gate.check(body("Hallo", max_tokens=100))  # the protocol's own words are no text


def test_the_gate_reads_every_string_of_the_body_and_names_the_gap_without_the_name(caplog):
    from app.llm.privacy.stats import Counters

    counters = Counters()
    gate = EgressGate(NameIndex(["Tamsin Roe"], ["Tammy"]), counters, "journal_generate")
    schema = {"type": "json_schema", "json_schema": {"name": "Entry", "schema": {
        "description": "Notes about tammy"}}}
    with caplog.at_level(logging.WARNING), pytest.raises(EgressRefused):
        gate.check(body("Tam\u200bsin kommt", response_format=schema))
    [record] = [r for r in caplog.records if "detector gap" in r.getMessage()]
    fields = record.__dict__["fields"]
    assert fields["purpose"] == "journal_generate" and fields["gap_count"] == 2
    assert {(g["term"], g["place"]) for g in fields["gaps"]} == {
        ("part", "messages[0].content"),
        ("alias", "response_format.json_schema.schema.description")}
    assert ["invisible characters"] in [g["form"] for g in fields["gaps"]]
    logged = json.dumps(fields, ensure_ascii=False).lower() + record.getMessage().lower()
    assert "tamsin" not in logged and "tammy" not in logged
    assert (counters.requests_blocked, counters.calls_blocked) == (1, 1)


@settings(max_examples=150, deadline=None)
@given(name=names, data=st.data())
def test_the_reply_check_and_the_gate_read_the_same_view(name, data):
    """Issue 24, item 5: whatever disguise hides a registered name from one of them hides it
    from the other too — both flag it, because both read `normalise.view`."""
    written = data.draw(disguised(name))
    text = data.draw(st.sampled_from(TEMPLATES)).format(written)
    index = NameIndex([name])
    assert Masker(index).leaks(text) == ["PERSON"], text
    assert EgressGate(index).gaps(body(text)), text


# --- through the gateway and the fake remote model ----------------------------------------

@pytest.fixture
async def registry(data_dir):
    db = Database(data_dir / "registry.db")
    await db.open()
    yield IdentityRegistry(db)
    await db.close()


@pytest.fixture
async def remote(fake_model, make_settings, registry):
    settings = make_settings(**fake_model.overrides(llm_remote=True))
    async with Gateway(settings, registry) as gateway:
        yield gateway


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=names, data=st.data())
async def test_no_disguise_brings_a_registered_name_into_the_remote_request_body(
        name, data, remote, registry, fake_model):
    """For any registered name and any text that embeds it — any case, another spelling,
    a hyphen compound, a genitive, invisible characters, look-alike letters — the body the
    fake remote model receives never holds it in the normalised view: it is masked, or the
    call is refused and nothing is sent."""
    written = data.draw(disguised(name))
    assume(written.strip())
    text = data.draw(st.sampled_from(TEMPLATES)).format(written)
    await registry.replace("local", [Person(name)])
    before = len(fake_model.chats())
    fake_model.always(UNNAMED, "Schön, [PERSON_1].")
    try:
        await remote.complete("responder", [{"role": "system", "content": "Du bist Nova."},
                                            {"role": "user", "content": text}],
                              max_tokens=50, user_id="local")
    except ModelError as exc:
        assert exc.code == "privacy_blocked"
        assert len(fake_model.chats()) == before  # refused: nothing was sent
    for request in fake_model.chats()[before:]:
        assert not _leaked(name, json.dumps(request.body, ensure_ascii=False)), text


class Notes(msgspec.Struct):
    """What to write down about Tamsin."""  # a schema's description goes out unmasked

    text: str = ""


async def test_a_json_schema_that_names_a_registered_person_is_refused_unsent(
        remote, registry, fake_model):
    await registry.replace("local", [Person("Tamsin Roe")])
    with pytest.raises(ModelError) as refused:
        await remote.complete("perception", [{"role": "user", "content": "Hallo"}],
                              schema=Notes, max_tokens=50, user_id="local")
    assert refused.value.code == "privacy_blocked"
    assert fake_model.chats() == []
    assert remote.privacy_stats.of("local").as_dict()["requests_blocked"] == 1


async def test_a_detector_gap_is_caught_by_the_gate_and_a_stream_is_not_retried(
        remote, registry, fake_model, monkeypatch):
    """A bug in the registered-name finder (here: it finds nothing) leaks nothing: the gate
    refuses the stream's request, and it is not retried like a leaking reply."""
    await registry.replace("local", [Person("Tamsin Roe")])
    monkeypatch.setattr(NameIndex, "find_in_view", lambda self, text: iter(()))
    with pytest.raises(ModelError) as refused:
        async for _ in remote.stream("responder", [{"role": "user", "content": "Tamsin ruft an"}],
                                     max_tokens=50, user_id="local"):
            pass
    assert refused.value.code == "privacy_blocked" and isinstance(refused.value, EgressRefused)
    assert fake_model.chats() == []
    counters = remote.privacy_stats.of("local").as_dict()
    assert (counters["requests_blocked"], counters["calls_blocked"], counters["retries"]) == \
        (1, 1, 0)


# --- off the event loop -------------------------------------------------------------------

async def _ticks_while(work) -> tuple[int, object]:
    """How often the event loop ran another task while `work` was awaited."""
    import asyncio

    ticks = 0
    done = False

    async def ticker() -> None:
        nonlocal ticks
        while not done:
            await asyncio.sleep(0)
            ticks += 1

    task = asyncio.create_task(ticker())
    await asyncio.sleep(0)
    before = ticks
    result = await work
    after = ticks
    done = True
    await task
    return after - before, result


async def test_a_long_prompt_and_its_body_are_checked_off_the_event_loop():
    from app.llm.privacy import OFF_LOOP_CHARS

    index = NameIndex(["Tamsin Roe"])
    line = "Heute war ein langer Tag, Tamsin hat angerufen und wir haben geredet. "
    long = [{"role": "user", "content": line * (OFF_LOOP_CHARS // len(line) + 50)}]
    short = [{"role": "user", "content": line}]
    ticks, masked = await _ticks_while(Masker(index).mask_messages_off_loop(long))
    assert ticks > 0 and "Tamsin" not in masked[0]["content"]  # the loop ran meanwhile
    ticks, masked = await _ticks_while(Masker(index).mask_messages_off_loop(short))
    assert ticks == 0 and "[PERSON_1]" in masked[0]["content"]  # short: on the loop, at once
    gate = EgressGate(index)
    ticks, _ = await _ticks_while(gate(body(long[0]["content"].replace("Tamsin", "[PERSON_1]"))))
    assert ticks > 0
    with pytest.raises(EgressRefused):
        await gate(body(long[0]["content"]))


def test_a_written_digraph_beside_umlauts_spelled_out_is_still_the_name():
    # Found by the property above: "Aeääää" written "Aeaeaeaeae" (the "ae" kept, every "ä"
    # spelled out) was no spelling of the name.
    masker = Masker(NameIndex(["Aaa Aeääää"]))
    masked = masker.mask("Aeaeaeaeae hat heute angerufen.")
    assert not _leaked("Aaa Aeääää", masked), masked
