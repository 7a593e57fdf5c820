"""Every tunable number and switch of Novaberg, in one table.

Each `Setting` has a name, a type, a default and a help line. A value is taken from, in
order of precedence: a command-line flag, the environment (`NOVABERG_<NAME>`), `config.toml`
in the data dir, the default. Secrets (API keys) are read from the environment or from a
`secrets.toml` in the data dir that only its owner can read (mode 0600), never from
`config.toml`.

A bad value stops start-up with a `SettingsError` that names the setting and where the value
came from; the CLI turns it into exit code 2. `tests/test_docs.py` holds README.md to this
table: every setting is documented there.

Why one module of over 400 lines: it is a data table. About 200 lines are the `SETTINGS`
rows (one place per constant, GUIDE.md); the rest reads and checks them. New settings add
rows here, so the table and its reader stay together rather than being split by size.
"""

from __future__ import annotations

import os
import stat
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import platformdirs

from app.core.clock import UnknownZone, zone_named

ENV_PREFIX = "NOVABERG_"
CONFIG_FILE = "config.toml"
SECRETS_FILE = "secrets.toml"
APP_NAME = "novaberg"


@dataclass(frozen=True, slots=True)
class Setting:
    name: str
    type: type
    default: Any
    help: str
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[str, ...] | None = None
    nullable: bool = False
    secret: bool = False
    in_config: bool = True

    @property
    def env(self) -> str:
        return ENV_PREFIX + self.name.upper()


HOUR = 3600
DAY = 24 * HOUR

