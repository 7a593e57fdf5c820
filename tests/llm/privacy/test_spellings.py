"""The last spellings of issue 39: a registered name in mathematical letters (and every other
alphabet that NFKC folds to ASCII), inside a compound, in ASCII look-alikes; and the tail of
unregistered names. Each spelling is checked on the three paths a name can take: the masking
(the prompt that goes out), the egress gate (the body, if the masking missed it) and the reply
check (a reply that names the person).

The alphabets come from the Unicode data itself (every character whose NFKC is one ASCII
letter, grouped by its name: "MATHEMATICAL BOLD", "FULLWIDTH", "CIRCLED" …), not from the
view's own tables; the body is read by the test's own reader (`tests/privacy_support`)."""

from __future__ import annotations

import json
import re
import unicodedata
from collections import defaultdict

import msgspec
import pytest

from app.llm import Gateway, ModelError
from app.llm.privacy import EgressGate, IdentityRegistry, Masker, NameIndex, Person, detect
from app.llm.privacy.normalise import normalise
from app.storage.database import Database
from tests.fakemodel import UNNAMED
from tests.privacy_support import leaked

_LETTER_WORDS = re.compile(r"\b(?:MATHEMATICAL|LATIN|LETTER|CAPITAL|SMALL)\b|\b[A-Z]$")


def _alphabets() -> dict[str, dict[str, str]]:
    """Every non-ASCII character that NFKC folds to one ASCII letter, by alphabet (its name
    without the letter: "BOLD ITALIC", "FULLWIDTH", "CIRCLED", "ROMAN NUMERAL FIFTY"):
    alphabet -> {ASCII letter: the character}."""
    found: dict[str, dict[str, str]] = defaultdict(dict)
    for code in range(0x80, 0x110000):
        char = chr(code)
        folded = unicodedata.normalize("NFKC", char)
        if len(folded) == 1 and folded.isascii() and folded.isalpha():
            name = " ".join(_LETTER_WORDS.sub(" ", unicodedata.name(char)).split())
            found[name].setdefault(folded, char)
    return dict(found)


ALPHABETS = _alphabets()
NAME = "Carla Mustermann"


def _written_in(alphabet: dict[str, str], name: str) -> str:
    """`name` with every letter the alphabet has written in it (in capitals where it has only
    those)."""
    if not any(c in alphabet for c in name):
        name = name.upper()
    return "".join(alphabet.get(c, c) for c in name)


def _invented(letter: str) -> str:
    """A registered name nobody has that holds `letter` (a capital at its start, a small
    letter inside)."""
    return letter + "orvak" if letter.isupper() else "Bor" + letter + "ak"


def body(text: str) -> bytes:
    return msgspec.json.encode({"model": "fake", "messages": [{"role": "user", "content": text}]})


def _three_paths(name: str, written: str) -> None:
    """The registered `name`, spelled `written` in a sentence: masked by the masking (and
    given back exactly), refused by the gate when it goes out as it is, caught by the reply
    check."""
    text = f"Gestern hat {written} angerufen, es geht ihr besser."
    index = NameIndex([name])
    masker = Masker(index)
    masked = masker.mask(text)
    assert not leaked([name], masked), (name, text, masked)
    assert masker.unmask(masked) == text
    assert EgressGate(index).gaps(body(text)), (name, text)
    assert Masker(index).leaks(text) == ["PERSON"], (name, text)


def test_the_alphabets_hold_every_maths_style_and_every_letter():
    assert {"BOLD", "ITALIC", "BOLD ITALIC", "SCRIPT", "BOLD SCRIPT", "FRAKTUR",
            "DOUBLE-STRUCK", "SANS-SERIF", "SANS-SERIF BOLD", "MONOSPACE", "FULLWIDTH",
            "CIRCLED", "SQUARED"} <= set(ALPHABETS)
    assert sum(len(letters) for letters in ALPHABETS.values()) > 800


def test_the_view_of_a_maths_letter_is_its_nfkc_letter():
    """The confusables data gives a mathematical `m` the prototype "rn"; NFKC says `m`."""
    assert normalise("Carla 𝐌𝐮𝐬𝐭𝐞𝐫𝐦𝐚𝐧𝐧") == "Carla Mustermann"
    assert normalise("𝑴𝒖𝒔𝒕𝒆𝒓𝒎𝒂𝒏𝒏 𝕄𝕦𝕤𝕥𝕖𝕣𝕞𝕒𝕟𝕟 𝚖 ⅿ") == "Mustermann Mustermann m m"
    for letters in ALPHABETS.values():
        for letter, char in letters.items():
            # inside a word of small letters an I-shaped capital is an l (`normalise._inside_word`)
            assert normalise(f"x{char}") in (f"x{letter}", "xl" if letter == "I" else ""), char


def test_a_look_alike_with_marks_is_the_latin_letter_with_them():
    """Cyrillic `е` + U+0308 composes (NFKC) to `ё`, which the confusables data does not list:
    its base is the look-alike (found by hypothesis in `test_egress`)."""
    assert normalise("Zo\u0435\u0308 Zoё Mӧller") == "Zoe Zoe Möller"


