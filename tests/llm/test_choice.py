"""The model choice (`app.llm.choice`): the seven settings the UI changes at run time, typed
as the settings are, checked by the settings table, frozen; the key never in its repr."""

from __future__ import annotations

import dataclasses
import typing

import pytest

from app.core.settings import Settings, SettingsError
from app.llm.choice import MODEL_CHOICE, ModelChoice


def test_its_fields_are_settings_of_the_same_type():
    settings_types = typing.get_type_hints(Settings)
    for name, hint in typing.get_type_hints(ModelChoice).items():
        assert hint == settings_types[name], name
    assert set(MODEL_CHOICE) == {"llm_provider", "llm_url", "llm_model", "llm_remote",
                                 "llm_api_key", "llm_task_model", "llm_task_url"}


def test_it_starts_as_the_settings_say(make_settings):
    settings = make_settings(llm_provider="ollama", llm_url="http://127.0.0.1:11434",
                             llm_model="qwen", llm_remote=True, llm_api_key="sk-1")
    assert ModelChoice.of(settings) == ModelChoice(
        llm_provider="ollama", llm_url="http://127.0.0.1:11434", llm_model="qwen",
        llm_remote=True, llm_api_key="sk-1")


def test_a_change_is_checked_by_the_settings_table_and_makes_a_new_choice(make_settings):
    choice = ModelChoice.of(make_settings())
    with pytest.raises(SettingsError, match="llm_provider.*not one of.*override"):
        choice.changed(llm_provider="gpt")
    with pytest.raises(SettingsError, match="llm_remote.*not a bool"):
        choice.changed(llm_remote="yes")
    with pytest.raises(ValueError, match="has no port"):
        choice.changed(llm_provider="openai", port=1)
    changed = choice.changed(llm_provider="openai", llm_model="m")
    assert (changed.llm_provider, changed.llm_model) == ("openai", "m")
    assert choice.llm_provider is None and choice.llm_model is None
    with pytest.raises(dataclasses.FrozenInstanceError):
        changed.llm_model = "other"  # type: ignore[misc]


def test_the_key_is_never_in_its_repr(make_settings):
    choice = ModelChoice.of(make_settings(llm_api_key="sk-4711-secret"))
    assert "4711" not in repr(choice) and "llm_remote=False" in repr(choice)


def test_a_task_model_is_checked_as_at_start(make_settings):
    # At start and in the UI alike: a task server needs the model it runs, a blank name is no
    # name, and a task URL is an http(s) URL.
    with pytest.raises(SettingsError, match="llm_task_url needs llm_task_model"):
        make_settings(llm_task_url="http://127.0.0.1:8081")
    choice = ModelChoice.of(make_settings())
    with pytest.raises(SettingsError, match="llm_task_url needs llm_task_model.*override"):
        choice.changed(llm_task_url="http://127.0.0.1:8081")
    with pytest.raises(SettingsError, match="llm_task_model must not be blank"):
        choice.changed(llm_task_model="  ")
    with pytest.raises(SettingsError, match="llm_task_url.*not an http"):
        choice.changed(llm_task_model="small", llm_task_url="ftp://127.0.0.1")
    changed = choice.changed(llm_task_model="small", llm_task_url="http://127.0.0.1:8081")
    assert (changed.llm_task_model, changed.llm_task_url) == ("small", "http://127.0.0.1:8081")
    assert ModelChoice.of(make_settings(llm_task_model="small")).llm_task_model == "small"
