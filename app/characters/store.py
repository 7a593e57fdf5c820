"""A user's own characters on disk: `<data dir>/characters/users/<user id>/` holds, per
character, `<id>.toml` (the definition), `<id>.png` (its picture) and `<id>.card.json` (what a
character card held beyond the definition). The book (`app.characters.book`) reads the
folder again when its files change.

Everything is checked by the one validator (`book.definition_from`) before a file is
written, and written whole: each file goes to a temporary name first and is renamed into
place, the TOML last — the book never reads a definition whose picture or card file is not
there yet. A new character's TOML is linked into place only if no file of that id exists
(an id two requests both wanted goes to one of them; the other gets `CharacterExists`).

Blocking: the API calls it in a worker thread; the command line directly.
"""

from __future__ import annotations

import json
import os
import threading
import uuid
from dataclasses import replace
from pathlib import Path
from typing import Any

import tomli_w

from app.characters import pictures
from app.characters.book import (
    CARD_KEY,
    CharacterBook,
    CharacterDefinition,
    CharacterError,
    definition_from,
)

PICTURE_SUFFIX = ".png"
CARD_SUFFIX = ".card.json"


class CharacterExists(CharacterError):
    """The id is taken in the user's characters (built in, shared or their own)."""

    STATUS, CODE = 409, "character_exists"


class NotOwn(CharacterError):
    """The character is not one of the user's own (there is nothing of theirs to change)."""

    STATUS, CODE = 409, "not_own"


class NoDataDir(CharacterError):
    """The app runs without a data dir: there is nowhere to keep a character."""


KEEP = object()  # "leave the picture as it is"


class CharacterStore:
    def __init__(self, book: CharacterBook) -> None:
        self.book = book
        self._lock = threading.Lock()

    def folder(self, user_id: str) -> Path:
        folder = self.book.user_folder(user_id)
        if folder is None:
            raise NoDataDir("characters can only be kept with a data dir")
        return folder

    def check(
        self,
        user_id: str,
        data: dict[str, Any],
        *,
        card: dict[str, Any] | None = None,
    ) -> CharacterDefinition:
        """What `save` would store, checked by the one validator; nothing is written."""
        return definition_from(data, "input", card=card, kind="own", owner=user_id)

    def create(
        self,
        user_id: str,
        data: dict[str, Any],
        *,
        card: dict[str, Any] | None = None,
        picture: bytes | None = None,
    ) -> CharacterDefinition:
        """A new character of the user; `CharacterExists` when its id is taken."""
        definition = self.check(user_id, data, card=card)
        with self._lock:
            if self.book.get(user_id, definition.id) is not None:
                raise CharacterExists(
                    f"a character with the id {definition.id!r} exists already; choose another id"
                )
            return self._write(user_id, definition, card=card, picture=picture, new=True)

    def save(
        self,
        user_id: str,
        data: dict[str, Any],
        *,
        card: dict[str, Any] | None = None,
        picture: bytes | object | None = KEEP,
    ) -> CharacterDefinition:
        """The user's version of a character: their own one changed, or — for a built-in or
        shared one — a version of it that is only theirs (the original stays as it is)."""
        definition = self.check(user_id, data, card=card)
        with self._lock:
            if self.book.get(user_id, definition.id) is None:
                raise CharacterError(f"no character {definition.id!r}")
            return self._write(user_id, definition, card=card, picture=picture, new=False)

    def delete(self, user_id: str, character_id: str) -> CharacterDefinition | None:
        """Remove the user's own character (its files); returns the character the id names
        now — the built-in or shared one an own version replaced — or None."""
        with self._lock:
            if self.book.own(user_id, character_id) is None:
                raise NotOwn(f"{character_id!r} is not one of your own characters")
            folder = self.folder(user_id)
            for suffix in (".toml", PICTURE_SUFFIX, CARD_SUFFIX):  # the definition first
                (folder / f"{character_id}{suffix}").unlink(missing_ok=True)
        return self.book.get(user_id, character_id)

    def _write(
        self,
        user_id: str,
        definition: CharacterDefinition,
        *,
        card: dict[str, Any] | None,
        picture: bytes | object | None,
        new: bool,
    ) -> CharacterDefinition:
        folder = self.folder(user_id)
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        stem = definition.id
        picture_path = folder / f"{stem}{PICTURE_SUFFIX}"
        current = self.book.get(user_id, stem)
        picture_bytes = (
            picture if picture is None or isinstance(picture, bytes) else _picture_of(current)
        )  # anything else is KEEP
        if picture_bytes is not None:
            _put(picture_path, picture_bytes)
        elif not new:
            picture_path.unlink(missing_ok=True)
        toml_data = definition.toml_data()  # what the validator made of `data`, as a file
        toml_data.pop("picture", None)
        if picture_bytes is not None:
            toml_data["picture"] = picture_path.name
        card_path = folder / f"{stem}{CARD_SUFFIX}"
        if card:
            _put(card_path, json.dumps(card, ensure_ascii=False, indent=1).encode())
            toml_data[CARD_KEY] = card_path.name
        else:
            card_path.unlink(missing_ok=True)
        text = tomli_w.dumps(toml_data, multiline_strings=True).encode()
        target = folder / f"{stem}.toml"
        if new:
            _link_new(target, text)
        else:
            _put(target, text)
        # The book reads the changed files now, on this (worker) thread: else the first
        # message after the change would read them on the loop (`known_character`), and a
        # big card's parse is tens of milliseconds (bench/uploads.py).
        self.book.own(user_id, stem)
        return replace(
            definition,
            picture=picture_path if picture_bytes is not None else None,
            source=str(target),
        )


def _picture_of(definition: CharacterDefinition | None) -> bytes | None:
    """The current picture as this store keeps pictures (a shared definition's may be a
    JPEG or WebP: it becomes a PNG)."""
    if definition is None or definition.picture is None:
        return None
    try:
        raw = definition.picture.read_bytes()
    except OSError:
        return None
    return raw if pictures.is_png(raw) else pictures.stored_png(raw)


def _temporary(path: Path, content: bytes) -> Path:
    temporary = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.tmp")
    with open(temporary, "wb") as handle:
        handle.write(content)
        handle.flush()
        os.fsync(handle.fileno())
    temporary.chmod(0o600)
    return temporary


def _put(path: Path, content: bytes) -> None:
    os.replace(_temporary(path, content), path)


def _link_new(path: Path, content: bytes) -> None:
    temporary = _temporary(path, content)
    try:
        os.link(temporary, path)  # fails if the file exists: a new id is never overwritten
    except FileExistsError:
        raise CharacterExists(
            f"a character with the id {path.stem!r} exists already; choose another id"
        ) from None
    finally:
        temporary.unlink(missing_ok=True)
