"""The diaries the import tests read: the Day One sample (tests/data/dayone: Journal.json and
photos/, as Day One's zip writes them) and the Markdown folder (tests/data/markdown_diary)."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path
from typing import Any

DATA = Path(__file__).parent.parent / "data"
DAYONE = DATA / "dayone"
MARKDOWN = DATA / "markdown_diary"
DAYONE_JSON = (DAYONE / "Journal.json").read_bytes()
PHOTOS = sorted((DAYONE / "photos").iterdir())


def dayone_document() -> dict[str, Any]:
    return json.loads(DAYONE_JSON)


def dayone_bytes(document: dict[str, Any]) -> bytes:
    return json.dumps(document, ensure_ascii=False).encode()


def zipped(files: dict[str, bytes], compression: int = zipfile.ZIP_DEFLATED) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression) as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def dayone_zip(journal: bytes = DAYONE_JSON, photos: bool = True) -> bytes:
    """The zip Day One writes: `Journal.json` and `photos/<md5>.jpeg`."""
    files = {"Journal.json": journal}
    if photos:
        files.update({f"photos/{path.name}": path.read_bytes() for path in PHOTOS})
    return zipped(files)


def markdown_zip() -> bytes:
    """The Markdown folder zipped as a file manager does: under its own folder name."""
    return zipped({f"tagebuch/{path.relative_to(MARKDOWN).as_posix()}": path.read_bytes()
                   for path in sorted(MARKDOWN.rglob("*.md"))})
