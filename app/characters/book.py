"""Character definitions: who the user talks to (design §0, §4, §11).

A character is a TOML file:

- `id`, `name`, `language` (de|en), an optional `description` (shown in the picker, never
  in a prompt — a card's `creator_notes`);
- `persona`: the text the responder speaks from — or a table `[persona]` of the four parts a
  character card gives (`system_prompt`, `description`, `personality`, `scenario`), composed
  by `compose_persona` in that order, personality and scenario with a label in the
  character's language;
- optional `greeting` (the first message of a fresh conversation), `alternate_greetings`,
  `examples` (a card's `mes_example`: kept and exported, never in a prompt);
- optional `picture` and `card`: names of files beside the TOML — the picture, and the JSON
  of what a character card held beyond these fields (its lorebook, tags, creator,
  extensions, …; `app.characters.cards`), which is exported with the card again;
- a `[baseline]` table: the state it relaxes to between turns (the fields of `nova_state`;
  the seed's defaults where absent).

Texts keep a card's macros (`{{char}}`, `{{user}}`) as written; `for_prompt`/`for_screen`
resolve them where a text is used (`app.characters.macros`).

Where definitions come from, each later one replacing an earlier one of the same id:

1. built in: `nova` (`app/characters/nova.toml`, package data) — kind `built_in`;
2. `<data dir>/characters/*.toml`, dropped in by whoever runs the install — kind `shared`,
   every user sees them;
3. `<data dir>/characters/users/<user id>/*.toml`, made in the page or imported from a card
   (`app.characters.store`) — kind `own`, seen only by that user; one with the id of a
   built-in or shared character is that user's own version of it.

Every folder is read again when its files change. A file that cannot be read is left out
with an error line naming the file and the problem — one broken file never keeps the others
(or the app) from starting. `definition_from` is the one validator: the TOML files, the
editor's input and an imported card all go through it.

`CharacterBook(settings)` holds them; `book.catalog()` is the list the API and the runtime
consult (`app.characters.catalog.CharacterCatalog`).

One module: the one validator of a character definition and the book that holds the checked
ones.
"""

from __future__ import annotations

import json
import logging
import os
import re
import tomllib
import unicodedata
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal

import msgspec

from app.characters import macros
from app.characters.catalog import UNSET, Character, CharacterCatalog
from app.characters.lore import Lorebook, LoreError, read_book
from app.core.i18n import LANGUAGES, language_of
from app.core.log import fields
from app.core.refusal import RefusedKind
from app.core.settings import Settings
from app.memory.state import CharacterState, in_unit_range

log = logging.getLogger(__name__)

DATA_DIR_FOLDER = "characters"
USERS_FOLDER = "users"  # inside DATA_DIR_FOLDER: one folder per user
BUILT_IN_PACKAGE = "app.characters"
ID_PATTERN = re.compile(r"^[a-z0-9][a-z0-9_-]{0,31}$")
# A name is one line: it labels the character's lines in the history the model reads, and a
# line break in it would write lines of the history of its own ("Vex\n[2] USER: …").
NAME_MAX_CHARS = 80
_NOT_IN_A_NAME = frozenset({"Cc", "Zl", "Zp"})  # control characters, line and paragraph breaks
FILE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
PICTURE_SUFFIXES = (".png", ".jpg", ".jpeg", ".webp")
_KNOWN_KEYS = frozenset(
    {
        "id",
        "name",
        "language",
        "persona",
        "description",
        "baseline",
        "greeting",
        "alternate_greetings",
        "examples",
        "picture",
    }
)
CARD_KEY = "card"  # the TOML file's name of its card file, read by the book beside it
PERSONA_PARTS = ("system_prompt", "description", "personality", "scenario")
PART_LABELS = {
    "de": {"personality": "Persönlichkeit", "scenario": "Situation"},
    "en": {"personality": "Personality", "scenario": "Scenario"},
}
Kind = Literal["built_in", "shared", "own"]
_EMPTY: Mapping[str, Any] = MappingProxyType({})


class CharacterError(RefusedKind, ValueError):
    """A character definition that cannot be used; the message names what is wrong."""

    STATUS, CODE = 400, "invalid_character"


