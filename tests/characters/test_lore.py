"""The lorebook's selection (app/characters/lore.py): which entries a conversation triggers,
and the budget that keeps whole entries only."""

from __future__ import annotations

import logging
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.characters.lore import (
    DEFAULT_SCAN_DEPTH,
    ENTRY_SEPARATOR,
    MAX_ENTRIES,
    MAX_KEYS,
    MAX_KEYS_PER_ENTRY,
    LoreError,
    book_budget,
    read_book,
    split_decorators,
    triggered,
    within_budget,
)


def book(*entries: dict[str, Any], **options: Any):
    return read_book({"entries": [{"content": f"entry {i}", **e} for i, e in enumerate(entries)],
                      "extensions": {}, **options})


def chosen(lorebook, *texts: str, turns: int = 0) -> list[str]:
    return [e.content for e in triggered(lorebook, list(texts), character_turns=turns)]


def test_a_key_triggers_at_word_bounds_case_insensitively_unless_asked():
    lore = book({"keys": ["cat"], "content": "about cats"},
                {"keys": ["Dr."], "content": "about the doctor"},
                {"keys": ["Bonn"], "content": "exact", "case_sensitive": True})
    assert chosen(lore, "My CAT sleeps") == ["about cats"]
    assert chosen(lore, "a category of things") == []
    assert chosen(lore, "Ask Dr. Weiss") == ["about the doctor"]
    assert chosen(lore, "bonn is small") == []
    assert chosen(lore, "Bonn is small") == ["exact"]


def test_constant_disabled_selective_and_scan_depth():
    lore = book({"constant": True, "content": "always"},
                {"keys": ["harbour"], "secondary_keys": ["storm"], "selective": True,
                 "content": "storm in the harbour"},
                {"keys": ["harbour"], "secondary_keys": ["storm"], "selective": False,
                 "content": "any harbour"},
                {"keys": ["harbour"], "enabled": False, "content": "never"},
                {"keys": ["old"], "content": "only recent"}, scan_depth=2)
    assert chosen(lore, "the harbour") == ["always", "any harbour"]
    assert chosen(lore, "the harbour in a storm") == ["always", "storm in the harbour",
                                                      "any harbour"]
    # "old" is three texts back: beyond the book's scan depth of 2.
    assert chosen(lore, "old", "b", "c") == ["always"]
    assert chosen(lore, "a", "old", "c") == ["always", "only recent"]


def test_the_default_scan_depth_counts_the_newest_texts():
    lore = book({"keys": ["x"], "content": "x"})
    texts = ["x"] + ["-"] * (DEFAULT_SCAN_DEPTH - 1)
    assert chosen(lore, *texts) == ["x"]
    assert chosen(lore, *(["x"] + ["-"] * DEFAULT_SCAN_DEPTH)) == []


def test_decorators_and_their_fallbacks():
    lore = book(
        {"keys": ["house"], "content": "@@activate_only_after 2\n@@depth 4\n\nthe house"},
        {"keys": ["ship"], "content": "@@activate_only_every 3\nevery third"},
        {"keys": ["tea"], "content": "@@dont_activate\nnever"},
        {"keys": [], "content": "@@activate\nforced"},
        {"keys": ["gnome"], "content": "@@unknown_thing 1\n@@@additional_keys boat,man\ngnome"},
        {"keys": ["wind"], "content": "@@exclude_keys calm\nwindy"},
        {"keys": ["far"], "content": "@@scan_depth 1\nnear only"},
    )
    assert chosen(lore, "the house", turns=1) == ["forced"]
    assert chosen(lore, "the house", turns=2) == ["the house", "forced"]
    assert chosen(lore, "a ship", turns=4) == ["forced"]
    assert chosen(lore, "a ship", turns=6) == ["every third", "forced"]
    assert chosen(lore, "tea") == ["forced"]
    # The unknown decorator's fallback is used: "gnome" alone is not enough.
    assert chosen(lore, "a gnome") == ["forced"]
    assert chosen(lore, "a gnome on the boat") == ["forced", "gnome"]
    assert chosen(lore, "wind and calm") == ["forced"]
    assert chosen(lore, "wind") == ["forced", "windy"]
    assert chosen(lore, "far", "now") == ["forced"]
    assert chosen(lore, "far away") == ["forced", "near only"]


