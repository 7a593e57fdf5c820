"""The settings table: precedence, validation, and every error naming setting and source."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from app.core.settings import SETTINGS, SettingsError, defaults, load_settings


def write_config(data_dir: Path, text: str) -> None:
    data_dir.mkdir(parents=True, exist_ok=True)
    (data_dir / "config.toml").write_text(text)


def test_defaults_hold_the_spec_numbers(tmp_path):
    s = load_settings({"data_dir": str(tmp_path)}, env={})
    assert s.session_ttl == 14400
    assert s.session_summarize_at == 25
    assert s.session_max_turns == 20
    assert s.input_window_seconds == 30
    assert s.max_self_triggers == 3
    assert s.lock_wait_timeout == 60
    assert s.session_history_budget_chars == 8000
    assert s.max_message_chars == 20000
    assert s.turn_marker_ttl == 120
    assert s.graph_slots == 1
    assert s.model_retries == 2
    assert s.model_timeout == 120
    assert s.eigenzeit_nullpunkt_seconds == 3 * 3600
    assert s.source("session_ttl") == "default"


def test_session_outlives_the_decay_null_point():
    # Seed 000 §6: the history must never vanish before the mood has settled.
    assert defaults().session_ttl > defaults().eigenzeit_nullpunkt_seconds
    with pytest.raises(SettingsError, match="session_ttl"):
        defaults(session_ttl=3600)


def test_precedence_flag_over_env_over_config_over_default(tmp_path):
    write_config(tmp_path, "session_ttl = 20000\nmax_self_triggers = 5\ngraph_slots = 2\n")
    env = {"NOVABERG_SESSION_TTL": "30000", "NOVABERG_MAX_SELF_TRIGGERS": "4"}
    s = load_settings({"data_dir": str(tmp_path), "port": 9999}, env=env)
    assert (s.session_ttl, s.source("session_ttl")) == (30000, "env NOVABERG_SESSION_TTL")
    assert (s.max_self_triggers, s.source("max_self_triggers")) == (4, "env NOVABERG_MAX_SELF_TRIGGERS")
    assert (s.graph_slots, s.source("graph_slots")) == (2, "config.toml")
    assert (s.port, s.source("port")) == (9999, "flag")
    assert s.source("input_window_seconds") == "default"


def test_flag_beats_env(tmp_path):
    s = load_settings({"data_dir": str(tmp_path), "log_level": "debug"},
                      env={"NOVABERG_LOG_LEVEL": "error"})
    assert s.log_level == "debug"


def test_data_dir_from_env(tmp_path):
    s = load_settings({}, env={"NOVABERG_DATA_DIR": str(tmp_path / "d")})
    assert s.data_dir == str(tmp_path / "d")
    assert s.source("data_dir") == "env NOVABERG_DATA_DIR"


def test_env_types_are_parsed(tmp_path):
    env = {"NOVABERG_HEADLESS": "yes", "NOVABERG_LLM_REMOTE": "0",
           "NOVABERG_INPUT_WINDOW_SECONDS": "12.5", "NOVABERG_LLM_CONTEXT": "4096"}
    s = load_settings({"data_dir": str(tmp_path)}, env=env)
    assert s.headless is True and s.llm_remote is False
    assert s.input_window_seconds == 12.5 and s.llm_context == 4096


def test_int_in_config_is_accepted_for_float(tmp_path):
    write_config(tmp_path, "lock_wait_timeout = 5\n")
    s = load_settings({"data_dir": str(tmp_path)}, env={})
    assert s.lock_wait_timeout == 5.0 and isinstance(s.lock_wait_timeout, float)


@pytest.mark.parametrize("env, needle", [
    ({"NOVABERG_SESSION_TTL": "soon"}, "session_ttl.*not a int.*env NOVABERG_SESSION_TTL"),
    ({"NOVABERG_HEADLESS": "maybe"}, "headless.*not a bool.*env NOVABERG_HEADLESS"),
    ({"NOVABERG_PORT": "70000"}, "port.*above 65535.*env NOVABERG_PORT"),
    ({"NOVABERG_GRAPH_SLOTS": "0"}, "graph_slots.*below 1.*env NOVABERG_GRAPH_SLOTS"),
    ({"NOVABERG_LLM_PROVIDER": "gpt"}, "llm_provider.*not one of.*env NOVABERG_LLM_PROVIDER"),
    ({"NOVABERG_REDIS_APPENDFSYNC": "sometimes"}, "redis_appendfsync.*not one of"),
])
def test_bad_env_values_name_setting_and_source(tmp_path, env, needle):
    with pytest.raises(SettingsError, match=needle):
        load_settings({"data_dir": str(tmp_path)}, env=env)


@pytest.mark.parametrize("text, needle", [
    ("session_ttl = \"long\"\n", "session_ttl.*not a int.*config.toml"),
    ("headless = 1\n", "headless.*not a bool.*config.toml"),
    ("max_self_triggers = true\n", "max_self_triggers.*not a int"),
    ("no_such_setting = 1\n", "unknown setting 'no_such_setting'.*config.toml"),
    ("session_ttl = = 3\n", "not valid TOML"),
    ("llm_api_key = \"sk-123\"\n", "llm_api_key.*secret.*NOVABERG_LLM_API_KEY"),
    ("data_dir = \"/tmp/x\"\n", "data_dir.*cannot be set"),
    ("session_ttl = 100\n", "session_ttl.*must stay above eigenzeit_nullpunkt_seconds"),
])
def test_bad_config_values_name_setting_and_source(tmp_path, text, needle):
    write_config(tmp_path, text)
    with pytest.raises(SettingsError, match=needle):
        load_settings({"data_dir": str(tmp_path)}, env={})


def test_unknown_flag_setting_is_refused(tmp_path):
    with pytest.raises(SettingsError, match="unknown setting"):
        load_settings({"data_dir": str(tmp_path), "colour": "blue"}, env={})


def test_secrets_file_must_be_private(tmp_path):
    secrets = tmp_path / "secrets.toml"
    secrets.write_text('llm_api_key = "sk-secret"\n')
    os.chmod(secrets, 0o644)
    with pytest.raises(SettingsError, match="readable by others.*chmod 600"):
        load_settings({"data_dir": str(tmp_path)}, env={})
    os.chmod(secrets, 0o600)
    s = load_settings({"data_dir": str(tmp_path)}, env={})
    assert s.llm_api_key == "sk-secret" and s.source("llm_api_key") == "secrets.toml"
    assert s.public()["llm_api_key"] == "set"
    assert "sk-secret" not in repr(s.public())


def test_secrets_file_holds_only_secrets(tmp_path):
    secrets = tmp_path / "secrets.toml"
    secrets.write_text("graph_slots = 2\n")
    os.chmod(secrets, 0o600)
    with pytest.raises(SettingsError, match="not a secret setting"):
        load_settings({"data_dir": str(tmp_path)}, env={})


def test_settings_are_read_only():
    s = defaults()
    with pytest.raises(AttributeError):
        s.session_ttl = 1  # type: ignore[misc]
    assert s.replace(graph_slots=3).graph_slots == 3 and s.graph_slots == 1


def test_every_setting_has_help_and_a_valid_default():
    for setting in SETTINGS:
        assert setting.help.strip(), setting.name
        assert setting.default is not None or setting.nullable, setting.name