@pytest.mark.parametrize("alphabet", sorted(ALPHABETS))
def test_a_registered_name_in_any_alphabet_nfkc_folds_is_caught_on_every_path(alphabet):
    letters = ALPHABETS[alphabet]
    _three_paths(NAME, _written_in(letters, NAME))
    for letter, char in letters.items():  # every letter of the alphabet, in a name of its own
        name = _invented(letter)
        _three_paths(name, name.replace(letter, char, 1))


# --- through the gateway and the fake remote model ----------------------------------------

@pytest.fixture
async def registry(data_dir):
    db = Database(data_dir / "registry.db")
    await db.open()
    registry = IdentityRegistry(db)
    await registry.replace("local", [Person(NAME)])
    yield registry
    await db.close()


@pytest.fixture
async def remote(fake_model, make_settings, registry):
    settings = make_settings(**fake_model.overrides(llm_remote=True, model_retries=0))
    async with Gateway(settings, registry) as gateway:
        yield gateway


MATHS = ["BOLD", "ITALIC", "BOLD ITALIC", "SCRIPT", "BOLD SCRIPT", "FRAKTUR", "DOUBLE-STRUCK",
         "SANS-SERIF", "SANS-SERIF BOLD", "SANS-SERIF ITALIC", "MONOSPACE"]


async def test_a_maths_name_never_reaches_the_remote_model_and_a_reply_naming_it_is_blocked(
        remote, fake_model, monkeypatch):
    for style in MATHS:
        written = "Carla " + _written_in(ALPHABETS[style], "Mustermann")
        before = len(fake_model.chats())
        fake_model.script(UNNAMED, "Schön, [PERSON_1].")
        result = await remote.complete(
            "responder", [{"role": "user", "content": f"{written} hat angerufen."}],
            max_tokens=50, user_id="local")
        [request] = fake_model.chats()[before:]
        assert not leaked([NAME], json.dumps(request.body, ensure_ascii=False)), style
        assert result.text == f"Schön, {written}."
        # A reply that names the person in that alphabet is caught before it is shown
        # (the retry repeats it).
        fake_model.script(UNNAMED, f"Grüß {written}!", f"Grüß {written}!")
        with pytest.raises(ModelError) as blocked:
            await remote.complete("responder", [{"role": "user", "content": "Hallo"}],
                                  max_tokens=50, user_id="local")
        assert blocked.value.code == "privacy_blocked", style
    # The gate: with a masking that finds nothing, the body in maths letters is refused unsent.
    monkeypatch.setattr(NameIndex, "find_in_view", lambda self, text: iter(()))
    sent = len(fake_model.chats())
    for style in MATHS:
        with pytest.raises(ModelError) as refused:
            await remote.complete(
                "responder",
                [{"role": "user", "content": _written_in(ALPHABETS[style], NAME) + " kommt"}],
                max_tokens=50, user_id="local")
        assert refused.value.code == "privacy_blocked", style
    assert len(fake_model.chats()) == sent


# --- item 2: a registered name inside a compound ------------------------------------------

@pytest.mark.parametrize(("text", "masked"), [
    # the examples
    ("Spende an die Carla-Mustermann-Stiftung", "Spende an die [PERSON_1]-Stiftung"),
    ("Wir wohnen in der Carla-Mustermann-Straße.", "Wir wohnen in der [PERSON_1]-Straße."),
    ("der Carla-Mustermann-Fanclub trifft sich", "der [PERSON_1] trifft sich"),
    # held out: other heads, one part, a genitive, lower case, three parts before the head
    ("Das Mustermann-Haus ist verkauft.", "Das [PERSON_1]-Haus ist verkauft."),
    ("Preisverleihung: der Carla-Mustermann-Preis 2025", "Preisverleihung: der [PERSON_1]-Preis 2025"),
    ("die carla-mustermann-schule hat heute zu", "die [PERSON_1]-schule hat heute zu"),
    ("im Carla-Mustermanns-Garten", "im [PERSON_1]-Garten"),
])
def test_a_registered_name_in_a_compound_that_names_a_thing_is_masked(text, masked):
    index = NameIndex([NAME])
    masker = Masker(index)
    assert masker.mask(text) == masked
    assert masker.unmask(masked) == text
    assert EgressGate(index).gaps(body(text)), text
    assert Masker(index).leaks(text) == ["PERSON"], text


@pytest.mark.parametrize("text", [
    "Sie arbeitet am Max-Planck-Institut in Jena.",  # "Planck" is nobody's
    "Treffpunkt an der Karl-Marx-Straße", "die Goethe-Schule", "im Rosen-Garten"])
def test_a_thing_named_after_someone_else_stays(text):
    index = NameIndex(["Max", "Karl Berger", "Rose"])
    assert Masker(index).mask(text) == text
    assert EgressGate(index).gaps(body(text)) == []


