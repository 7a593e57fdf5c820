"""The server's texts (app/core/i18n.py, issue 10 item 10): one table, the same keys and
placeholders in every language, and one reading of a language tag that every per-language
table of the server can answer."""

from __future__ import annotations

import string

import pytest

from app.core.i18n import FALLBACK_LANGUAGE, LANGUAGES, TEXTS, language_of, texts
from app.interaction import profile as interaction
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
