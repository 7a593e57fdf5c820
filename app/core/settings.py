"""Every tunable number and switch of Novaberg, in one table: the fields of `Settings`.

Each setting is declared once, as an annotated field of the frozen `Settings` class:

    session_ttl: int = setting(4 * HOUR, "Seconds of quiet after which …", minimum=60)

The field's name is the setting's name (its environment variable is `NOVABERG_<NAME>`), the
annotation its type (`X | None`: it may be unset; `Literal[…]`: its choices), and `setting()`
carries the default, the help line and the bounds. `SETTINGS`, the table the CLI, `PUT
/api/llm` and docs/settings.md read, is derived from these fields; `python -m app.core.settings
--markdown` prints docs/settings.md's table from it, and `tests/test_docs.py` holds that page
to that output row by row.

Why the class declares and the table is derived, not the reverse: a type checker reads a
class's annotations, not a tuple built at run time. A class made from the table
(`make_dataclass`) would give a checker nothing but `Any`, and a stub generated from it would
be a second copy to keep in step. So each reader (`settings.session_ttl`) sees an `int`.

A value is taken from, in order of precedence: a command-line flag, the environment
(`NOVABERG_<NAME>`), `config.toml` in the data dir, the default. Secrets (API keys) are read
from the environment or from a `secrets.toml` in the data dir that only its owner can read
(mode 0600), never from `config.toml`. A bad value stops start-up with a `SettingsError` that
names the setting and where the value came from; the CLI turns it into exit code 2.

Nothing changes a `Settings` after it is made: it is frozen, and `replace()` makes a new one
(validated). What changes at run time is not a setting: the model chosen in the UI belongs to
the gateway (`app.llm.choice`, `Gateway.switch`); `app[SETTINGS]` stays the settings in force
at start.

Why one module of over 400 lines: it is a data table. About 200 lines are the declarations (a
setting is declared once, here, and nowhere else); the rest reads and checks them. New settings add fields here, so
the table and its reader stay together rather than being split by size.
"""

# No `from __future__ import annotations` here: the fields' annotations are the table's types,
# read at import (`_rows`); evaluated once with the class, they cost nothing to read back.
import argparse
import os
import stat
import sys
import tomllib
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

import platformdirs

from app.core.clock import UnknownZone, zone_named
from app.core.refusal import RefusedKind

ENV_PREFIX = "NOVABERG_"
CONFIG_FILE = "config.toml"
SECRETS_FILE = "secrets.toml"
APP_NAME = "novaberg"

HOUR = 3600
DAY = 24 * HOUR

ProviderName = Literal["offline", "ollama", "openai"]
# Where a crash test may have the process kill itself (`app.core.lifetime.crash_point`): between
# a turn's Redis commit and its message-log row (the user turn's, the answer's), and in the
# steps of a restore.
CrashPoint = Literal[
    "user:committed",
    "user:appended",
    "answer:committed",
    "answer:appended",
    "restore:saving",
    "restore:saved",
    "restore:copying",
    "restore:installed",
    "restore:rows",
    "restore:database",
    "restore:files",
    "restore:redis",
    "restore:loaded",
]


@dataclass(frozen=True, slots=True)
class Setting:
    """One row of the table, derived from a field of `Settings` (see `_rows`)."""

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

    def markdown_row(self) -> str:
        """This setting's row of docs/settings.md's table (`—`: no default; the help says why)."""
        if self.default is None:
            default = "—"
        else:
            value = self.default
            default = f"`{str(value).lower() if isinstance(value, bool) else value}`"
        return f"| `{self.name}` | `{self.env}` | {default} | {self.help} |"


@dataclass(frozen=True, slots=True)
class _Declared:
    default: Any
    help: str
    minimum: float | None
    maximum: float | None
    secret: bool
    in_config: bool


_DECLARED = "novaberg.setting"


def setting(
    default: Any,
    help: str,  # noqa: A002 - the field's help text, as argparse names it
    *,
    minimum: float | None = None,
    maximum: float | None = None,
    secret: bool = False,
    in_config: bool = True,
) -> Any:
    """Declare a field of `Settings` as a setting. The dataclass field itself has no default:
    a `Settings` is made only by `load_settings`/`defaults` (through `_made`), which give
    every value."""
    return field(
        metadata={_DECLARED: _Declared(default, help, minimum, maximum, secret, in_config)}
    )


