"""Where characters live (app/characters/book.py, store.py): built in, shared in the data
dir, and each user's own — seen by that user only, written whole, read back the same."""

from __future__ import annotations

import json
import logging
import threading
import tomllib

import pytest

from app.characters.book import CharacterBook, CharacterError, parse_character
from app.characters.store import CharacterExists, CharacterStore, NotOwn
from app.core.settings import defaults

LUNA = {"id": "luna", "name": "Luna", "language": "en", "persona": "You are Luna."}


def book_in(data_dir) -> CharacterBook:
    return CharacterBook(defaults(data_dir=str(data_dir)))


def test_own_characters_are_seen_by_their_user_only(data_dir):
    book = book_in(data_dir)
    store = CharacterStore(book)
    store.create("anna", LUNA)
    assert [d.id for d in book.all("anna")] == ["nova", "luna"]
    assert [d.id for d in book.all("bert")] == ["nova"]
    assert book.get("bert", "luna") is None
    luna = book.get("anna", "luna")
    assert (luna.kind, luna.owner) == ("own", "anna")


def test_an_own_version_of_nova_replaces_it_for_that_user_only_and_goes_again(data_dir):
    book = book_in(data_dir)
    store = CharacterStore(book)
    nova = book.get("anna", "nova")
    changed = store.save("anna", {**nova.toml_data(), "persona": "Du bist Nova, knapp."})
    assert changed.kind == "own" and book.get("anna", "nova").persona == "Du bist Nova, knapp."
    assert book.get("bert", "nova").persona == nova.persona
    assert [d.id for d in book.all("anna")] == ["nova"]  # in its place, not twice
    back = store.delete("anna", "nova")
    assert back is not None and back.kind == "built_in" and back.persona == nova.persona
    with pytest.raises(NotOwn):
        store.delete("anna", "nova")


def test_a_new_id_is_never_overwritten_even_by_two_at_once(data_dir):
    store = CharacterStore(book_in(data_dir))
    results: list[object] = []

    def make(name: str) -> None:
        try:
            results.append(store.create("anna", {**LUNA, "name": name}).name)
        except CharacterExists as exc:
            results.append(exc)

    threads = [threading.Thread(target=make, args=(f"Luna {i}",)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    made = [r for r in results if isinstance(r, str)]
    assert len(made) == 1 and sum(isinstance(r, CharacterExists) for r in results) == 3
    assert book_in(data_dir).get("anna", "luna").name == made[0]


def test_what_the_store_writes_is_the_checked_definition_as_toml(data_dir):
    store = CharacterStore(book_in(data_dir))
    store.create("anna", {**LUNA, "name": "  Luna  ", "greeting": " Hi! \n",
                          "baseline": {"emotion": "ruhe", "arousal": 0.25}},
                 card={"tags": ["moon"], "extensions": {"x": None}})
    folder = data_dir / "characters" / "users" / "anna"
    data = tomllib.loads((folder / "luna.toml").read_text(encoding="utf-8"))
    assert data == {"id": "luna", "name": "Luna", "language": "en", "persona": "You are Luna.",
                    "greeting": "Hi!", "card": "luna.card.json",
                    "baseline": {"emotion": "ruhe", "arousal": 0.25, "mode": "alltag"}}
    assert json.loads((folder / "luna.card.json").read_text()) == {"tags": ["moon"],
                                                                   "extensions": {"x": None}}
    assert not [p for p in folder.iterdir() if p.name.endswith(".tmp")]


def test_a_shared_definition_may_have_a_picture_and_a_card_file(data_dir, caplog):
    folder = data_dir / "characters"
    folder.mkdir()
    (folder / "mira.toml").write_text('id = "mira"\nname = "Mira"\nlanguage = "en"\n'
                                      'persona = "You are Mira."\npicture = "mira.png"\n'
                                      'card = "mira.json"\n', encoding="utf-8")
    (folder / "mira.json").write_text(json.dumps({"nickname": "Mi", "character_book": {
        "entries": [{"keys": ["star"], "content": "Mira names stars.", "enabled": True,
                     "insertion_order": 1, "extensions": {}}]}}), encoding="utf-8")
    caplog.set_level(logging.ERROR, logger="app.characters.book")
    mira = book_in(data_dir).get("anyone", "mira")
    assert mira.kind == "shared" and mira.call_name == "Mi" and len(mira.lore.entries) == 1
    # The picture is missing: the character is shown without one, with an error line.
    assert mira.picture is None
    assert [r.getMessage() for r in caplog.records] == ["character picture missing; shown "
                                                        "without one"]


@pytest.mark.parametrize("card, problem", [
    ("[1, 2]", "is not a JSON object"),
    ("{not json", "cannot be read"),
    ('{"character_book": {"entries": [{"keys": 1}]}}', "keys must be a list"),
    ('{"nickname": 5}', "nickname must be a string"),
    (None, "is missing"),
])
def test_a_broken_card_file_leaves_its_character_out_naming_the_problem(data_dir, caplog, card,
                                                                         problem):
    folder = data_dir / "characters"
    folder.mkdir()
    (folder / "mira.toml").write_text('id = "mira"\nname = "Mira"\nlanguage = "en"\n'
                                      'persona = "p"\ncard = "mira.json"\n', encoding="utf-8")
    if card is not None:
        (folder / "mira.json").write_text(card, encoding="utf-8")
    caplog.set_level(logging.ERROR, logger="app.characters.book")
    assert book_in(data_dir).get("local", "mira") is None
    [record] = caplog.records
    assert problem in record.fields["problem"]


@pytest.mark.parametrize("text, problem", [
    ('id = "a"\nname = "A"\nlanguage = "de"\n[persona]\nmood = "x"\n', "unknown key"),
    ('id = "a"\nname = "A"\nlanguage = "de"\n[persona]\ndescription = ""\n', "every part is empty"),
    ('id = "a"\nname = "A"\nlanguage = "de"\npersona = "p"\nalternate_greetings = "x"\n',
     "alternate_greetings must be a list"),
    ('id = "a"\nname = "A"\nlanguage = "de"\npersona = "p"\npicture = "../x.png"\n', "picture"),
    ('id = "a"\nname = "A"\nlanguage = "de"\npersona = "p"\npicture = "x.exe"\n', "picture"),
])
def test_the_new_keys_follow_the_same_rules(text, problem):
    with pytest.raises(CharacterError, match=problem):
        parse_character(text, "test")


def test_a_persona_made_of_a_cards_parts_is_composed_in_the_characters_language():
    text = ('id = "a"\nname = "A"\nlanguage = "de"\n[persona]\nsystem_prompt = "Sys."\n'
            'description = "Desc."\npersonality = "kind"\nscenario = "at sea"\n')
    assert parse_character(text, "t").persona == \
        "Sys.\n\nDesc.\n\nPersönlichkeit: kind\n\nSituation: at sea"
    english = parse_character(text.replace('"de"', '"en"'), "t")
    assert english.persona.endswith("Personality: kind\n\nScenario: at sea")
    only = parse_character('id = "a"\nname = "A"\nlanguage = "de"\n[persona]\n'
                           'description = "Just me."\n', "t")
    assert (only.persona, only.persona_parts) == ("Just me.", None)