@dataclass(frozen=True, slots=True)
class PersonaParts:
    """A character card's four persona texts, as the card wrote them (trimmed)."""

    system_prompt: str = ""
    description: str = ""
    personality: str = ""
    scenario: str = ""

    def as_dict(self) -> dict[str, str]:
        return {name: getattr(self, name) for name in PERSONA_PARTS}

    @property
    def only_description(self) -> bool:
        return not (self.system_prompt or self.personality or self.scenario)


def compose_persona(parts: PersonaParts, language: str) -> str:
    """The persona from a card's parts: system prompt, description, then personality and
    scenario each under its label, one paragraph each; empty parts are left out. A card with
    a description alone gives exactly that text."""
    labels = PART_LABELS[language_of(language)]
    pieces = [parts.system_prompt, parts.description]
    pieces += [
        f"{labels[name]}: {getattr(parts, name)}"
        for name in ("personality", "scenario")
        if getattr(parts, name)
    ]
    return "\n\n".join(piece for piece in pieces if piece)


@dataclass(frozen=True, slots=True)
class CharacterDefinition:
    id: str
    name: str
    language: str
    persona: str  # what the responder speaks from (composed when from a card's parts)
    description: str
    baseline: CharacterState
    source: str  # where it was read from (for logs)
    greeting: str = ""
    alternate_greetings: tuple[str, ...] = ()
    examples: str = ""
    persona_parts: PersonaParts | None = None  # a card's parts, when the persona is made of them
    picture: Path | None = None  # the picture file, when there is one
    card: Mapping[str, Any] = field(default_factory=lambda: _EMPTY)  # a card's other fields
    lore: Lorebook | None = None
    kind: Kind = "built_in"
    owner: str | None = None  # the user of an own character

    @property
    def call_name(self) -> str:
        """What `{{char}}` stands for: the card's nickname (V3), else the name."""
        nickname = self.card.get("nickname")
        return nickname.strip() if isinstance(nickname, str) and nickname.strip() else self.name

    def for_prompt(self, text: str) -> str:
        """A text of this definition as the model gets it (macros resolved)."""
        return macros.for_prompt(text, char=self.call_name, language=self.language)

    def for_screen(self, text: str) -> str:
        """A text of this definition as the user sees it (macros resolved)."""
        return macros.for_screen(text, char=self.call_name, language=self.language)

    @property
    def prompt_persona(self) -> str:
        return self.for_prompt(self.persona)

    def character(self) -> Character:
        """The catalog entry: what `GET /api/characters` shows (no persona text)."""
        return Character(
            id=self.id,
            name=self.name,
            language=self.language,
            kind=self.kind,
            picture=self.picture_version,
            description=self.description or UNSET,
            greeting=self.for_screen(self.greeting) if self.greeting else UNSET,
            alternate_greetings=[self.for_screen(g) for g in self.alternate_greetings] or UNSET,
        )

    @property
    def picture_version(self) -> str | None:
        """The picture's version, which changes with its file (its mtime); None: no picture.
        The API makes the address the page gets it from of it (`app.api.characters`)."""
        if self.picture is None:
            return None
        try:
            return str(self.picture.stat().st_mtime_ns)
        except OSError:
            return None

    def toml_data(self) -> dict[str, Any]:
        """The definition as its TOML file holds it (`definition_from` reads it back)."""
        data: dict[str, Any] = {"id": self.id, "name": self.name, "language": self.language}
        if self.description:
            data["description"] = self.description
        if self.persona_parts is not None:
            data["persona"] = self.persona_parts.as_dict()
        else:
            data["persona"] = self.persona
        if self.greeting:
            data["greeting"] = self.greeting
        if self.alternate_greetings:
            data["alternate_greetings"] = list(self.alternate_greetings)
        if self.examples:
            data["examples"] = self.examples
        if self.picture is not None:
            data["picture"] = self.picture.name
        data["baseline"] = baseline_data(self.baseline)
        return data


def baseline_data(state: CharacterState) -> dict[str, Any]:
    """The baseline's set fields by their stored names (no None, no empty text)."""
    return {
        name: value
        for name, value in msgspec.to_builtins(state).items()
        if value is not None and value != ""
    }


# --- the one validator -------------------------------------------------------------------------