# Not slots=True: in Python 3.11 a frozen class with slots answers an assignment to an unknown
# name with a TypeError from its own __setattr__ instead of FrozenInstanceError. No generated
# __init__, __eq__ or __repr__: only `_made` makes a Settings, and generating functions of some
# 90 fields would cost every start a few milliseconds.
@dataclass(frozen=True, init=False, eq=False, repr=False, kw_only=True)
class Settings:
    """The resolved values, read as typed attributes: `settings.session_ttl`. Frozen: make a
    changed copy with `replace()`. `source(name)` says where a value came from."""

    # --- process, storage, network ---------------------------------------------------------
    headless: bool = setting(False, "Run as a server: no browser, logs to stdout, named users.")
    host: str = setting("127.0.0.1", "Address to bind. Desktop mode always binds 127.0.0.1.")
    port: int = setting(
        8765,
        "Port to bind. An explicit port is binding; only the default falls "
        "back to a free port in desktop mode.",
        minimum=0,
        maximum=65535,
    )
    data_dir: str = setting(
        None,
        "Where Redis, SQLite, users, prompts and config live (default: "
        "the platform's user data dir).",
        in_config=False,
    )
    redis_url: str | None = setting(
        None, "Use an external Redis/Valkey (redis://…) instead of the embedded one."
    )
    database_url: str | None = setting(
        None,
        "Keep the durable store (accounts, message log, "
        "journal, profiles, memories, privacy registry) in PostgreSQL (postgresql://…) "
        "instead of the data dir's SQLite, so several processes share it.",
    )
    files_dir: str | None = setting(
        None,
        "Where the files beside the store live — the "
        "characters (definitions, pictures, imported cards) and the journal's photos "
        "(default: the data dir). Processes sharing one database_url point it at one "
        "shared volume; it and the store must be of one install (a start checks).",
    )
    test_crash_at: CrashPoint | None = setting(  # noqa: RUF009 - setting() is a field()
        None,
        "Tests only: the process kills itself "
        "(SIGKILL) when it reaches this point (the kill -9 tests of tests/runtime and "
        "tests/backup); unset in use.",
        in_config=False,
    )
    redis_appendfsync: Literal["always", "everysec", "no"] = setting(
        "always", "AOF fsync policy of the embedded Redis."
    )
    redis_max_connections: int = setting(
        64,
        "Redis connections the app opens at most; more concurrent commands wait for a free one.",
        minimum=4,
    )
    token: str | None = setting(
        None,
        "Fixed API token of the user `local` (default: a new one per start in desktop mode).",
        secret=True,
    )
    no_browser: bool = setting(False, "Do not open a browser tab in desktop mode.")
    log_level: Literal["debug", "info", "warning", "error"] = setting("info", "Log level.")
    public_origin: str | None = setting(
        None,
        "An extra Origin (scheme://host[:port]) accepted "
        "on state-changing requests, e.g. behind a reverse proxy.",
    )
    timezone: str | None = setting(
        None,
        "The user's IANA time zone (e.g. Europe/Berlin) for "
        "calendar days and local times; unset = the machine's zone.",
    )
    rate_limit_per_second: float = setting(
        10.0,
        "Messages one user may send per second (burst of twice that); beyond it: 429.",
        minimum=0.1,
    )
    header_timeout: float = setting(
        10.0,
        "Seconds a connection may take to send a request's line and headers (from its opening "
        "or its first byte after a keep-alive pause); slower ones are closed (slow-loris).",
        minimum=0.1,
    )
    # --- model gateway (design §7) ------------------------------------------------------------
    llm_provider: Literal["offline", "ollama", "openai"] | None = setting(
        None, "Model provider; unset = auto-detect Ollama/llama.cpp on localhost, else offline."
    )
    llm_url: str | None = setting(None, "Base URL of the model server.")
    llm_model: str | None = setting(None, "Model name at the provider.")
    llm_api_key: str | None = setting(
        None, "API key for the model server (env or secrets.toml only).", secret=True
    )
    llm_remote: bool = setting(
        False, "The provider is remote: the privacy gateway masks identities in every prompt."
    )
    llm_context: int | None = setting(
        None, "Context window in tokens where the server does not say.", minimum=256
    )
    llm_task_model: str | None = setting(
        None,
        "Task model: a second, smaller model for the structured calls (perception, "
        "salience, route, verdict, the agents', the journal's reconstruction, the "
        "profile's review, the memory's consolidation) while the reply uses llm_model; "
        "unset = every call uses llm_model.",
    )
    llm_task_url: str | None = setting(
        None,
        "Base URL of the task model's server, of the same provider kind as the main "
        "one; unset = the main server. Needs llm_task_model. The API key goes only to "
        "llm_url; a remote task server is masked like the main one.",
    )
    model_timeout: float = setting(120.0, "Seconds before a model call fails.", minimum=0.1)
    model_retries: int = setting(
        2, "Retries after a connection error, 5xx or 429.", minimum=0, maximum=10
    )
    model_concurrency: int = setting(
        1,
        "Parallel requests per provider where the server does not say how many it serves "
        "(llama.cpp says it: /props total_slots; for Ollama state its OLLAMA_NUM_PARALLEL, "
        "for vLLM its max_num_seqs).",
        minimum=1,
    )
    model_metadata_ttl: int = setting(
        HOUR, "Seconds a provider's context window is cached.", minimum=0
    )
    chars_per_token: float = setting(2.0, "Budget estimate: characters per token.", minimum=0.5)
    budget_safety_margin: float = setting(
        0.15, "Budget: share of the window kept free.", minimum=0.0, maximum=0.9
    )
    model_backoff_seconds: float = setting(
        0.5,
        "First retry delay; doubles per retry, plus up "
        "to half of it as jitter; a longer Retry-After wins.",
        minimum=0.0,
    )
    model_retry_max_seconds: float = setting(
        10.0,
        "A model call stops retrying when the next "
        "retry would start later than this after its first attempt.",
        minimum=0.0,
    )
    llm_offline_context: int = setting(
        32768, "Context window of the built-in offline provider, in tokens.", minimum=256
    )
    llm_ollama_default_context: int = setting(
        8192,
        "Window asked of Ollama (num_ctx) when "
        "neither the model's Modelfile nor llm_context sets one.",
        minimum=256,
    )
    journal_min_context: int = setting(
        32768,
        "Smallest context window journal generation runs with (model_context_too_small below it).",
        minimum=256,
    )
    llm_probe_ollama_url: str = setting(
        "http://127.0.0.1:11434", "Where auto-detection looks for Ollama."
    )
    llm_probe_openai_url: str = setting(
        "http://127.0.0.1:8080",
        "Where auto-detection looks for an OpenAI-style server (llama.cpp).",
    )
    llm_probe_timeout: float = setting(
        0.3,
        "Seconds auto-detection waits for local model "
        "servers (in the background; start-up never waits).",
        minimum=0.01,
    )
    llm_trace_size: int = setting(
        200, "Model call records kept in memory for the admin trace.", minimum=1
    )
    llm_test_purpose_header: bool = setting(
        False,
        "Tests only: send each model call's purpose "
        "in the header X-Novaberg-Purpose (the fake model of tests/fakemodel.py answers by "
        "it); never to a remote provider (llm_remote, or a host off this network).",
    )
    privacy_identities: str | None = setting(
        None,
        "Deprecated: names, comma-separated, imported "
        "once at start-up (with identities.txt in the data dir) into the privacy registry; "
        "edit people in the settings.",
    )
    privacy_detect_url: str | None = setting(
        None,
        "A LOCAL OpenAI-compatible model server the "
        "privacy gateway asks for further names before a remote call (the detect role); off "
        "when unset; refused unless on this machine or the local network.",
    )
    privacy_detect_model: str | None = setting(
        None, "The model of privacy_detect_url (unset: the server's first)."
    )
    # --- session memory (design §3, seed 000) ---------------------------------------------------
    session_ttl: int = setting(
        4 * HOUR,
        "Seconds of quiet after which a session expires; must "
        "stay above eigenzeit_nullpunkt_seconds.",
        minimum=60,
    )
    session_summarize_at: int = setting(
        25, "Summarize when the session holds more turns.", minimum=2
    )
    session_summarize_batch: int = setting(
        10, "Oldest turns folded into the summary at once.", minimum=1
    )
    session_max_turns: int = setting(20, "Turns kept when summarizing fails.", minimum=1)
    session_history_budget_chars: int = setting(
        8000,
        "Rendered history budget in characters; whole oldest groups are dropped, nothing is cut.",
        minimum=100,
    )
    session_summary_max_tokens: int = setting(
        600, "Output tokens reserved for the session summary.", minimum=16
    )
    session_window_exchanges: int = setting(
        10, "Exchanges (groups with a user utterance) shown to the model.", minimum=1
    )
    # --- character state (design §4) ------------------------------------------------------------
    eigenzeit_nullpunkt_seconds: int = setting(
        3 * HOUR,
        "Seconds of quiet after which the character's state has relaxed to its baseline.",
        minimum=1,
    )
    empathy_alpha: float = setting(
        0.3,
        "How far a user event moves the character's state toward the user's.",
        minimum=0.0,
        maximum=1.0,
    )
    # --- turn runtime (design §5, seed 001) -----------------------------------------------------
    max_message_chars: int = setting(20000, "Longest accepted message, after trimming.", minimum=1)
    input_window_seconds: float = setting(
        30.0, "Messages closer than this to their predecessor form one block.", minimum=0.0
    )
    turn_marker_ttl: int = setting(
        120, "Emergency-brake TTL of the turn marker, seconds.", minimum=5
    )
    turn_marker_refresh_seconds: float = setting(
        30.0, "How often a running turn refreshes its marker.", minimum=1.0
    )
    heartbeat_seconds: float = setting(
        10.0, "How often a process refreshes its heartbeat key.", minimum=1.0
    )
    max_self_triggers: int = setting(3, "Follow-ups the character may ask for in a row.", minimum=0)
    graph_slots: int = setting(
        1,
        "Pipeline runs at a time per model server (one GPU), shared by the processes that use it.",
        minimum=1,
    )
    lock_wait_timeout: float = setting(
        60.0, "Seconds a turn waits for a run slot before it fails with a notice.", minimum=0.1
    )
    max_turn_attempts: int = setting(
        2, "Runs of a turn in all, crash recoveries included.", minimum=1
    )
    record_ttl: int = setting(7 * DAY, "Seconds turn and message records are kept.", minimum=60)
    ws_send_queue: int = setting(
        256, "Messages buffered per WebSocket before a slow client is dropped.", minimum=1
    )
    ws_heartbeat_seconds: float = setting(20.0, "WebSocket ping interval.", minimum=1.0)
    idle_reflection_minutes: int = setting(
        0, "Minutes of quiet before the character reflects on its own (0 = off).", minimum=0
    )
    # --- pipelines, agents, impulses (design §6, seed 001 §2) -----------------------------------
    responder_max_tokens: int = setting(
        600, "Output tokens reserved for one answer of the character.", minimum=16
    )
    route_by_rules: bool = setting(
        True,
        "The offline rules route the user's words where they are sure (no model call).",
    )
    salience_after_delivery: bool = setting(
        True, "The character's salience of its answer runs after the answer is delivered."
    )
    user_salience_after_delivery: bool = setting(
        True,
        "The user's salience of the block runs after the answer (or the failure notice).",
    )
    planner_max_steps: int = setting(
        4,
        "Agent steps the planner runs in one turn; further steps are dropped with a warning.",
        minimum=1,
    )
    salience_memory_threshold: float = setting(
        0.5,
        "Importance from which salient segments become short-term memory entries.",
        minimum=0.0,
        maximum=1.0,
    )
    short_term_memory_ttl: int = setting(
        7 * DAY, "Seconds a short-term memory entry is kept.", minimum=60
    )
    short_term_memory_max_entries: int = setting(
        200, "Short-term memory entries kept per pair; the oldest go first.", minimum=1
    )
    short_term_memory_recent: int = setting(
        8, "Newest short-term memory entries shown to the model.", minimum=0
    )
    reminder_poll_seconds: float = setting(
        5.0,
        "Longest sleep of the reminder clock (it also "
        "wakes when a reminder is added in this process).",
        minimum=0.05,
    )
    reminder_claim_timeout: float = setting(
        60.0,
        "Seconds after which a reminder claimed by a clock that never delivered it is put back.",
        minimum=1.0,
    )
    # --- backup, restore, export (design §8a) ------------------------------------------------
    backup_keep: int = setting(
        10,
        "Backups kept in the data dir's backups/ folder; the oldest "
        "beyond this are removed after a new one.",
        minimum=1,
    )
    backup_daily: bool = setting(
        True, "Take a backup into the data dir once a day (the first time the app runs that day)."
    )
    backup_daily_delay: float = setting(
        60.0,
        "Seconds after start before the daily backup is taken, so that start-up stays quick.",
        minimum=0.0,
    )
    import_max_bytes: int = setting(
        64 * 1024 * 1024,
        "Largest export file accepted by POST "
        "/api/imports, and largest diary (as sent, and unpacked) by a diary import, in "
        "bytes.",
        minimum=1024,
    )
    # --- journal (design §8, seed 004 §16) ------------------------------------------------------
    # 4000, not the seed's 500: a day too big for one prompt is written in parts
    # (app.journal.parts), so the cap bounds the job's work, no longer one prompt; 4000 takes
    # a day of 2 000 lines of yours with a reply to each (issue 40 item 4).
    journal_day_max_messages: int = setting(
        4000,
        "Messages of one day journal generation takes "
        "at most; a bigger day is refused (prompt_budget_exceeded), nothing is cut.",
        minimum=1,
    )
    journal_output_tokens: int = setting(
        4096, "Output tokens reserved for each journal stage (reconstruct, narrate).", minimum=256
    )
    # --- writing profile (seed 004 §12–§15, issue 16) -----------------------------------------
    profile_brief_chars: int = setting(
        4000,
        "Longest compiled brief the journal's stage 2 gets "
        "from the writing profile; fields are cut at word bounds.",
        minimum=500,
    )
    profile_package_chars: int = setting(
        12000,
        "Longest profile analysis package (the JSON "
        "exported for a review); evidence is chosen to fit, never cut mid-word.",
        minimum=4000,
    )
    profile_strong_edit_share: float = setting(
        0.3,
        "Share of a generated draft the user must "
        "change before the saved entry counts as a strong edit (review candidate).",
        minimum=0.0,
    )
    profile_dialog_sample_chars: int = setting(
        400,
        "Shortest chat message taken as a dialog "
        "sample of the user's voice (only while no entries exist).",
        minimum=1,
    )
    profile_dialog_sample_cooldown: int = setting(
        DAY, "Seconds between two dialog samples.", minimum=0
    )
    profile_evidence_period: int = setting(
        7 * DAY,
        "Seconds after the last review candidate "
        "when a saved entry of the user's own becomes one again, whatever it measures "
        "(periodic readiness).",
        minimum=0,
    )
    profile_evidence_volume: int = setting(
        5,
        "Saved entries of the user's own after the last "
        "review candidate when the next one becomes a candidate (periodic readiness).",
        minimum=1,
    )
    profile_deviation_share: float = setting(
        0.5,
        "How far (a share of the usual value) a "
        "saved entry's sentence or word length must lie from the user's usual writing "
        "to count as a heuristic deviation (review candidate).",
        minimum=0.05,
    )
    profile_review_ready_evidence: int = setting(
        5,
        "New review candidates since the last review "
        "after which the profile page says a review is due.",
        minimum=1,
    )
    profile_review_max_tokens: int = setting(
        2048, "Output tokens reserved for the AI review of the writing profile.", minimum=256
    )
    # --- hardening (issue 11) -------------------------------------------------------------------
    login_free_failures: int = setting(
        5,
        "Failed logins of one name from one client address "
        "before each further try from there must wait (1 s, doubling per failure): 429 with "
        "Retry-After. From every address together, the name's failures only slow a try "
        "(login_name_max_delay_seconds), never refuse it.",
        minimum=1,
    )
    login_client_free_failures: int = setting(
        20,
        "Failed logins of one client address (an "
        "IPv6 one by its /64), over every name, before each further try from there must wait (1 s, doubling per "
        "failure): 429 with Retry-After.",
        minimum=1,
    )
    login_max_delay_seconds: int = setting(
        900,
        "Longest wait imposed on a name and address, or on an address, after failed logins.",
        minimum=1,
    )
    login_name_max_delay_seconds: int = setting(
        30,
        "Longest a login waits (before its password "
        "is checked) because its name failed often from other addresses (at most 30); it is "
        "never refused for that.",
        minimum=1,
        maximum=30,
    )
    log_format: Literal["auto", "json", "text"] = setting(
        "auto",
        "Log lines as JSON (the "
        "headless default) or short text (the desktop default: quiet, warnings and the start "
        "URL).",
    )
    max_sockets_per_user: int = setting(
        20, "Open WebSockets per user; a new one beyond it closes that user's oldest.", minimum=1
    )
    max_reminders_per_pair: int = setting(
        200,
        "Pending reminders one user may have with one "
        "character; beyond it: 429 too_many_reminders.",
        minimum=1,
    )
    reminder_max_days_ahead: int = setting(
        3650,
        "How far ahead a reminder may be due, in days; "
        "later (or more than a minute past) is 400 invalid_due_at.",
        minimum=1,
    )
    # --- long-term memory and the Pixie worker (design §3a) ----------------------------------
    promotion_threshold: float = setting(
        0.7,
        "User salience from which a block is queued for long-term memory (the Pixie queue).",
        minimum=0.0,
        maximum=1.0,
    )
    memory_top_k: int = setting(
        5, "Long-term memories shown to the model per run, at most.", minimum=0
    )
    memory_budget_chars: int = setting(
        1500,
        "Characters the long-term memory block may use; "
        "whole memories only, the rest is left out with a warning.",
        minimum=0,
    )
    lore_budget_chars: int = setting(
        2000,
        "Characters a character's lorebook entries may use "
        "in one prompt (with the book's own token_budget, the smaller); whole entries only, "
        "the rest is left out with a warning.",
        minimum=0,
    )
    search_scan_rows: int = setting(
        20_000,
        "Most lines a history search of fewer than three letters (which the index cannot "
        "look up) reads per source before it is refused (422 search_too_broad).",
        minimum=1,
    )
    # 8 MiB: the largest real cards are a few MB (a portrait PNG with a base64 card chunk,
    # or a lorebook of the 2 000 entries a book may hold); twice that room, and half the
    # work a card could cost before.
    character_upload_max_bytes: int = setting(
        8 * 1024 * 1024,
        "Largest character card (PNG "
        "or JSON) or picture accepted by an import or upload, in bytes.",
        minimum=1024,
    )
    media_max_bytes: int = setting(
        25 * 1024 * 1024,
        "Largest photo a journal entry takes "
        "(JPEG, PNG, WebP, HEIC), in bytes; larger: 413 too_large, nothing stored.",
        minimum=1024,
    )
    media_keep_location: bool = setting(
        False,
        "Keep a photo's EXIF location (GPS) when it is "
        "added to a journal entry; by default it is removed before the file is stored.",
    )
    memory_candidates: int = setting(
        8,
        "Existing memories shown to consolidation, so it can "
        "refresh or correct them instead of adding a duplicate.",
        minimum=0,
    )
    pixie_poll_seconds: float = setting(
        5.0,
        "Longest sleep of the Pixie worker (it also wakes when this process queues a trigger).",
        minimum=0.05,
    )
    pixie_max_attempts: int = setting(
        3,
        "Consolidations of one promotion trigger that may fail "
        "on a model error before it is dropped with a warning.",
        minimum=1,
    )

    _sources: Mapping[str, str]  # not a setting: where each value came from (`source`)

    def __repr__(self) -> str:
        shown = ", ".join(
            f"{row.name}={getattr(self, row.name)!r}" for row in SETTINGS if not row.secret
        )  # a logged one shows no secret
        return f"Settings({shown})"

    def source(self, name: str) -> str:
        """Where the value came from: flag, env …, config.toml, secrets.toml, default or
        override (`replace`)."""
        return self._sources[name]

    def replace(self, **changes: Any) -> "Settings":
        """A copy with `changes`, each validated as the table says (source `override`)."""
        values, sources = self.values(), dict(self._sources)
        for name, value in changes.items():
            row = SETTINGS_BY_NAME.get(name)
            if row is None:
                raise SettingsError(f"unknown setting {name!r} (source: override)")
            values[name] = _validate(row, value, "override")
            sources[name] = "override"
        return _made(values, sources)

    def values(self) -> dict[str, Any]:
        """Every setting's value, by name (secrets included: never log this)."""
        return {row.name: getattr(self, row.name) for row in SETTINGS}

    @property
    def data_path(self) -> Path:
        return Path(self.data_dir)

    @property
    def files_path(self) -> Path:
        """The files dir: `files_dir`, else the data dir (`app.storage.install`)."""
        return Path(self.files_dir).expanduser().resolve() if self.files_dir else self.data_path

    def public(self) -> dict[str, Any]:
        """Values safe to show: secrets are reported as set or not, never shown."""
        return {
            row.name: (
                ("set" if getattr(self, row.name) else None)
                if row.secret
                else getattr(self, row.name)
            )
            for row in SETTINGS
        }


