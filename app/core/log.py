"""Structured JSON log lines.

Every line is one JSON object with `ts`, `level`, `logger`, `msg`, the context of the
running request or turn (`request_id`, `turn_id`, `pair` = "user_id:character_id") when set,
and the fields given with `extra=fields(...)`. Secrets never reach a log line: nothing here
formats settings or headers on its own.

Lines are formatted and written by a listener thread (`QueueHandler` → `QueueListener`):
the event loop only hands over the record, so a slow or blocked stdout never stalls it.
The request/turn context is read from the contextvars when the record is made, on the
logging thread's caller, and travels on the record.
"""

from __future__ import annotations

import atexit
import contextvars
import json
import logging
import logging.handlers
import queue
import re
import sys
import time
from typing import Any

import msgspec

request_id: contextvars.ContextVar[str | None] = contextvars.ContextVar("request_id", default=None)
turn_id: contextvars.ContextVar[str | None] = contextvars.ContextVar("turn_id", default=None)
pair: contextvars.ContextVar[str | None] = contextvars.ContextVar("pair", default=None)

_CONTEXT = (("request_id", request_id), ("turn_id", turn_id), ("pair", pair))


def fields(**values: Any) -> dict[str, Any]:
    """`log.info("msg", extra=fields(turn_id=..., pair=...))`."""
    return {"fields": values}


# msgspec, not json.dumps: a log line is written on every request and model call, and this
# is several times faster; values of unknown types are logged as their str().
_ENCODER = msgspec.json.Encoder(enc_hook=str)


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "ts": round(record.created, 3),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        for name, _ in _CONTEXT:
            value = getattr(record, name, None)
            if value is not None:
                line[name] = value
        line.update(getattr(record, "fields", None) or {})
        if record.exc_info:
            line["exc"] = self.formatException(record.exc_info)
        try:
            return _ENCODER.encode(line).decode()
        except (TypeError, ValueError):  # e.g. a dict with non-string keys in the fields
            return json.dumps(line, ensure_ascii=False, default=str)


# What must not reach a terminal as it is: C0 and C1 controls and DEL (a newline would start
# a forged line, an ANSI escape could clear or recolour the screen), line and paragraph
# separators, and the bidi controls that make text read other than it is.
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
# A field value shown as it is: no space, quote, `=` or backslash (else it could forge a field).
_PLAIN_VALUE = re.compile(
    r'[^\s"=\\\x00-\x1f\x7f-\x9f\u2028\u2029\u061c\u200e\u200f'
    r"\u202a-\u202e\u2066-\u2069]+"
)
_NAMED_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape_char(match: re.Match[str]) -> str:
    char = match.group()
    return _NAMED_ESCAPES.get(char) or (
        f"\\x{ord(char):02x}" if ord(char) < 0x100 else f"\\u{ord(char):04x}"
    )


def escaped(text: str) -> str:
    """`text` with every character that could forge or disguise a terminal line shown as
    an escape (`\\n`, `\\x1b`, `\\u202e`)."""
    return _UNSAFE.sub(_escape_char, text)


def shown_value(value: Any) -> str:
    """A field value for the text log: as it is when plain, else quoted with `"` and `\\`
    escaped too — one token that cannot end early or start a line."""
    text = str(value)
    if _PLAIN_VALUE.fullmatch(text):
        return text
    return '"' + escaped(text.replace("\\", "\\\\").replace('"', '\\"')) + '"'


class TextFormatter(logging.Formatter):
    """One short human-readable line (desktop terminal): time, level, message, fields.

    Whatever a value holds, it stays within its line: messages and values are escaped
    (`escaped`, `shown_value`), and a traceback's lines are indented under the record with
    `  | `, so that even an exception message cannot write a line of its own."""

    def format(self, record: logging.LogRecord) -> str:
        extra = dict(getattr(record, "fields", None) or {})
        for name, _ in _CONTEXT:
            value = getattr(record, name, None)
            if value is not None:
                extra[name] = value
        shown = " ".join(f"{k}={shown_value(v)}" for k, v in extra.items() if v is not None)
        level = "" if record.levelno == logging.INFO else f"{record.levelname.lower()}: "
        line = (
            f"{time.strftime('%H:%M:%S', time.localtime(record.created))} {level}"
            f"{escaped(record.getMessage())}{'  ' + shown if shown else ''}"
        )
        if record.exc_info:
            line += "".join(
                f"\n  | {escaped(part)}"
                for part in self.formatException(record.exc_info).splitlines()
            )
        return line


class _ContextFilter(logging.Filter):
    """Copies the request/turn context onto the record while still in the caller's context."""

    def filter(self, record: logging.LogRecord) -> bool:
        for name, var in _CONTEXT:
            if getattr(record, name, None) is None:
                setattr(record, name, var.get())
        return True


class _DeferredQueueHandler(logging.handlers.QueueHandler):
    def prepare(self, record: logging.LogRecord) -> logging.LogRecord:
        return record  # formatting happens in the listener thread, off the event loop


_listener: logging.handlers.QueueListener | None = None


def configure(level: str = "info", stream: Any = None, text: bool = False) -> None:
    """JSON lines (headless default), or short text lines (`text`, the desktop terminal)."""
    global _listener
    stop()
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(TextFormatter() if text else JsonFormatter())
    records: queue.SimpleQueue[logging.LogRecord] = queue.SimpleQueue()
    _listener = logging.handlers.QueueListener(records, handler)
    _listener.start()
    deferred = _DeferredQueueHandler(records)
    deferred.addFilter(_ContextFilter())
    root = logging.getLogger()
    root.handlers[:] = [deferred]
    root.setLevel(level.upper())
    # aiohttp's access log duplicates our request log line.
    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)
    # The state machine library reports every transition at info: that is debug chatter.
    logging.getLogger("transitions").setLevel(
        logging.DEBUG if level.upper() == "DEBUG" else logging.WARNING
    )


def stop() -> None:
    """Write out every queued line and end the listener thread (also run at exit)."""
    global _listener
    if _listener is not None:
        _listener.stop()
        _listener = None


atexit.register(stop)


def monotonic_ms(start: float) -> float:
    return round((time.perf_counter() - start) * 1000, 3)