SETTINGS: tuple[Setting, ...] = (
    # --- process, storage, network ---------------------------------------------------------
    Setting("headless", bool, False, "Run as a server: no browser, logs to stdout, named users."),
    Setting("host", str, "127.0.0.1", "Address to bind. Desktop mode always binds 127.0.0.1."),
    Setting("port", int, 8765, "Port to bind. An explicit port is binding; only the default "
            "falls back to a free port in desktop mode.", minimum=0, maximum=65535),
    Setting("data_dir", str, None, "Where Redis, SQLite, users, prompts and config live "
            "(default: the platform's user data dir).", nullable=True, in_config=False),
    Setting("redis_url", str, None, "Use an external Redis/Valkey (redis://…) instead of the "
            "embedded one.", nullable=True),
    Setting("redis_appendfsync", str, "always", "AOF fsync policy of the embedded Redis.",
            choices=("always", "everysec", "no")),
    Setting("redis_max_connections", int, 64, "Redis connections the app opens at most; "
            "more concurrent commands wait for a free one.", minimum=4),
    Setting("token", str, None, "Fixed API token of the user `local` (default: a new one per "
            "start in desktop mode).", nullable=True, secret=True),
    Setting("no_browser", bool, False, "Do not open a browser tab in desktop mode."),
    Setting("log_level", str, "info", "Log level.", choices=("debug", "info", "warning", "error")),
    Setting("public_origin", str, None, "An extra Origin (scheme://host[:port]) accepted on "
            "state-changing requests, e.g. behind a reverse proxy.", nullable=True),
    Setting("timezone", str, None, "The user's IANA time zone (e.g. Europe/Berlin) for calendar "
            "days and local times; unset = the machine's zone.", nullable=True),
    Setting("rate_limit_per_second", float, 10.0, "Messages one user may send per second "
            "(burst of twice that); beyond it: 429.", minimum=0.1),
    # --- model gateway (SPEC §7) ------------------------------------------------------------
    Setting("llm_provider", str, None, "Model provider; unset = auto-detect Ollama/llama.cpp on "
            "localhost, else offline.", nullable=True, choices=("offline", "ollama", "openai")),
    Setting("llm_url", str, None, "Base URL of the model server.", nullable=True),
    Setting("llm_model", str, None, "Model name at the provider.", nullable=True),
    Setting("llm_api_key", str, None, "API key for the model server (env or secrets.toml only).",
            nullable=True, secret=True),
    Setting("llm_remote", bool, False, "The provider is remote: the privacy gateway masks "
            "identities in every prompt."),
    Setting("llm_context", int, None, "Context window in tokens where the server does not say.",
            nullable=True, minimum=256),
    Setting("model_timeout", float, 120.0, "Seconds before a model call fails.", minimum=0.1),
    Setting("model_retries", int, 2, "Retries after a connection error, 5xx or 429.",
            minimum=0, maximum=10),
    Setting("model_concurrency", int, 1, "Parallel requests per provider.", minimum=1),
    Setting("model_metadata_ttl", int, HOUR, "Seconds a provider's context window is cached.",
            minimum=0),
    Setting("chars_per_token", float, 2.0, "Budget estimate: characters per token.", minimum=0.5),
    Setting("budget_safety_margin", float, 0.15, "Budget: share of the window kept free.",
            minimum=0.0, maximum=0.9),
    Setting("model_backoff_seconds", float, 0.5, "First retry delay; doubles per retry, plus "
            "up to half of it as jitter; a longer Retry-After wins.", minimum=0.0),
    Setting("model_retry_max_seconds", float, 10.0, "A model call stops retrying when the next "
            "retry would start later than this after its first attempt.", minimum=0.0),
    Setting("llm_offline_context", int, 32768, "Context window of the built-in offline "
            "provider, in tokens.", minimum=256),
    Setting("llm_ollama_default_context", int, 8192, "Window asked of Ollama (num_ctx) when "
            "neither the model's Modelfile nor llm_context sets one.", minimum=256),
    Setting("journal_min_context", int, 32768, "Smallest context window journal generation "
            "runs with (model_context_too_small below it).", minimum=256),
    Setting("llm_probe_ollama_url", str, "http://127.0.0.1:11434", "Where auto-detection "
            "looks for Ollama."),
    Setting("llm_probe_openai_url", str, "http://127.0.0.1:8080", "Where auto-detection looks "
            "for an OpenAI-style server (llama.cpp)."),
    Setting("llm_probe_timeout", float, 0.3, "Seconds auto-detection waits for local model "
            "servers (in the background; start-up never waits).", minimum=0.01),
    Setting("llm_trace_size", int, 200, "Model call records kept in memory for the admin "
            "trace.", minimum=1),
    Setting("privacy_identities", str, None, "Deprecated: names, comma-separated, imported "
            "once at start-up (with identities.txt in the data dir) into the privacy registry; "
            "edit people in the settings.", nullable=True),
    Setting("privacy_detect_url", str, None, "A LOCAL OpenAI-compatible model server the "
            "privacy gateway asks for further names before a remote call (the detect role); "
            "off when unset; refused unless on this machine or the local network.",
            nullable=True),
    Setting("privacy_detect_model", str, None, "The model of privacy_detect_url (unset: the "
            "server's first).", nullable=True),
    # --- session memory (SPEC §3, seed 000) ---------------------------------------------------
    Setting("session_ttl", int, 4 * HOUR, "Seconds of quiet after which a session expires; "
            "must stay above eigenzeit_nullpunkt_seconds.", minimum=60),
    Setting("session_summarize_at", int, 25, "Summarize when the session holds more turns.",
            minimum=2),
    Setting("session_summarize_batch", int, 10, "Oldest turns folded into the summary at once.",
            minimum=1),
    Setting("session_max_turns", int, 20, "Turns kept when summarizing fails.", minimum=1),
    Setting("session_history_budget_chars", int, 8000, "Rendered history budget in characters; "
            "whole oldest groups are dropped, nothing is cut.", minimum=100),
    Setting("session_summary_max_tokens", int, 600, "Output tokens reserved for the session "
            "summary.", minimum=16),
    Setting("session_window_exchanges", int, 10, "Exchanges (groups with a user utterance) "
            "shown to the model.", minimum=1),
    # --- character state (SPEC §4) ------------------------------------------------------------
    Setting("eigenzeit_nullpunkt_seconds", int, 3 * HOUR, "Seconds of quiet after which the "
            "character's state has relaxed to its baseline.", minimum=1),
    Setting("empathy_alpha", float, 0.3, "How far a user event moves the character's state "
            "toward the user's.", minimum=0.0, maximum=1.0),
    # --- turn runtime (SPEC §5, seed 001) -----------------------------------------------------
    Setting("max_message_chars", int, 20000, "Longest accepted message, after trimming.",
            minimum=1),
    Setting("input_window_seconds", float, 30.0, "Messages closer than this to their predecessor "
            "form one block.", minimum=0.0),
    Setting("turn_marker_ttl", int, 120, "Emergency-brake TTL of the turn marker, seconds.",
            minimum=5),
    Setting("turn_marker_refresh_seconds", float, 30.0, "How often a running turn refreshes its "
            "marker.", minimum=1.0),
    Setting("heartbeat_seconds", float, 10.0, "How often a process refreshes its heartbeat key.",
            minimum=1.0),
    Setting("max_self_triggers", int, 3, "Follow-ups the character may ask for in a row.",
            minimum=0),
    Setting("graph_slots", int, 1, "Pipeline runs at a time per process (one GPU).", minimum=1),
    Setting("lock_wait_timeout", float, 60.0, "Seconds a turn waits for a run slot before it "
            "fails with a notice.", minimum=0.1),
    Setting("max_turn_attempts", int, 2, "Runs of a turn in all, crash recoveries included.",
            minimum=1),
    Setting("record_ttl", int, 7 * DAY, "Seconds turn and message records are kept.",
            minimum=60),
    Setting("ws_send_queue", int, 256, "Messages buffered per WebSocket before a slow client "
            "is dropped.", minimum=1),
    Setting("ws_heartbeat_seconds", float, 20.0, "WebSocket ping interval.", minimum=1.0),
    Setting("idle_reflection_minutes", int, 0, "Minutes of quiet before the character reflects "
            "on its own (0 = off).", minimum=0),
    # --- pipelines, agents, impulses (SPEC §6, seed 001 §2) -----------------------------------
    Setting("responder_max_tokens", int, 600, "Output tokens reserved for one answer of the "
            "character.", minimum=16),
    Setting("planner_max_steps", int, 4, "Agent steps the planner runs in one turn; further "
            "steps are dropped with a warning.", minimum=1),
    Setting("salience_memory_threshold", float, 0.5, "Importance from which salient segments "
            "become short-term memory entries.", minimum=0.0, maximum=1.0),
    Setting("short_term_memory_ttl", int, 7 * DAY, "Seconds a short-term memory entry is kept.",
            minimum=60),
    Setting("short_term_memory_max_entries", int, 200, "Short-term memory entries kept per "
            "pair; the oldest go first.", minimum=1),
    Setting("short_term_memory_recent", int, 8, "Newest short-term memory entries shown to the "
            "model.", minimum=0),
    Setting("reminder_poll_seconds", float, 5.0, "Longest sleep of the reminder clock (it also "
            "wakes when a reminder is added in this process).", minimum=0.05),
    Setting("reminder_claim_timeout", float, 60.0, "Seconds after which a reminder claimed by a "
            "clock that never delivered it is put back.", minimum=1.0),
    # --- backup, restore, export (SPEC §8a) ------------------------------------------------
    Setting("backup_keep", int, 10, "Backups kept in the data dir's backups/ folder; the oldest "
            "beyond this are removed after a new one.", minimum=1),
    Setting("backup_daily", bool, True, "Take a backup into the data dir once a day (the first "
            "time the app runs that day)."),
    Setting("backup_daily_delay", float, 60.0, "Seconds after start before the daily backup "
            "is taken, so that start-up stays quick.", minimum=0.0),
    Setting("import_max_bytes", int, 64 * 1024 * 1024, "Largest export file accepted by "
            "POST /api/imports, in bytes.", minimum=1024),
    # --- journal (SPEC §8, seed 004 §16) ------------------------------------------------------
    Setting("journal_day_max_messages", int, 500, "Messages of one day journal generation "
            "takes at most; a bigger day is refused (prompt_budget_exceeded), nothing is cut.",
            minimum=1),
    Setting("journal_output_tokens", int, 4096, "Output tokens reserved for each journal "
            "stage (reconstruct, narrate).", minimum=256),
    # --- writing profile (seed 004 §12–§15, issue 16) -----------------------------------------
    Setting("profile_brief_chars", int, 4000, "Longest compiled brief the journal's stage 2 "
            "gets from the writing profile; fields are cut at word bounds.", minimum=500),
    Setting("profile_package_chars", int, 12000, "Longest profile analysis package (the JSON "
            "exported for a review); evidence is chosen to fit, never cut mid-word.",
            minimum=4000),
    Setting("profile_strong_edit_share", float, 0.3, "Share of a generated draft the user must "
            "change before the saved entry counts as a strong edit (review candidate).",
            minimum=0.0),
    Setting("profile_dialog_sample_chars", int, 400, "Shortest chat message taken as a dialog "
            "sample of the user's voice (only while no entries exist).", minimum=1),
    Setting("profile_dialog_sample_cooldown", int, DAY, "Seconds between two dialog samples.",
            minimum=0),
    Setting("profile_review_ready_evidence", int, 5, "New review candidates since the last "
            "review after which the profile page says a review is due.", minimum=1),
    Setting("profile_review_max_tokens", int, 2048, "Output tokens reserved for the AI review "
            "of the writing profile.", minimum=256),
    # --- hardening (issue 11) -------------------------------------------------------------------
    Setting("login_free_failures", int, 5, "Failed logins of one name from one client "
            "address before each further try from there must wait (1 s, doubling per "
            "failure): 429 with Retry-After. From every address together, the name's failures "
            "only slow a try (login_name_max_delay_seconds), never refuse it.", minimum=1),
    Setting("login_client_free_failures", int, 20, "Failed logins of one client address, over "
            "every name, before each further try from there must wait (1 s, doubling per "
            "failure): 429 with Retry-After.", minimum=1),
    Setting("login_max_delay_seconds", int, 900, "Longest wait imposed on a name and address, "
            "or on an address, after failed logins.", minimum=1),
    Setting("login_name_max_delay_seconds", int, 30, "Longest a login waits (before its "
            "password is checked) because its name failed often from other addresses; it is "
            "never refused for that.", minimum=1, maximum=30),
    Setting("log_format", str, "auto", "Log lines as JSON (the headless default) or short "
            "text (the desktop default: quiet, warnings and the start URL).",
            choices=("auto", "json", "text")),
    Setting("max_sockets_per_user", int, 20, "Open WebSockets per user; a new one beyond it "
            "closes that user's oldest.", minimum=1),
    Setting("max_reminders_per_pair", int, 200, "Pending reminders one user may have with one "
            "character; beyond it: 429 too_many_reminders.", minimum=1),
    Setting("reminder_max_days_ahead", int, 3650, "How far ahead a reminder may be due, in "
            "days; later (or more than a minute past) is 400 invalid_due_at.", minimum=1),
    # --- long-term memory and the Pixie worker (SPEC §3a) ----------------------------------
    Setting("promotion_threshold", float, 0.7, "User salience from which a block is queued "
            "for long-term memory (the Pixie queue).", minimum=0.0, maximum=1.0),
    Setting("memory_top_k", int, 5, "Long-term memories shown to the model per run, at most.",
            minimum=0),
    Setting("memory_budget_chars", int, 1500, "Characters the long-term memory block may use; "
            "whole memories only, the rest is left out with a warning.", minimum=0),
    Setting("memory_candidates", int, 8, "Existing memories shown to consolidation, so it can "
            "refresh or correct them instead of adding a duplicate.", minimum=0),
    Setting("pixie_poll_seconds", float, 5.0, "Longest sleep of the Pixie worker (it also wakes "
            "when this process queues a trigger).", minimum=0.05),
    Setting("pixie_max_attempts", int, 3, "Consolidations of one promotion trigger that may "
            "fail on a model error before it is dropped with a warning.", minimum=1),
)