def _rows() -> tuple[Setting, ...]:
    """The table: one row per field of `Settings` declared with `setting()`."""
    hints = Settings.__annotations__  # evaluated: this module has no postponed annotations
    rows = []
    for f in fields(Settings):
        declared: _Declared | None = f.metadata.get(_DECLARED)
        if declared is None:
            continue
        kind, nullable, choices = _kind(hints[f.name])
        rows.append(
            Setting(
                f.name,
                kind,
                declared.default,
                declared.help,
                declared.minimum,
                declared.maximum,
                choices,
                nullable,
                declared.secret,
                declared.in_config,
            )
        )
    return tuple(rows)


def _kind(hint: Any) -> tuple[type, bool, tuple[str, ...] | None]:
    """(value type, may be None, choices) of a field's annotation."""
    union = typing.get_origin(hint) in (typing.Union, types.UnionType)
    args = typing.get_args(hint) if union else (hint,)
    nullable = type(None) in args
    [base] = [a for a in args if a is not type(None)]
    if typing.get_origin(base) is Literal:
        choices = typing.get_args(base)
        return type(choices[0]), nullable, choices
    return base, nullable, None


SETTINGS: tuple[Setting, ...] = _rows()
SETTINGS_BY_NAME: dict[str, Setting] = {s.name: s for s in SETTINGS}


