"""`PUT /api/llm`: the settings panel chooses the model (provider, URL, model, API key, task
model).

Body: `{"provider": "offline"|"ollama"|"openai", "url"?: str|null, "model"?: str|null,
"remote"?: bool, "api_key"?: str, "task_model"?: str|null, "task_url"?: str|null}`. Admin
only (the user `local`, as `POST /api/llm/test`).

- The choice is validated by the settings table (`ModelChoice.changed`), then kept where the
  next start reads it: provider, URL, model and remote in `config.toml`, the API key in
  `secrets.toml` (created with mode 0600; design §1: secrets never go to Redis or SQLite).
  Only the changed lines of those files are rewritten, so a person's comments stay.
- `api_key`: absent keeps the stored key, a non-empty string replaces it, `""` removes it.
  It is never sent back: `GET /api/llm` says only whether one is set.
- `task_model`, `task_url` (the task model, `llm_task_model`/`llm_task_url`): absent keeps
  the stored value, a string sets it, `null` or `""` removes it (no task model: the main
  model answers every call). A task URL is checked as `url` is (400 `invalid_url`,
  `url_has_credentials`), and a task URL without a task model is 400 `invalid_setting`.
- A setting fixed by a flag or the environment would beat `config.toml` at the next start,
  so changing it here is refused with 409 `setting_locked`, naming the variable. Naming
  again the value it fixes is no change and is allowed; it stays fixed.
- Then `Gateway.switch` makes it the gateway's model choice and uses the new provider at
  once (no restart); auto-detection no longer overrides the choice. The settings in force
  at start (`app[SETTINGS]`) are not changed: `GET /api/llm` and `/api/health` read the
  gateway. Answers `200` with `GET /api/llm`'s body.
"""

from __future__ import annotations

import logging
import os
import re
import tempfile
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

import msgspec
from aiohttp import web

from app.api.access import require_admin
from app.api.app_keys import GATEWAY, SETTINGS
from app.api.errors import ApiError
from app.api.llm import check_model_url
from app.api.validation import read_json
from app.api.wire import answer
from app.core.log import fields
from app.core.settings import CONFIG_FILE, SECRETS_FILE, SETTINGS_BY_NAME, Settings
from app.llm.choice import ModelChoice
from app.llm.views import ConnectionFault

log = logging.getLogger(__name__)

UNSET = msgspec.UNSET
SECRET_FILE_MODE = 0o600
# Sources that beat config.toml at the next start (see app.core.settings.load_settings).
_FIXED_SOURCES = ("flag", "env ")


class LlmChoice(msgspec.Struct, forbid_unknown_fields=True):
    provider: Literal["offline", "ollama", "openai"]
    url: str | None = None
    model: str | None = None
    remote: bool | msgspec.UnsetType = UNSET
    api_key: str | msgspec.UnsetType = UNSET
    task_model: str | msgspec.UnsetType | None = UNSET
    task_url: str | msgspec.UnsetType | None = UNSET


def _clean(value: str | None) -> str | None:
    value = value.strip() if isinstance(value, str) else None
    return value or None


def _server(url: str | None) -> tuple[str, str | None, int | None] | None:
    """Where a key would be sent: scheme, host and port."""
    if not url:
        return None
    parts = urlsplit(url)
    return parts.scheme, parts.hostname, parts.port


def changes_for(choice: LlmChoice, current: ModelChoice) -> dict[str, Any]:
    """The settings a valid choice changes, by setting name (None removes a value); 400 for
    an invalid one. `current` is the gateway's model choice.

    - Offline restores auto-detection: provider, URL and model are removed, not pinned.
    - A stored API key is dropped when the server (scheme, host, port) changes, unless a
      new key comes with it: a key is never sent to a server it was not given for.
    """
    changes: dict[str, Any] = {}
    if choice.provider == "offline":
        changes.update(llm_provider=None, llm_url=None, llm_model=None)
    else:
        url, model = _clean(choice.url), _clean(choice.model)
        if url is not None:
            check_model_url(url)
        changes.update(llm_provider=choice.provider, llm_url=url, llm_model=model)
        moved = _server(url) != _server(current.llm_url)
        if moved and choice.api_key is UNSET and current.llm_api_key:
            changes["llm_api_key"] = None
    if choice.remote is not UNSET:
        changes["llm_remote"] = choice.remote
    if choice.api_key is not UNSET:
        changes["llm_api_key"] = choice.api_key.strip() or None
    if choice.task_model is not UNSET:
        changes["llm_task_model"] = _clean(choice.task_model)
    if choice.task_url is not UNSET:
        task_url = changes["llm_task_url"] = _clean(choice.task_url)
        if task_url is not None:
            check_model_url(task_url, "task_url")
    return changes