SETTINGS_BY_NAME: dict[str, Setting] = {s.name: s for s in SETTINGS}


class SettingsError(Exception):
    """A setting has a bad value; the message names the setting and its source."""


class Settings:
    """Resolved values, read as attributes: `settings.session_ttl`."""

    __slots__ = ("_values", "_sources")

    def __init__(self, values: Mapping[str, Any], sources: Mapping[str, str]) -> None:
        object.__setattr__(self, "_values", dict(values))
        object.__setattr__(self, "_sources", dict(sources))

    def __getattr__(self, name: str) -> Any:
        try:
            return self._values[name]
        except KeyError:
            raise AttributeError(f"no setting named {name!r}") from None

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("Settings are read-only; use replace()")

    def source(self, name: str) -> str:
        """Where the value came from: flag, env, config.toml, secrets.toml or default."""
        return self._sources[name]

    def replace(self, **changes: Any) -> Settings:
        values, sources = dict(self._values), dict(self._sources)
        for name, value in changes.items():
            setting = SETTINGS_BY_NAME[name]
            values[name] = _validate(setting, value, "override")
            sources[name] = "override"
        _check_together(values)
        return Settings(values, sources)

    def update(self, **changes: Any) -> None:
        """Change values in place, validated as `replace` validates them (nothing changes
        when one is bad). Only for the model choice made in the UI (`Gateway.switch`), so
        that every holder of the settings in force (`app[SETTINGS]`, the gateway) reads it.
        A value that stays as it was keeps its source: naming again what the environment
        fixes must not make it a setting the UI may change from then on."""
        new = self.replace(**changes)
        sources = {name: source if new._values[name] != self._values[name]
                   else self._sources[name] for name, source in new._sources.items()}
        object.__setattr__(self, "_values", new._values)
        object.__setattr__(self, "_sources", sources)

    @property
    def data_path(self) -> Path:
        return Path(self.data_dir)

    def public(self) -> dict[str, Any]:
        """Values safe to show: secrets are reported as set or not, never shown."""
        return {
            s.name: (("set" if self._values[s.name] else None) if s.secret else self._values[s.name])
            for s in SETTINGS
        }