class SettingsError(RefusedKind):
    """A setting has a bad value; the message names the setting and its source (a change
    through the API: 400 `invalid_setting`)."""

    STATUS, CODE = 400, "invalid_setting"


def _made(values: Mapping[str, Any], sources: Mapping[str, str]) -> Settings:
    """The one way a `Settings` is made: every value given, checked together, then frozen."""
    _check_together(values)
    made = object.__new__(Settings)
    for row in SETTINGS:
        object.__setattr__(made, row.name, values[row.name])
    object.__setattr__(made, "_sources", types.MappingProxyType(dict(sources)))
    return made


def checked(name: str, value: Any, source: str = "override") -> Any:
    """`value` as setting `name` takes it (an int for a float becomes a float);
    `SettingsError` naming the setting and `source` when the table refuses it."""
    return _validate(SETTINGS_BY_NAME[name], value, source)


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
    return _made(values, sources)


def defaults(**overrides: Any) -> Settings:
    """The table's defaults plus overrides, without reading env or files (tests, tools)."""
    values = {s.name: s.default for s in SETTINGS}
    values["data_dir"] = default_data_dir()
    base = _made(values, {s.name: "default" for s in SETTINGS})
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
            raise SettingsError(
                f"setting {key!r} cannot be set in {path} (use --data-dir or {setting.env})"
            )
    return config