def _locked(settings: Settings, current: ModelChoice, changes: dict[str, Any]) -> list[str]:
    """Variables that fix a changed setting (and so would undo the change at restart).
    A fixed setting is never changed here, so the current choice still holds its value."""
    locked = []
    for name, value in changes.items():
        if getattr(current, name) == value:
            continue
        source = settings.source(name)
        if source.startswith(_FIXED_SOURCES):
            locked.append(SETTINGS_BY_NAME[name].env if source != "flag" else f"--{name}")
    return locked


# --- the two files ----------------------------------------------------------------------


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    # A JSON string is a TOML basic string with the same escapes, except that TOML also
    # forbids a raw DEL (JSON leaves it as it is: the next start would fail to read the file).
    return msgspec.json.encode(str(value)).decode().replace("\x7f", "\\u007f")


def update_toml_lines(text: str, changes: dict[str, Any]) -> str:
    """Set or remove top-level `key = value` lines, leaving every other line as it is."""
    lines = text.splitlines()
    for name, value in changes.items():
        pattern = re.compile(rf"^\s*{re.escape(name)}\s*=")
        index = next((i for i, line in enumerate(lines) if pattern.match(line)), None)
        if value is None:
            if index is not None:
                del lines[index]
            continue
        line = f"{name} = {_toml_value(value)}"
        if index is None:
            lines.append(line)
        else:
            lines[index] = line
    return "\n".join(lines) + "\n" if lines else ""


def write_atomically(path: Path, text: str, mode: int | None = None) -> None:
    """Replace `path` in one step; `mode` is set before any byte is written."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        if mode is not None:
            os.fchmod(fd, mode)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def persist(data_dir: Path, changes: dict[str, Any]) -> None:
    public = {k: v for k, v in changes.items() if not SETTINGS_BY_NAME[k].secret}
    secret = {k: v for k, v in changes.items() if SETTINGS_BY_NAME[k].secret}
    if public:
        config = data_dir / CONFIG_FILE
        old = config.read_text(encoding="utf-8") if config.exists() else ""
        write_atomically(config, update_toml_lines(old, public))
    if secret:
        secrets = data_dir / SECRETS_FILE
        old = secrets.read_text(encoding="utf-8") if secrets.exists() else ""
        write_atomically(secrets, update_toml_lines(old, secret), mode=SECRET_FILE_MODE)


# --- the handler ------------------------------------------------------------------------


async def put_llm(request: web.Request) -> web.Response:
    require_admin(request)
    choice = await read_json(request, LlmChoice)
    settings, gateway = request.app[SETTINGS], request.app[GATEWAY]
    changes = changes_for(choice, gateway.choice)
    locked = _locked(settings, gateway.choice, changes)
    if locked:
        raise ApiError(
            409,
            "setting_locked",
            f"set by {', '.join(locked)}; change it there (it wins at every start)",
        )
    # Validated before anything is written; a bad value is a `SettingsError` (400).
    gateway.choice.changed(**changes)
    persist(settings.data_path, changes)
    await gateway.switch(**changes)
    chosen = gateway.choice
    log.info(
        "model provider chosen in the UI",
        extra=fields(
            provider=chosen.llm_provider or "offline",
            model=chosen.llm_model,
            url=chosen.llm_url,
            task_model=chosen.llm_task_model,
            task_url=chosen.llm_task_url,
            api_key="set" if chosen.llm_api_key else None,
        ),
    )
    body = gateway.describe()
    if not gateway.provider.offline:
        body.warning = await connection_warning(gateway)
    return answer(body)


async def connection_warning(gateway: Any) -> ConnectionFault | None:
    """Saved, but can the server be reached — the main one, then the task model's? The real
    cause when not (`model_unavailable` for a server that does not answer), instead of a
    later `model_metadata_unknown`."""
    task = gateway.task_provider
    servers = [gateway.provider] + ([task] if task and task.url != gateway.provider.url else [])
    for provider in servers:
        result = await gateway.test_connection(provider.name, provider.url, provider.model)
        if result.ok or not isinstance(result.error, ConnectionFault):
            continue
        log.warning(
            "saved model server does not answer",
            extra=fields(
                provider=provider.name,
                url=provider.url,
                model=provider.model,
                error=result.error.code,
            ),
        )
        return result.error
    return None


def setup(app: web.Application) -> None:
    app.router.add_put("/api/llm", put_llm)