def definition_from(
    data: Mapping[str, Any],
    source: str,
    *,
    folder: Path | None = None,
    card: Mapping[str, Any] | None = None,
    kind: Kind = "built_in",
    owner: str | None = None,
) -> CharacterDefinition:
    """One definition from its TOML shape (a TOML file, the editor's input, an imported card);
    `CharacterError` names the problem. `card`: what the `card` file holds (its JSON),
    `folder`: where `picture` is looked for."""
    unknown = sorted(set(data) - _KNOWN_KEYS)
    if unknown:
        raise CharacterError(f"unknown key(s) {', '.join(unknown)}")
    character_id = _required_str(data, "id")
    if not ID_PATTERN.match(character_id):
        raise CharacterError(f"id {character_id!r} must match {ID_PATTERN.pattern}")
    language = _required_str(data, "language")
    if language not in LANGUAGES:
        raise CharacterError(f"language {language!r} is not one of {', '.join(LANGUAGES)}")
    persona, parts = _persona(data.get("persona"), language)
    extras = _card(card)
    return CharacterDefinition(
        id=character_id,
        name=_name(data),
        language=language,
        persona=persona,
        persona_parts=parts,
        description=_optional_str(data, "description"),
        baseline=_baseline(data.get("baseline", {})),
        source=source,
        greeting=_optional_str(data, "greeting"),
        alternate_greetings=_str_list(data, "alternate_greetings"),
        examples=_optional_str(data, "examples"),
        picture=_picture(data.get("picture"), folder),
        card=MappingProxyType(extras),
        lore=_lore(extras),
        kind=kind,
        owner=owner,
    )


