"""The compiled brief: bounds, at most six relevant traits, 1–2 exemplars, word-bound cuts."""

from __future__ import annotations

import random
import re

from app.profiles.writing.brief import (
    ELLIPSIS,
    Exemplar,
    compile_brief,
    cut_at_word,
    relevant_traits,
)
from app.profiles.writing.model import Field, Profile, Trait
from app.profiles.writing.brief import DEFAULT_BRIEF

WORDS = ("Morgenlicht Fahrrad Marktstand Sauerteigbrot Gemüsesuppe Nachbarin Spaziergang "
         "unvermittelt selbstverständlich Kaffeetasse Regenschauer Donaudampfschifffahrt "
         "a an im zu ok").split()


def prose(seed: int, words: int) -> str:
    rng = random.Random(seed)
    return " ".join(rng.choice(WORDS) for _ in range(words))


def assert_word_bound(piece: str, original: str) -> None:
    """`piece` is `original` whole, or a prefix of it ending at a word bound plus `…`."""
    flat = " ".join(original.split())
    if not piece.endswith(ELLIPSIS):
        assert piece == flat
        return
    head = piece[:-len(ELLIPSIS)]
    assert flat.startswith(head), "not a prefix"
    assert flat[len(head)] == " ", f"cut inside a word: …{head[-15:]}|{flat[len(head):][:15]}"


def test_cut_at_word_never_splits_a_word():
    for seed in range(300):
        text = prose(seed, 80)
        limit = random.Random(seed).randint(5, 400)
        piece = cut_at_word(text, limit)
        assert len(piece) <= limit
        if piece:
            assert_word_bound(piece, text)
    assert cut_at_word("Donaudampfschifffahrt", 10) == ""  # one word too long: left out
    assert cut_at_word("  a\n b  ", 10) == "a b"


def long_profile() -> Profile:
    traits = [Trait(f"t{i}", f"trait {i} " + prose(100 + i, 3), prose(200 + i, 90),
                    "core" if i % 2 else "autobiographical_journal", i == 7,
                    "manual" if i < 4 else "automatic", updated_at=float(i)) for i in range(10)]
    traits.append(Trait("other", "letters", prose(9, 40), "letters", True, "manual"))
    return Profile(core=Field(prose(1, 400), "manual"),
                   facets={"autobiographical_journal": Field(prose(2, 300), "accepted"),
                           "letters": Field(prose(3, 200), "manual")},
                   traits=traits)


def test_brief_with_long_fields_is_3000_to_4000_chars_and_cuts_only_at_word_bounds():
    profile = long_profile()
    exemplars = [Exemplar("2026-03-02", prose(11, 900)), Exemplar("2026-03-01", prose(12, 900)),
                 Exemplar("2026-02-01", prose(13, 900))]
    brief = compile_brief(profile, exemplars, base=DEFAULT_BRIEF, max_chars=4000)
    assert 3000 <= len(brief) <= 4000
    assert brief.startswith(DEFAULT_BRIEF.strip())
    core = re.search(r"^Core: (.*)$", brief, re.M).group(1)
    assert_word_bound(core, profile.core.value)
    delta = re.search(r"^In the journal: (.*)$", brief, re.M).group(1)
    assert_word_bound(delta, profile.facets["autobiographical_journal"].value)
    lines = re.findall(r"^- (trait \d+ [^:]*): (.*)$", brief, re.M)
    assert len(lines) == 6
    by_id = {t.key.split()[1]: t for t in profile.traits if t.key.startswith("trait")}
    for key, value in lines:
        trait = by_id[key.split()[1]]
        assert_word_bound(key, trait.key)
        assert_word_bound(value, trait.value)
    assert "letters" not in brief  # another facet's scope is not the journal's
    shown = re.findall(r"^\[(\d{4}-\d\d-\d\d)\] (.*)$", brief, re.M)
    assert [d for d, _ in shown] == ["2026-03-02", "2026-03-01"]  # at most two
    for (_, text), exemplar in zip(shown, exemplars):
        assert_word_bound(text, exemplar.text)
    for limit in (1200, 2500, 3000, 6000):
        assert len(compile_brief(profile, exemplars, base=DEFAULT_BRIEF,
                                 max_chars=limit)) <= limit


def test_relevant_traits_put_locked_and_the_users_own_first():
    chosen = relevant_traits(long_profile())
    assert len(chosen) == 6
    assert chosen[0].trait_id == "t7"  # locked
    assert {t.trait_id for t in chosen[1:5]} == {"t0", "t1", "t2", "t3"}  # manual
    assert all(t.scope in ("core", "autobiographical_journal") for t in chosen)


def test_a_short_profile_gives_a_short_brief_without_padding():
    profile = Profile(core=Field("Knapp.", "manual"))
    brief = compile_brief(profile, [], base=DEFAULT_BRIEF, max_chars=4000)
    assert brief.endswith("Core: Knapp.")
    assert "Traits:" not in brief
