"""The one derivation of a facet's or trait's stable key from its free-text name
(`app.profiles.governance.derive_key`): always a valid key, deterministic, idempotent on keys,
umlauts spelled out, separators folded, collisions suffixed, names without a letter or digit
refused."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.profiles.governance import (
    MAX_KEY_CHARS,
    NAME,
    InvalidName,
    base_key,
    clean_label,
    derive_key,
)

# Names as people write them: letters of several scripts, umlauts, digits, spaces, hyphens,
# dashes, punctuation.
NAMES = st.text(alphabet=st.sampled_from(
    list("abcxyzABCXYZäöüÄÖÜßéèçñøæœ0129 -–_.,!?/'") + ["日", "記", "Д", "н", "ё"]),
    min_size=1, max_size=90).filter(lambda s: any(c.isalnum() for c in s)
                                    and len(" ".join(s.split())) <= 80)


class TestDeriveKey:
    @pytest.mark.parametrize(("name", "key"), [
        ("Tagebuch", "tagebuch"),
        ("autobiographical_journal", "autobiographical_journal"),
        ("Sätze – kurz", "saetze_kurz"),
        ("Größe", "groesse"),
        ("  Über   Mich ", "ueber_mich"),
        ("Tage-buch", "tage_buch"),
        ("Éducation sentimentale", "education_sentimentale"),
        ("3 Dinge am Tag", "k_3_dinge_am_tag"),
        ("MÄNNER", "maenner"),
    ])
    def test_names_as_written_become_these_keys(self, name, key):
        assert derive_key(name) == key

    @given(NAMES)
    def test_every_name_gets_a_valid_key(self, name):
        key = derive_key(name)
        assert NAME.fullmatch(key), key
        assert len(key) <= MAX_KEY_CHARS

    @given(NAMES)
    def test_the_key_is_stable_and_a_key_is_its_own_key(self, name):
        key = derive_key(name)
        assert derive_key(name) == key == base_key(f"  {name} ")
        assert derive_key(key) == key

    @given(NAMES, st.sets(st.from_regex(NAME, fullmatch=True), max_size=8))
    def test_a_taken_key_gets_the_first_free_suffix(self, name, taken):
        key = derive_key(name, taken)
        assert key not in taken and NAME.fullmatch(key)
        base = base_key(name)
        if base not in taken:
            assert key == base
        else:
            assert key.rsplit("_", 1)[1].isdigit()

    @given(NAMES, NAMES)
    def test_names_that_fold_to_one_key_get_two_keys_when_added_in_turn(self, first, second):
        one = derive_key(first)
        two = derive_key(second, {one})
        assert one != two

    def test_umlauts_are_spelled_out_not_dropped(self):
        assert derive_key("Männer") != derive_key("Manner")
        assert derive_key("Männer") == derive_key("Maenner")

    def test_a_name_without_latin_letters_gets_a_stable_hashed_key(self):
        assert derive_key("日記") == derive_key("日記") != derive_key("日本")
        assert derive_key("日記").startswith("k_")

    @pytest.mark.parametrize("name", ["", "   ", "---", "?!", "–", "x" * 81])
    def test_a_name_with_no_letter_or_digit_or_too_long_is_refused(self, name):
        with pytest.raises(InvalidName):
            derive_key(name)
        with pytest.raises(InvalidName):
            clean_label(name)