def default_data_dir() -> str:
    return platformdirs.user_data_dir(APP_NAME, appauthor=False)


def load_settings(
    flags: Mapping[str, Any] | None = None,
    env: Mapping[str, str] | None = None,
) -> Settings:
    """Resolve every setting: flag > env > config.toml > default.

    `flags` holds only the flags given on the command line (None values are ignored).
    Reads files but writes nothing.
    """
    flags = {k: v for k, v in (flags or {}).items() if v is not None}
    env = os.environ if env is None else env
    unknown = set(flags) - set(SETTINGS_BY_NAME)
    if unknown:
        raise SettingsError(f"unknown setting(s) {sorted(unknown)} (source: flag)")

    data_dir = _pick_data_dir(flags, env)
    config = _read_config(data_dir / CONFIG_FILE)
    secrets = _read_secrets(data_dir / SECRETS_FILE)

    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for setting in SETTINGS:
        if setting.name == "data_dir":
            values["data_dir"], sources["data_dir"] = str(data_dir), _data_dir_source(flags, env)
            continue
        if setting.name in flags:
            raw, source = flags[setting.name], "flag"
        elif setting.env in env:
            raw, source = env[setting.env], f"env {setting.env}"
            raw = _parse_env(setting, raw, source)
        elif setting.name in secrets:
            raw, source = secrets[setting.name], SECRETS_FILE
        elif setting.name in config:
            raw, source = config[setting.name], CONFIG_FILE
        else:
            values[setting.name], sources[setting.name] = setting.default, "default"
            continue
        values[setting.name] = _validate(setting, raw, source)
        sources[setting.name] = source
    _check_together(values)
    return Settings(values, sources)