def _read_secrets(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    mode = path.stat().st_mode
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise SettingsError(
            f"{path}: readable by others (mode {oct(mode & 0o777)}); run: chmod 600 {path}"
        )
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
        raise SettingsError(
            f"setting {setting.name}: {value!r} is not a {expected.__name__} {where}"
        )
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
    problem = task_model_problem(values["llm_task_model"], values["llm_task_url"])
    if problem is not None:
        raise SettingsError(problem)


def task_model_problem(task_model: str | None, task_url: str | None) -> str | None:
    """Why a task model's settings do not go together (None: they do). Also checked for
    a choice made in the UI (`app.llm.choice`)."""
    if task_model is not None and not task_model.strip():
        return "setting llm_task_model must not be blank (unset it to use llm_model)"
    if task_url is None:
        return None
    if task_model is None:
        return "setting llm_task_url needs llm_task_model (which model runs on that server?)"
    try:
        parts = urlsplit(task_url)
        web = parts.scheme in ("http", "https") and bool(parts.hostname)
    except ValueError:
        web = False
    if not web:
        return f"setting llm_task_url: {task_url!r} is not an http:// or https:// URL with a host"
    return None


# --- docs/settings.md's table ------------------------------------------------------------

MARKDOWN_HEADER = ("| setting | env | default | meaning |", "|---|---|---|---|")


def markdown_table() -> str:
    """docs/settings.md's table, one row per setting in table order."""
    return "\n".join([*MARKDOWN_HEADER, *(row.markdown_row() for row in SETTINGS)]) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m app.core.settings", description="Print the settings table."
    )
    parser.add_argument(
        "--markdown",
        action="store_true",
        required=True,
        help="as docs/settings.md's table (Markdown)",
    )
    parser.parse_args(argv)
    sys.stdout.write(markdown_table())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