def parse_character(text: str, source: str, **context: Any) -> CharacterDefinition:
    """One definition from TOML text (`definition_from` checks it)."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise CharacterError(f"not valid TOML: {exc}") from None
    return definition_from(data, source, **context)


def _persona(value: Any, language: str) -> tuple[str, PersonaParts | None]:
    if isinstance(value, str) and value.strip():
        return _lines(value), None
    if isinstance(value, dict):
        unknown = sorted(set(value) - set(PERSONA_PARTS))
        if unknown:
            raise CharacterError(f"[persona]: unknown key(s) {', '.join(unknown)}")
        if not all(isinstance(v, str) for v in value.values()):
            raise CharacterError("[persona]: every part must be a string")
        parts = PersonaParts(**{k: _lines(v) for k, v in value.items()})
        persona = compose_persona(parts, language)
        if not persona:
            raise CharacterError("[persona]: every part is empty")
        return persona, (None if parts.only_description else parts)
    raise CharacterError(
        f"persona must be a non-empty string (or a [persona] table of {', '.join(PERSONA_PARTS)})"
    )


def _lines(value: str) -> str:
    """A text with its line breaks as `\\n` (a card written on Windows has `\\r\\n`, which
    a TOML file's multi-line string would not give back) and no white space around it."""
    return value.replace("\r\n", "\n").replace("\r", "\n").strip()


def _required_str(data: Mapping[str, Any], key: str) -> str:
    value = data.get(key)
    if not isinstance(value, str) or not value.strip():
        raise CharacterError(f"{key} must be a non-empty string")
    return _lines(value)


def _name(data: Mapping[str, Any]) -> str:
    name = _required_str(data, "name")
    if any(unicodedata.category(c) in _NOT_IN_A_NAME for c in name):
        raise CharacterError("name must be one line, without control characters")
    if len(name) > NAME_MAX_CHARS:
        raise CharacterError(f"name may have at most {NAME_MAX_CHARS} characters")
    return name


def _optional_str(data: Mapping[str, Any], key: str) -> str:
    value = data.get(key, "")
    if not isinstance(value, str):
        raise CharacterError(f"{key} must be a string")
    return _lines(value)


def _str_list(data: Mapping[str, Any], key: str) -> tuple[str, ...]:
    value = data.get(key, [])
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise CharacterError(f"{key} must be a list of strings")
    return tuple(item.replace("\r\n", "\n").replace("\r", "\n") for item in value)


def _picture(value: Any, folder: Path | None) -> Path | None:
    if value is None:
        return None
    if (
        not isinstance(value, str)
        or not FILE_NAME.match(value)
        or not value.lower().endswith(PICTURE_SUFFIXES)
    ):
        raise CharacterError(
            f"picture must be the name of a {'/'.join(PICTURE_SUFFIXES)} file beside the definition"
        )
    return (folder / value) if folder is not None else Path(value)


def _card(card: Mapping[str, Any] | None) -> dict[str, Any]:
    if card is None:
        return {}
    if not isinstance(card, Mapping):
        raise CharacterError("card: must be a JSON object")
    nickname = card.get("nickname")
    if nickname is not None and not isinstance(nickname, str):
        raise CharacterError("card: nickname must be a string")
    return dict(card)


def _lore(extras: Mapping[str, Any]) -> Lorebook | None:
    raw = extras.get("character_book")
    if raw is None:
        return None
    try:
        return read_book(raw)
    except LoreError as exc:
        raise CharacterError(f"card: {exc}") from None


def _baseline(table: Any) -> CharacterState:
    if not isinstance(table, dict):
        raise CharacterError("[baseline] must be a table")
    known = {f.encode_name for f in msgspec.structs.fields(CharacterState)}
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


# --- the book ----------------------------------------------------------------------------------

# A file as `os.stat` knows it: name, modification time, size and inode. A file replaced by
# another (the store renames a new one into place) has another inode even when the time and
# size happen to match.
Identity = tuple[str, int, int, int]
Signature = tuple[Identity, ...]


@dataclass(frozen=True, slots=True)
class _Read:
    """One definition as it was read, and the identities of the files it was read from (its
    TOML file, its card file, its picture): it is read again only when one of them changes."""

    definition: CharacterDefinition | None
    files: frozenset[Identity]


@dataclass(slots=True)
class _Folder:
    """One folder of definitions. A change in the folder reads again only the definitions
    whose files changed; the others are kept as they were read (`_Read`).

    `current()` may run on several threads at once (the API reads the list on a worker
    thread, the runtime on the loop): the signature and its definitions are replaced as one
    value, so a reader never pairs a signature with another one's definitions."""

    path: Path
    kind: Kind
    owner: str | None
    on_read: Callable[[], None]
    state: tuple[Signature | None, dict[str, CharacterDefinition]] = field(
        default_factory=lambda: (None, {})
    )
    reads: dict[str, _Read] = field(default_factory=dict)

    def current(self) -> dict[str, CharacterDefinition]:
        signature = _scan(self.path)
        known, by_id = self.state
        if signature == known:
            return by_id
        present = {identity[0]: identity for identity in signature}
        found: dict[str, CharacterDefinition] = {}
        reads: dict[str, _Read] = {}
        for name in present:
            if name.endswith(".toml"):
                kept = self.reads.get(name)
                if kept is None or not _unchanged(kept, present):
                    kept = self._read(name, present)
                reads[name] = kept
                if kept.definition is not None:
                    found[kept.definition.id] = kept.definition
        self.reads = reads
        self.state = (signature, found)
        return found

    def _read(self, name: str, present: Mapping[str, Identity]) -> _Read:
        self.on_read()
        definition, used = _read_file(self.path / name, self.kind, self.owner)
        files = {present.get(n, _absent(n)) for n in (name, *used)}
        return _Read(definition, frozenset(files))


def _unchanged(kept: _Read, present: Mapping[str, Identity]) -> bool:
    return all(present.get(f[0], _absent(f[0])) == f for f in kept.files)


def _absent(name: str) -> Identity:
    """The identity of a file that is not there (a picture named but missing): its coming
    is a change too."""
    return (name, -1, -1, -1)


def _scan(folder: Path) -> Signature:
    """Every file's identity (a definition, its card, its picture)."""
    try:
        with os.scandir(folder) as entries:
            found = []
            for entry in entries:
                if entry.is_file():
                    stat = entry.stat()
                    found.append((entry.name, stat.st_mtime_ns, stat.st_size, stat.st_ino))
    except OSError:
        return ()
    return tuple(sorted(found))


class CharacterBook:
    """Every usable character definition, by id: the built-in ones, the data dir's shared
    ones and each user's own (see the module docstring for the order)."""

    def __init__(self, settings: Settings) -> None:
        # In the files dir (the data dir unless `files_dir`): every process of an install
        # that shares one sees the characters any of them stored.
        self.folder = settings.files_path / DATA_DIR_FOLDER if settings.data_dir else None
        self._built_in = {
            d.id: d
            for d in (parse_character(text, f"built-in {name}") for name, text in built_in_files())
        }
        self._shared = (
            _Folder(self.folder, "shared", None, self._count_read) if self.folder else None
        )
        self._users: dict[str, _Folder] = {}
        # How many definition files were read (parsed) since start: a change re-reads only
        # the files that changed, and the tests hold it to that.
        self.files_read = 0

    def _count_read(self) -> None:
        self.files_read += 1

    def user_folder(self, user_id: str) -> Path | None:
        """Where `user_id`'s own definitions live (None without a data dir)."""
        return self.folder / USERS_FOLDER / user_id if self.folder is not None else None

    def built_in(self, character_id: str) -> CharacterDefinition | None:
        return self._built_in.get(character_id)

    def shared(self, character_id: str) -> CharacterDefinition | None:
        """The definition every user sees under this id (built in or dropped in)."""
        found = self._shared.current().get(character_id) if self._shared else None
        return found or self._built_in.get(character_id)

    def own(self, user_id: str, character_id: str) -> CharacterDefinition | None:
        return self._own(user_id).get(character_id)

    def get(self, user_id: str, character_id: str) -> CharacterDefinition | None:
        return self._own(user_id).get(character_id) or self.shared(character_id)

    def all(self, user_id: str) -> list[CharacterDefinition]:
        """The user's characters: built in, shared, own — an own version in the place of the
        one it replaces."""
        found = dict(self._built_in)
        if self._shared is not None:
            found.update(self._shared.current())
        found.update(self._own(user_id))
        return list(found.values())

    def _own(self, user_id: str) -> dict[str, CharacterDefinition]:
        folder = self.user_folder(user_id)
        if folder is None:
            return {}
        view = self._users.get(user_id)
        if view is None:
            view = self._users[user_id] = _Folder(folder, "own", user_id, self._count_read)
        return view.current()

    def catalog(self) -> CharacterCatalog:
        """The list the API and the runtime consult, always current."""
        return LiveCatalog(self)


class LiveCatalog(CharacterCatalog):
    """`app.characters.catalog.CharacterCatalog` over a `CharacterBook`."""

    def __init__(self, book: CharacterBook) -> None:
        super().__init__([])
        self.book = book

    def get(self, user_id: str, character_id: str) -> Character | None:
        definition = self.book.get(user_id, character_id)
        return self._entry(definition) if definition is not None else None

    def all(self, user_id: str) -> list[Character]:
        return [self._entry(d) for d in self.book.all(user_id)]

    def _entry(self, definition: CharacterDefinition) -> Character:
        entry = definition.character()
        if definition.kind == "own":  # the user's own version of a built-in or shared one
            original = self.book.shared(definition.id)
            entry.replaces = original.kind if original is not None else None
        return entry


def built_in_files() -> list[tuple[str, str]]:
    """(name, text) of every character shipped as package data."""
    folder = resources.files(BUILT_IN_PACKAGE)
    return sorted(
        (entry.name, entry.read_text(encoding="utf-8"))
        for entry in folder.iterdir()
        if entry.name.endswith(".toml")
    )


def read_card_file(path: Path) -> dict[str, Any]:
    """The JSON object of a definition's `card` file; `CharacterError` names the problem."""
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CharacterError(f"card file {path.name} is missing") from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise CharacterError(f"card file {path.name} cannot be read: {exc}") from None
    if not isinstance(value, dict):
        raise CharacterError(f"card file {path.name} is not a JSON object")
    return value


def _read_file(
    path: Path, kind: Kind, owner: str | None
) -> tuple[CharacterDefinition | None, tuple[str, ...]]:
    """The definition in `path` (None when it cannot be used, with an error line) and the
    names of the files beside it that it was read from (its card file, its picture)."""
    used: list[str] = []
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        card_name = data.pop(CARD_KEY, None)
        if card_name is not None and (
            not isinstance(card_name, str) or not FILE_NAME.match(card_name)
        ):
            raise CharacterError("card must be the name of a JSON file beside the definition")
        if isinstance(data.get("picture"), str):
            used.append(data["picture"])
        if card_name:
            used.append(card_name)
        card = read_card_file(path.parent / card_name) if card_name else None
        definition = definition_from(
            data, str(path), folder=path.parent, card=card, kind=kind, owner=owner
        )
    except (OSError, UnicodeDecodeError) as exc:
        problem = f"cannot read: {exc}"
    except tomllib.TOMLDecodeError as exc:
        problem = f"not valid TOML: {exc}"
    except CharacterError as exc:
        problem = str(exc)
    else:
        if definition.picture is not None and not definition.picture.is_file():
            log.error(
                "character picture missing; shown without one",
                extra=fields(file=str(path), picture=str(definition.picture)),
            )
            definition = replace(definition, picture=None)
        return definition, tuple(used)
    log.error("character definition left out", extra=fields(file=str(path), problem=problem))
    return None, tuple(used)