def test_decorator_lines_never_reach_the_content():
    text, found = split_decorators("@@depth 4\n@@@instruct_depth 4\n@@scan_depth 2\n\nBody\n@@not")
    assert text == "Body\n@@not"
    assert found == {"scan_depth": "2"}  # depth/instruct_depth are not used here
    assert split_decorators("@@scan_depth 1\n@@scan_depth 5\nx")[1] == {"scan_depth": "1"}


def test_regex_entries_are_kept_but_never_trigger_and_recursion_is_bounded():
    lore = book({"keys": ["/we(a)ther/i"], "use_regex": True, "constant": True,
                 "content": "regex"},
                {"keys": ["Margarethe"], "content": "the ship sank; the raft"},
                {"keys": ["raft"], "content": "songs on the raft"}, recursive_scanning=True)
    assert len(lore.entries) == 3 and lore.entries[0].use_regex
    assert chosen(lore, "the weather") == []
    assert chosen(lore, "tell me about Margarethe") == ["the ship sank; the raft",
                                                         "songs on the raft"]
    flat = book({"keys": ["Margarethe"], "content": "the raft"},
                {"keys": ["raft"], "content": "songs"})
    assert chosen(flat, "Margarethe") == ["the raft"]  # no recursion unless the book asks


@pytest.mark.parametrize("raw, problem", [
    ([], "must be an object"),
    ({"entries": {}}, "entries must be a list"),
    ({"entries": [3]}, "entry 1 must be an object"),
    ({"entries": [{"keys": 5, "content": "x"}]}, "keys must be a list"),
    ({"entries": [{"content": 1}]}, "content must be a string"),
    ({"entries": [{"content": "x", "enabled": "yes"}]}, "enabled must be true or false"),
    ({"entries": [{"content": "x", "priority": "high"}]}, "priority must be a number"),
    ({"entries": [], "token_budget": -1}, "token_budget"),
])
def test_a_broken_lorebook_names_the_place(raw, problem):
    with pytest.raises(LoreError, match=problem):
        read_book(raw)


def test_keys_as_a_comma_separated_string_are_read():
    lore = read_book({"entries": [{"keys": "fox, hound", "content": "x"}]})
    assert lore.entries[0].keys == ("fox", "hound")


def test_the_budget_keeps_whole_entries_by_priority_in_insertion_order(caplog):
    lore = book({"content": "a" * 50, "insertion_order": 1, "priority": 1, "name": "low"},
                {"content": "b" * 50, "insertion_order": 2, "priority": 9, "name": "high"},
                {"content": "c" * 10, "insertion_order": 3, "priority": 0, "name": "small"})
    caplog.set_level(logging.WARNING, logger="app.characters.lore")
    kept = within_budget(lore.entries, 70, character_id="lena")
    assert [e.content[0] for e in kept] == ["b", "c"]  # "a" does not fit after "b"; "c" does
    [record] = caplog.records
    assert record.fields["left_out"] == ["low"] and record.fields["setting"] == "lore_budget_chars"
    assert within_budget(lore.entries, 0) == []


def test_the_book_token_budget_narrows_the_setting():
    assert book_budget(read_book({"entries": [], "token_budget": 100}), 2000, 2.0) == 200
    assert book_budget(read_book({"entries": []}), 2000, 2.0) == 2000
    assert book_budget(read_book({"entries": [], "token_budget": 5000}), 2000, 2.0) == 2000


entries = st.lists(st.fixed_dictionaries({
    "content": st.text(min_size=1, max_size=80),
    "insertion_order": st.integers(-5, 5),
    "priority": st.one_of(st.none(), st.integers(0, 9)),
}), max_size=12)


@given(raw=entries, budget=st.integers(0, 400))
def test_the_budget_never_overflows_and_never_cuts_an_entry(raw, budget):
    lore = read_book({"entries": raw})
    usable = [e for e in lore.entries if e.content]
    kept = within_budget(usable, budget)
    assert sum(len(e.content) + len(ENTRY_SEPARATOR) for e in kept) <= budget
    assert {id(e) for e in kept} <= {id(e) for e in usable}  # whole entries, as they were
    assert [(e.insertion_order, e.index) for e in kept] == sorted(
        (e.insertion_order, e.index) for e in kept)
    # Nothing that would still fit was left out.
    room = budget - sum(len(e.content) + len(ENTRY_SEPARATOR) for e in kept)
    left = [e for e in usable if e not in kept]
    assert all(len(e.content) + len(ENTRY_SEPARATOR) > room for e in left)


# --- matching keys: the same as a pattern at word bounds, without compiling one per key -----