def defaults(**overrides: Any) -> Settings:
    """The table's defaults plus overrides, without reading env or files (tests, tools)."""
    values = {s.name: s.default for s in SETTINGS}
    values["data_dir"] = default_data_dir()
    base = Settings(values, {s.name: "default" for s in SETTINGS})
    return base.replace(**overrides) if overrides else base


def _pick_data_dir(flags: Mapping[str, Any], env: Mapping[str, str]) -> Path:
    raw = flags.get("data_dir") or env.get(ENV_PREFIX + "DATA_DIR") or default_data_dir()
    return Path(raw).expanduser().resolve()


def _data_dir_source(flags: Mapping[str, Any], env: Mapping[str, str]) -> str:
    if flags.get("data_dir"):
        return "flag"
    return f"env {ENV_PREFIX}DATA_DIR" if env.get(ENV_PREFIX + "DATA_DIR") else "default"


def _read_config(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    try:
        config = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise SettingsError(f"{path}: not valid TOML: {exc}") from None
    except OSError as exc:
        raise SettingsError(f"{path}: cannot read: {exc.strerror}") from None
    for key in config:
        setting = SETTINGS_BY_NAME.get(key)
        if setting is None:
            raise SettingsError(f"unknown setting {key!r} (source: {path})")
        if setting.secret:
            raise SettingsError(
                f"setting {key!r} is a secret and is not read from {CONFIG_FILE}; "
                f"set {setting.env} or put it in {SECRETS_FILE} (mode 0600)"
            )
        if not setting.in_config:
            raise SettingsError(f"setting {key!r} cannot be set in {path} (use --data-dir "
                                f"or {setting.env})")
    return config


def _read_secrets(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    mode = path.stat().st_mode
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise SettingsError(f"{path}: readable by others (mode {oct(mode & 0o777)}); "
                            f"run: chmod 600 {path}")
    try:
        secrets = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise SettingsError(f"{path}: not valid TOML: {exc}") from None
    for key in secrets:
        setting = SETTINGS_BY_NAME.get(key)
        if setting is None or not setting.secret:
            raise SettingsError(f"{key!r} is not a secret setting (source: {path})")
    return secrets


_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def _parse_env(setting: Setting, raw: str, source: str) -> Any:
    text = raw.strip()
    if setting.nullable and text == "":
        return None
    try:
        if setting.type is bool:
            if text.lower() in _TRUE:
                return True
            if text.lower() in _FALSE:
                return False
            raise ValueError
        if setting.type is int:
            return int(text)
        if setting.type is float:
            return float(text)
    except ValueError:
        raise SettingsError(
            f"setting {setting.name}: {raw!r} is not a {setting.type.__name__} (source: {source})"
        ) from None
    return raw


def _validate(setting: Setting, value: Any, source: str) -> Any:
    where = f"(source: {source})"
    if value is None:
        if setting.nullable:
            return None
        raise SettingsError(f"setting {setting.name} must not be empty {where}")
    expected = setting.type
    ok = isinstance(value, expected) and not (expected is not bool and isinstance(value, bool))
    if expected is float and isinstance(value, int) and not isinstance(value, bool):
        value, ok = float(value), True
    if not ok:
        raise SettingsError(f"setting {setting.name}: {value!r} is not a {expected.__name__} {where}")
    if setting.choices is not None and value not in setting.choices:
        raise SettingsError(
            f"setting {setting.name}: {value!r} is not one of {', '.join(setting.choices)} {where}"
        )
    if setting.minimum is not None and value < setting.minimum:
        raise SettingsError(f"setting {setting.name}: {value!r} is below {setting.minimum} {where}")
    if setting.maximum is not None and value > setting.maximum:
        raise SettingsError(f"setting {setting.name}: {value!r} is above {setting.maximum} {where}")
    return value


def _check_together(values: Mapping[str, Any]) -> None:
    try:
        zone_named(values["timezone"])
    except UnknownZone as exc:
        raise SettingsError(f"setting timezone: {exc}") from None
    # Seed 000 §6: the history must never vanish before the mood has settled.
    if values["session_ttl"] <= values["eigenzeit_nullpunkt_seconds"]:
        raise SettingsError(
            f"setting session_ttl ({values['session_ttl']}) must stay above "
            f"eigenzeit_nullpunkt_seconds ({values['eigenzeit_nullpunkt_seconds']})"
        )
    if values["session_max_turns"] > values["session_summarize_at"]:
        raise SettingsError("setting session_max_turns must not exceed session_summarize_at")
