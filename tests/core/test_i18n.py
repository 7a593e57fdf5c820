"""The server's texts (app/core/i18n.py, issue 10 item 10): one table, the same keys and
placeholders in every language, and one reading of a language tag that every per-language
table of the server can answer."""

from __future__ import annotations

import datetime as dt
import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.core.i18n import (
    FALLBACK_LANGUAGE,
    LANGUAGES,
    MONTHS,
    TEXTS,
    WEEKDAYS,
    language_of,
    long_date,
    texts,
)
from app.profiles.interaction import profile as interaction
from app.memory.render import LABELS
from app.pipeline.prompts import BLOCKS, TASKS


def placeholders(text: str) -> set[str]:
    return {field for _, field, _, _ in string.Formatter().parse(text) if field is not None}


def test_every_language_has_the_same_groups_keys_and_placeholders() -> None:
    assert set(TEXTS) == set(LANGUAGES)
    reference = TEXTS[FALLBACK_LANGUAGE]
    for language in LANGUAGES:
        assert TEXTS[language].keys() == reference.keys(), language
        for group, phrases in reference.items():
            assert TEXTS[language][group].keys() == phrases.keys(), (language, group)
            for key, text in phrases.items():
                other = TEXTS[language][group][key]
                assert placeholders(other) == placeholders(text), (language, group, key)


@pytest.mark.parametrize("tag,expected", [
    ("de", "de"), ("de-AT", "de"), ("de_CH", "de"), ("DE", "de"), ("en", "en"),
    ("en-GB", "en"), ("en_US", "en"), ("fr", "en"), ("fr-FR", "en"), ("", "en"),
    ("deutsch", "en"),
])
def test_a_language_tag_reads_as_one_of_the_servers_languages(tag: str, expected: str) -> None:
    assert language_of(tag) == expected


def test_every_per_language_table_answers_every_language() -> None:
    """Prompt blocks, tasks and speaker labels are no server texts, but they are looked up
    with the same `language_of`: each must have every language it can return."""
    for table in (BLOCKS, TASKS, LABELS):
        assert set(table) == set(LANGUAGES)


def test_the_interaction_defaults_have_wording_in_every_language() -> None:
    for language in LANGUAGES:
        assert tuple(texts("interaction_defaults", language)) == interaction.DEFAULT_KEYS


def test_texts_of_a_regional_tag_are_the_languages_own() -> None:
    assert texts("lists", "de-AT")["and"] == "und"
    assert texts("lists", "en_GB")["and"] == "and"
    assert texts("lists", "pt-BR") is TEXTS[FALLBACK_LANGUAGE]["lists"]


@pytest.mark.parametrize("day,language,expected", [
    (dt.date(2026, 12, 1), "de", "Dienstag, 1. Dezember 2026"),
    (dt.date(2026, 12, 1), "en", "Tuesday, December 1, 2026"),
    (dt.date(2026, 3, 1), "de-AT", "Sonntag, 1. März 2026"),
    (dt.date(2026, 3, 1), "fr", "Sunday, March 1, 2026"),  # no texts: English
])
def test_a_long_date_as_a_person_writes_it(day: dt.date, language: str, expected: str) -> None:
    assert long_date(day, language) == expected


@settings(max_examples=200, deadline=None)
@given(st.dates(min_value=dt.date(1900, 1, 1), max_value=dt.date(2200, 12, 31)))
def test_every_long_date_names_its_own_weekday_and_month(day: dt.date) -> None:
    # The C locale's English names (what strftime writes) are the reference for English;
    # German takes the same day and month at the same places.
    assert long_date(day, "en") == f"{day:%A}, {day:%B} {day.day}, {day.year}"
    weekday, rest = long_date(day, "de").split(", ")
    assert WEEKDAYS["de"].index(weekday) == day.weekday()
    number, month, year = rest.split(" ")
    assert (number, MONTHS["de"].index(month) + 1, year) == (f"{day.day}.", day.month,
                                                             str(day.year))
