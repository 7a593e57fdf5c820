"""Structured JSON log lines.

Every line is one JSON object with `ts`, `level`, `logger`, `msg`, the context of the
running request or turn (`request_id`, `turn_id`, `pair` = "user_id:character_id") when set,
and the fields given with `extra=fields(...)`. Secrets never reach a log line: nothing here
formats settings or headers on its own.
"""

from __future__ import annotations

import contextvars
import json
import logging
import sys
import time
from typing import Any

request_id: contextvars.ContextVar[str | None] = contextvars.ContextVar("request_id", default=None)
turn_id: contextvars.ContextVar[str | None] = contextvars.ContextVar("turn_id", default=None)
pair: contextvars.ContextVar[str | None] = contextvars.ContextVar("pair", default=None)

_CONTEXT = (("request_id", request_id), ("turn_id", turn_id), ("pair", pair))


def fields(**values: Any) -> dict[str, Any]:
    """`log.info("msg", extra=fields(turn_id=..., pair=...))`."""
    return {"fields": values}


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "ts": round(record.created, 3),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        for name, var in _CONTEXT:
            value = var.get()
            if value is not None:
                line[name] = value
        line.update(getattr(record, "fields", None) or {})
        if record.exc_info:
            line["exc"] = self.formatException(record.exc_info)
        return json.dumps(line, ensure_ascii=False, default=str)


def configure(level: str = "info", stream: Any = None) -> None:
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    # aiohttp's access log duplicates our request log line.
    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)


def monotonic_ms(start: float) -> float:
    return round((time.perf_counter() - start) * 1000, 3)