def reference(key: str, text: str) -> bool:
    """A key at word bounds as a regular expression says it (what the scan must agree with)."""
    pattern = re.escape(key)
    if re.match(r"\w", key):
        pattern = r"(?<!\w)" + pattern
    if re.search(r"\w$", key):
        pattern += r"(?!\w)"
    return re.search(pattern, text) is not None


alphabet = st.sampled_from(list("abAB _-.'ßéİ1\n") + ["\u00a0", "\u0301", "٣"])
key_text = st.text(alphabet, min_size=1, max_size=6).map(str.strip).filter(bool)


@settings(max_examples=300, deadline=None)
@given(key=key_text, texts=st.lists(st.text(alphabet, max_size=30), min_size=1, max_size=4),
       case_sensitive=st.booleans())
def test_a_key_is_found_exactly_where_the_word_bound_pattern_finds_it(key, texts,
                                                                     case_sensitive):
    lore = book({"keys": [key], "content": "hit", "case_sensitive": case_sensitive})
    joined = "\n".join(texts)
    expected = reference(key, joined) if case_sensitive else \
        reference(key.lower(), joined.lower())
    assert (chosen(lore, *texts) == ["hit"]) == expected


def test_a_book_of_more_entries_than_the_bound_is_refused():
    entries = [{"keys": [f"k{i}"], "content": "x"} for i in range(MAX_ENTRIES + 1)]
    with pytest.raises(LoreError, match=f"has {MAX_ENTRIES + 1} entries; at most {MAX_ENTRIES}"):
        book(*entries)
    assert len(book(*entries[:MAX_ENTRIES]).entries) == MAX_ENTRIES


@settings(max_examples=200, deadline=None)
@given(keys=st.lists(st.lists(key_text, min_size=1, max_size=4), min_size=1, max_size=6),
       texts=st.lists(st.text(alphabet, max_size=30), min_size=1, max_size=4),
       case_sensitive=st.lists(st.booleans(), min_size=6, max_size=6))
def test_one_pass_over_the_text_finds_exactly_the_entries_the_word_bound_rule_finds(
        keys, texts, case_sensitive):
    lore = book(*({"keys": k, "content": f"hit {i}", "case_sensitive": case_sensitive[i]}
                  for i, k in enumerate(keys)))
    joined = "\n".join(texts)
    expected = [f"hit {i}" for i, k in enumerate(keys)
                if any(reference(key, joined) if case_sensitive[i]
                       else reference(key.lower(), joined.lower()) for key in k)]
    assert chosen(lore, *texts) == expected


def test_an_entry_of_more_keys_than_the_bound_is_refused_and_the_refusal_logged(caplog):
    keys = ["a b"] * (MAX_KEYS_PER_ENTRY + 1)
    with caplog.at_level(logging.WARNING, logger="app.characters.lore"), pytest.raises(
            LoreError, match=f"entry 1: {MAX_KEYS_PER_ENTRY + 1} keys; at most "
                             f"{MAX_KEYS_PER_ENTRY} are taken"):
        book({"keys": keys[:1], "secondary_keys": keys})
    [record] = [r for r in caplog.records if r.getMessage() == "lorebook refused: over a limit"]
    assert record.fields["limit"] == "MAX_KEYS_PER_ENTRY"
    assert len(book({"keys": keys[:MAX_KEYS_PER_ENTRY]}).entries[0].keys) == MAX_KEYS_PER_ENTRY


def test_a_book_of_more_keys_in_all_than_the_bound_is_refused():
    per = MAX_KEYS_PER_ENTRY
    count = MAX_KEYS // per + 1
    entries = [{"keys": [f"k{i} {j}" for j in range(per)]} for i in range(count)]
    with pytest.raises(LoreError, match=f"has {count * per} keys; at most {MAX_KEYS} are taken"):
        book(*entries)
    assert len(book(*entries[:MAX_KEYS // per]).entries) == MAX_KEYS // per


def test_the_key_index_is_built_at_the_first_scan_not_when_the_card_is_read():
    """Reading a card (on the loop, for the first message after it changed) does not build
    the automatons: a big book's build is the larger part of its cost; the first scan,
    which runs in a worker thread for a big book, builds them once."""
    lorebook = book({"keys": ["Hafen"], "content": "Der Hafen."})
    assert lorebook._keys is None
    assert chosen(lorebook, "Wir gehen zum Hafen.") == ["Der Hafen."]
    index = lorebook._keys
    assert index is not None
    assert chosen(lorebook, "Am Hafen.") == ["Der Hafen."] and lorebook._keys is index
