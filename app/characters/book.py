"""Character definitions: who the user talks to (SPEC §0, §4).

A character is a TOML file: `id`, `name`, `language`, `persona` (the text the responder
speaks from), an optional `description`, and a `[baseline]` table — the state it relaxes to
between turns (the fields of `nova_state`; the seed's defaults where absent).

`nova` is built in (`app/characters/nova.toml`, package data). More are dropped into
`<data dir>/characters/*.toml` (read again when the folder's files change); a file there with
a built-in id replaces the built-in one. A
file that cannot be read is left out with an error line naming the file and the problem —
one broken file never keeps the others (or the app) from starting.

`CharacterBook(settings)` holds them; `book.catalog()` is the list the API and the runtime
consult (`app.characters.catalog.CharacterCatalog`).
"""

from __future__ import annotations

import logging
import re
import tomllib
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import msgspec

from app.characters.catalog import Character, CharacterCatalog
from app.core.i18n import LANGUAGES
from app.core.log import fields
from app.core.settings import Settings
from app.memory.state import CharacterState, in_unit_range

log = logging.getLogger(__name__)

DATA_DIR_FOLDER = "characters"
BUILT_IN_PACKAGE = "app.characters"
ID_PATTERN = re.compile(r"^[a-z0-9][a-z0-9_-]{0,31}$")
_KNOWN_KEYS = frozenset({"id", "name", "language", "persona", "description", "baseline"})


class CharacterError(ValueError):
    """A character definition that cannot be used; the message names what is wrong."""


@dataclass(frozen=True, slots=True)
class CharacterDefinition:
    id: str
    name: str
    language: str
    persona: str
    description: str
    baseline: CharacterState
    source: str  # where it was read from (for logs)

    def character(self) -> Character:
        """The catalog entry: what `GET /api/characters` shows (no persona text)."""
        extra = {"description": self.description} if self.description else {}
        return Character(id=self.id, name=self.name, language=self.language, extra=extra)


class CharacterBook:
    """Every usable character definition, by id: the built-in ones and the data dir's.

    The data dir's folder is read again when its files change (a file dropped in adds a
    character, a removed file takes it away), so a lookup always sees what is there now.
    """

    def __init__(self, settings: Settings) -> None:
        self.folder = Path(settings.data_dir) / DATA_DIR_FOLDER if settings.data_dir else None
        self._built_in = {d.id: d for d in (parse_character(text, f"built-in {name}")
                                            for name, text in built_in_files())}
        self._signature: tuple[tuple[str, float], ...] | None = None
        self._by_id: dict[str, CharacterDefinition] = dict(self._built_in)
        self.refresh()

    def get(self, character_id: str) -> CharacterDefinition | None:
        self.refresh()
        return self._by_id.get(character_id)

    def all(self) -> list[CharacterDefinition]:
        self.refresh()
        return list(self._by_id.values())

    def refresh(self) -> None:
        """Re-read the data dir's definitions if a file was added, removed or changed."""
        signature = self._scan()
        if signature == self._signature:
            return
        self._signature = signature
        found = dict(self._built_in)
        for name, _ in signature:
            definition = _read_file(Path(name))
            if definition is not None:
                found[definition.id] = definition
        self._by_id = found

    def _scan(self) -> tuple[tuple[str, float], ...]:
        if self.folder is None:
            return ()
        try:
            paths = sorted(self.folder.glob("*.toml"))
        except OSError:
            return ()
        signature = []
        for path in paths:
            try:
                signature.append((str(path), path.stat().st_mtime))
            except OSError:
                continue
        return tuple(signature)

    def catalog(self) -> CharacterCatalog:
        """The list the API and the runtime consult, always current."""
        return LiveCatalog(self)


class LiveCatalog(CharacterCatalog):
    """`app.characters.catalog.CharacterCatalog` over a `CharacterBook`."""

    def __init__(self, book: CharacterBook) -> None:
        super().__init__([])
        self.book = book

    def get(self, character_id: str) -> Character | None:
        definition = self.book.get(character_id)
        return definition.character() if definition is not None else None

    def all(self) -> list[Character]:
        return [d.character() for d in self.book.all()]


def parse_character(text: str, source: str) -> CharacterDefinition:
    """One definition from TOML text; `CharacterError` names the problem."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise CharacterError(f"not valid TOML: {exc}") from None
    unknown = sorted(set(data) - _KNOWN_KEYS)
    if unknown:
        raise CharacterError(f"unknown key(s) {', '.join(unknown)}")
    character_id = _required_str(data, "id")
    if not ID_PATTERN.match(character_id):
        raise CharacterError(f"id {character_id!r} must match {ID_PATTERN.pattern}")
    language = _required_str(data, "language")
    if language not in LANGUAGES:
        raise CharacterError(f"language {language!r} is not one of {', '.join(LANGUAGES)}")
    description = data.get("description", "")
    if not isinstance(description, str):
        raise CharacterError("description must be a string")
    return CharacterDefinition(
        id=character_id, name=_required_str(data, "name"), language=language,
        persona=_required_str(data, "persona"), description=description.strip(),
        baseline=_baseline(data.get("baseline", {})), source=source)


def _required_str(data: dict[str, Any], key: str) -> str:
    value = data.get(key)
    if not isinstance(value, str) or not value.strip():
        raise CharacterError(f"{key} must be a non-empty string")
    return value.strip()


def _baseline(table: Any) -> CharacterState:
    if not isinstance(table, dict):
        raise CharacterError("[baseline] must be a table")
    known = {field.encode_name for field in msgspec.structs.fields(CharacterState)}
    unknown = sorted(set(table) - known)
    if unknown:
        raise CharacterError(f"[baseline]: unknown key(s) {', '.join(unknown)}")
    try:
        # Clocks are the character's own time, never part of a definition.
        state = msgspec.convert(table, CharacterState, strict=True)
    except msgspec.ValidationError as exc:
        raise CharacterError(f"[baseline]: {exc}") from None
    if not in_unit_range(state.arousal):
        raise CharacterError(f"[baseline] arousal {state.arousal} is outside [0.0, 1.0]")
    if state.turn_time is not None or state.user_time is not None:
        raise CharacterError("[baseline] must not set turn_zeit or nutzer_zeit")
    return state


def built_in_files() -> list[tuple[str, str]]:
    """(name, text) of every character shipped as package data."""
    folder = resources.files(BUILT_IN_PACKAGE)
    return sorted((entry.name, entry.read_text(encoding="utf-8"))
                  for entry in folder.iterdir() if entry.name.endswith(".toml"))


def _read_file(path: Path) -> CharacterDefinition | None:
    try:
        return parse_character(path.read_text(encoding="utf-8"), str(path))
    except (OSError, UnicodeDecodeError) as exc:
        problem = f"cannot read: {exc}"
    except CharacterError as exc:
        problem = str(exc)
    log.error("character definition left out", extra=fields(file=str(path), problem=problem))
    return None
