"""What the gateway tells about itself, as msgspec structs the API encodes: the model in use
(`ModelInfo`: `/api/health`, the journal's trace, log lines) and the settings panel's whole
view (`GatewayView`: `GET /api/llm`). Field order is the answer's key order.
"""

from __future__ import annotations

import msgspec

from app.llm.detect import Detected


class ModelInfo(msgspec.Struct, frozen=True):
    provider: str
    model: str | None
    offline: bool
    task_model: str | None = None  # the task model in use (None: the main model answers all)


class ConfiguredModel(msgspec.Struct, frozen=True):
    """The model choice as configured (what the next start uses; provider None:
    auto-detection, which takes the model named here)."""

    provider: str | None
    url: str | None
    model: str | None
    task_model: str | None = None
    task_url: str | None = None


class TaskModelView(msgspec.Struct, frozen=True):
    """The task model in use: its server, window and the purposes it answers."""

    model: str | None
    url: str | None
    remote: bool
    context_window: int | None
    purposes: list[str]


class ConnectionFault(msgspec.Struct, frozen=True):
    """Why a server could not be asked (a `ModelError`'s code and message)."""

    code: str
    message: str


class ConnectionResult(msgspec.Struct, frozen=True):
    """A connection test (`POST /api/llm/test`): the server's models, the model it would
    use and its window, or the error; what the outcome has not is left out."""

    ok: bool
    provider: str
    url: str
    models: list[str] | msgspec.UnsetType = msgspec.UNSET
    model: str | msgspec.UnsetType | None = msgspec.UNSET
    context_window: int | msgspec.UnsetType | None = msgspec.UNSET
    error: ConnectionFault | msgspec.UnsetType = msgspec.UNSET


class GatewayView(msgspec.Struct):
    """Everything the settings panel shows; no secrets (`api_key` is "set" or None)."""

    provider: str
    model: str | None
    offline: bool
    task_model: str | None
    url: str | None
    remote: bool
    auto_detect: bool
    detecting: bool
    detected: list[Detected]
    context_window: int | None
    task: TaskModelView | None  # None: no task model in use
    concurrency: int
    api_key: str | None
    message_limit: int | None
    default_urls: dict[str, str | None]  # what an empty URL stands for, per provider
    configured: ConfiguredModel
    # The connection test's warning, added by the API for a model that is not offline.
    warning: ConnectionFault | msgspec.UnsetType | None = msgspec.UNSET