# --- item 3: ASCII look-alikes of a registered name ---------------------------------------

@pytest.mark.parametrize(("name", "text"), [
    # the example
    ("Carla Mustermann", "CarIa hat heute angerufen."),
    # held out: I for l after a small letter and between capitals and small ones, 1 for l,
    # 0 for O/o, rn for m, and both at once
    ("Paula Keller", "Gestern war Frau KeIIer hier"),
    ("Alexander Brandt", "AIexander kommt später"),
    ("Carla Mustermann", "schreib Car1a bitte zurück"),
    ("Otto Weinreich", "0tto und ich fahren morgen"),
    ("Jonas Holm", "I met J0nas at the station"),
    ("Hermann Voss", "Herrnann hat Geburtstag"),
    ("Carla Mustermann", "Musterrnann kommt um drei"),
    ("Bernd Holm", "Bemd kommt um drei"),
    ("Ilse Brandt", "lIse ruft an"),
])
def test_an_ascii_look_alike_of_a_registered_name_is_caught_on_every_path(name, text):
    index = NameIndex([name])
    masker = Masker(index)
    masked = masker.mask(text)
    assert "[PERSON_1]" in masked, (text, masked)
    assert masker.unmask(masked) == text
    assert EgressGate(index).gaps(body(text)), text
    assert Masker(index).leaks(text) == ["PERSON"], text


@pytest.mark.parametrize(("name", "text"), [
    ("Tom Becker", "I was torn between the two."),  # "torn" is a word: no rn -> m for it
    ("Carla Mustermann", "Die Kurse im iPhone-Workshop"),
    ("Al Brandt", "Wir fahren auf der A1 nach Norden."),
    ("Otto Weinreich", "Bestellung 0815 kam heute an"),
    ("Carla Mustermann", "McIntosh, CarIos und Windows 10"),
    ("Arne Holm", "Die Farne im Garten"),
])
def test_the_skeleton_leaves_other_words_alone(name, text):
    index = NameIndex([name])
    assert Masker(index).mask(text) == text
    assert EgressGate(index).gaps(body(text)) == []


# --- item 4: the tail of unregistered names -----------------------------------------------

def _people(text: str) -> list[str]:
    return [s.value for s in detect(text) if s.kind == "PERSON"]


@pytest.mark.parametrize(("text", "people"), [
    # a surname that is also a word, after a title, and again as the person
    ("Frau Rosen kam vorbei. Rosen hat mir dann Kuchen gebracht.", ["Rosen", "Rosen"]),
    ("Herr Vogel hat angerufen. Vogel meinte, er kommt später.", ["Vogel", "Vogel"]),
    ("Mr Baker phoned this morning. Baker said he would be late.", ["Baker", "Baker"]),
    # ... and again as the word: the second stays
    ("Frau Rosen kam vorbei und hat mir Rosen geschenkt.", ["Rosen"]),
    ("Herr Vogel hat angerufen, draußen sang ein Vogel.", ["Vogel"]),
    ("Herr Specht erzählt, ein Specht hämmert seit Tagen am Dach.", ["Specht"]),
    # a double-barrelled surname with the first name at a sentence's start
    ("Tobias Müller-Lüdenscheidt hat angerufen.", ["Tobias Müller-Lüdenscheidt"]),
    ("Katrin Albers-Hoffmann kommt morgen zum Essen.", ["Katrin Albers-Hoffmann"]),
    ("Heute hat Jonas Weber-Schulz geschrieben.", ["Jonas Weber-Schulz"]),
    ("Harriet Pemberton-Clarke called about the flat.", ["Harriet Pemberton-Clarke"]),
    # a lower-case name after a doorbell or an addressing phrase
    ("klingel bei weiß", ["weiß"]),
    ("bitte klingeln bei hoffmann, 3. stock", ["hoffmann"]),
    ("paket bitte z. hd. weiß abgeben", ["weiß"]),
    ("c/o schwarz, hinterhaus", ["schwarz"]),
    # ... and what stays after them
    ("klingel bei uns, die tür klemmt", []),
    ("klingel bei der nachbarin", []),
    ("ich übernachte bei freunden", []),
])
def test_unregistered_names_in_the_tail(text, people):
    assert _people(text) == people


@pytest.mark.parametrize(("registered", "text", "masked"), [
    # an interjection kept as a word when a registered name looks like it
    (["Jo Becker"], "jo passt schon", "jo passt schon"),
    (["Johanna Riedl", "Jo"], "jo, mach ich morgen", "jo, mach ich morgen"),
    (["Jo"], "na jo, klar doch", "na jo, klar doch"),
    # ... and the name
    (["Jo Becker"], "Jo kommt heute später", "[PERSON_1] kommt heute später"),
    (["Jo"], "gestern hat jo angerufen", "gestern hat [PERSON_1] angerufen"),
])
def test_an_interjection_that_looks_like_a_registered_name(registered, text, masked):
    assert Masker(NameIndex(registered)).mask(text) == masked
