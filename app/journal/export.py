"""Every current journal entry as Markdown or JSON (`GET /api/journal/export`, seed 004 §11)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from aiohttp import web

EXPORT_KIND = "novaberg.journal_export"
FORMAT_VERSION = 1


def as_json(entries: Sequence[dict[str, Any]]) -> dict[str, Any]:
    return {
        "kind": EXPORT_KIND,
        "format_version": FORMAT_VERSION,
        "entries": [
            {
                "entry_id": e["entry_id"],
                "date": e["date"],
                "text": e["text"],
                "version_id": e["current_version_id"],
            }
            for e in entries
        ],
    }


def as_markdown(entries: Sequence[dict[str, Any]]) -> str:
    parts = [f"## {entry['date']}\n\n{entry['text'].strip()}\n" for entry in entries]
    return "# Journal\n\n" + "\n".join(parts)


def response(entries: Sequence[dict[str, Any]], fmt: Literal["md", "json"]) -> web.Response:
    disposition = f'attachment; filename="journal.{fmt}"'
    if fmt == "json":
        return web.json_response(as_json(entries), headers={"Content-Disposition": disposition})
    return web.Response(
        text=as_markdown(entries),
        content_type="text/markdown",
        charset="utf-8",
        headers={"Content-Disposition": disposition},
    )
