"""What a user does with characters — make one, change it, copy it, give it a picture,
import a character card, export one, delete one — as one set of blocking functions that the
API (in a worker thread) and the command line (`novaberg character …`) both call.

Rules a user meets here:

- every change goes through the one validator (`book.definition_from`): what the editor
  sends is held to the rules of a TOML file;
- a built-in or shared character (`nova`) cannot be broken: changing it makes the user's own
  version under the same id (their conversation stays the same, other users keep the
  original); deleting that version brings the original back; the original itself cannot be
  deleted, only copied;
- deleting an own character removes its definition, picture and card file; its conversation
  (the message log, the journal, long-term memory, lists and reminders) is kept — as every
  conversation is, since the journal is written from it — and a character made or imported
  later under the same id continues it;
- an import whose id is taken is refused (`CharacterExists`), nothing written: the user
  chooses another id.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import msgspec

from app.characters import cards, pictures
from app.characters.book import CharacterDefinition, CharacterError, baseline_data
from app.characters.cards import ImportedCard, slug
from app.characters.store import CharacterExists, CharacterStore
from app.core.refusal import RefusedKind

COPY_SUFFIXES = range(2, 100)


class UnknownCharacter(RefusedKind, LookupError):
    """No character of that id for this user: 404 `unknown_character`."""

    STATUS, CODE = 404, "unknown_character"


class BaselineFields(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """The baseline mood the editor sets (the state the character relaxes to)."""

    emotion: str = "neutral"
    arousal: float = 0.5
    mode: str = "alltag"


class CharacterFields(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """What the editor sends (`POST /api/characters`, `PUT /api/characters/{cid}`)."""

    id: str | None = None
    name: str
    language: str
    persona: str
    description: str = ""
    greeting: str = ""
    baseline: BaselineFields | None = None


class CopyFields(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    id: str | None = None
    name: str | None = None


@dataclass(frozen=True, slots=True)
class Export:
    body: bytes
    file_name: str
    content_type: str


class Baseline(msgspec.Struct):
    emotion: str
    arousal: float
    mode: str


class CharacterView(msgspec.Struct):
    """The editor's view of a character: everything it shows and edits, texts as written.
    The card's `creator`, `character_version` and `tags` are there only when the card has
    them (UNSET: left out of the answer)."""

    id: str
    name: str
    language: str
    kind: str
    picture: str | None  # its version (`CharacterDefinition.picture_version`): the API's address
    description: str
    persona: str
    greeting: str
    alternate_greetings: list[str]
    baseline: Baseline
    editable: bool
    deletable: bool
    replaces: str | None  # the kind of the built-in or shared one an own version replaces
    from_card: bool
    lore_entries: int
    creator: Any = msgspec.UNSET
    character_version: Any = msgspec.UNSET
    tags: Any = msgspec.UNSET


def describe(
    definition: CharacterDefinition, book_original: CharacterDefinition | None
) -> CharacterView:
    """The editor's view of `definition` (`book_original`: the book's one it may replace)."""
    card = definition.card
    return CharacterView(
        id=definition.id,
        name=definition.name,
        language=definition.language,
        kind=definition.kind,
        picture=definition.picture_version,
        description=definition.description,
        persona=definition.persona,
        greeting=definition.greeting,
        alternate_greetings=list(definition.alternate_greetings),
        baseline=Baseline(
            definition.baseline.emotion, definition.baseline.arousal, definition.baseline.mode
        ),
        editable=True,
        deletable=definition.kind == "own",
        replaces=(
            book_original.kind if definition.kind == "own" and book_original is not None else None
        ),
        from_card=bool(card) or definition.persona_parts is not None,
        lore_entries=len(definition.lore.entries) if definition.lore is not None else 0,
        creator=card.get("creator", msgspec.UNSET),
        character_version=card.get("character_version", msgspec.UNSET),
        tags=card.get("tags", msgspec.UNSET),
    )


class Characters:
    def __init__(self, store: CharacterStore) -> None:
        self.store = store
        self.book = store.book

    def view(self, user_id: str, definition: CharacterDefinition) -> CharacterView:
        return describe(definition, self.book.shared(definition.id))

    def find(self, user_id: str, character_id: str) -> CharacterDefinition:
        definition = self.book.get(user_id, character_id)
        if definition is None:
            raise UnknownCharacter(f"no character {character_id!r}")
        return definition

    # --- the editor ------------------------------------------------------------------------

    def create(self, user_id: str, fields: CharacterFields) -> CharacterDefinition:
        """A new character; without an id one is made from the name (free: "lena-2" when
        "lena" is taken); a given id that is taken is `CharacterExists`."""
        character_id = fields.id or self._free_id(user_id, slug(fields.name))
        return self.store.create(user_id, _data(fields, character_id=character_id))

    def update(
        self, user_id: str, character_id: str, fields: CharacterFields
    ) -> CharacterDefinition:
        if fields.id is not None and fields.id != character_id:
            raise CharacterError(
                f"the id of a character cannot change ({character_id!r}); "
                "copy it to give it another"
            )
        current = self.find(user_id, character_id)
        data = _data(fields, character_id=character_id, current=current)
        return self.store.save(user_id, data, card=dict(current.card) or None)

    def copy(self, user_id: str, character_id: str, fields: CopyFields) -> CharacterDefinition:
        current = self.find(user_id, character_id)
        name = (fields.name or "").strip() or f"{current.name} (2)"
        data = current.toml_data()
        data["name"] = name
        data["id"] = fields.id or self._free_id(user_id, slug(name))
        picture = (
            pictures.stored_png(current.picture.read_bytes())
            if current.picture is not None
            else None
        )
        return self.store.create(user_id, data, card=dict(current.card) or None, picture=picture)

    def _free_id(self, user_id: str, wanted: str) -> str:
        if self.book.get(user_id, wanted) is None:
            return wanted
        for n in COPY_SUFFIXES:
            candidate = f"{wanted[:28]}-{n}"
            if self.book.get(user_id, candidate) is None:
                return candidate
        raise CharacterExists(f"no free id like {wanted!r}; choose one")

    def set_picture(
        self, user_id: str, character_id: str, raw: bytes | None
    ) -> CharacterDefinition:
        """A new picture (any PNG, JPEG, WebP or GIF, stored as a PNG) or none."""
        current = self.find(user_id, character_id)
        picture = pictures.stored_png(raw) if raw is not None else None
        return self.store.save(
            user_id, current.toml_data(), card=dict(current.card) or None, picture=picture
        )

    def delete(self, user_id: str, character_id: str) -> CharacterDefinition | None:
        self.find(user_id, character_id)
        return self.store.delete(user_id, character_id)

    # --- cards ---------------------------------------------------------------------------

    def import_card(
        self, user_id: str, raw: bytes, *, character_id: str | None = None
    ) -> tuple[CharacterDefinition, list[str]]:
        """A character card (PNG or JSON) as a new character of the user; `CardError` or
        `CharacterError` name what is wrong, `CharacterExists` a taken id — nothing written."""
        return self.import_read(user_id, cards.read_card(raw, character_id=character_id))

    def import_read(
        self, user_id: str, imported: ImportedCard
    ) -> tuple[CharacterDefinition, list[str]]:
        """`import_card` for a card read already (the API reads it in a process of its own,
        `app.characters.apart`)."""
        definition = self.store.create(
            user_id, imported.data, card=imported.card or None, picture=imported.picture
        )
        warnings = list(imported.warnings)
        if definition.lore is not None:
            regex = [e.label for e in definition.lore.entries if e.use_regex]
            if regex:
                warnings.append(
                    "lorebook entries with regular-expression keys are kept but "
                    f"never triggered: {', '.join(regex)}"
                )
        return definition, warnings

    def export_card(self, user_id: str, character_id: str, spec: str, fmt: str) -> Export:
        checked_spec, checked_format = cards.check_exportable(spec, fmt)
        definition = self.find(user_id, character_id)
        stem = f"{definition.id}-card-{checked_spec}"
        if checked_format == "json":
            return Export(
                cards.card_json(definition, checked_spec), f"{stem}.json", "application/json"
            )
        picture = definition.picture.read_bytes() if definition.picture is not None else None
        return Export(cards.card_png(definition, checked_spec, picture), f"{stem}.png", "image/png")


def _data(
    fields: CharacterFields, *, character_id: str, current: CharacterDefinition | None = None
) -> dict[str, Any]:
    """The editor's fields in a definition's TOML shape; what the editor does not show (the
    alternate greetings, the examples, a card's persona parts while the persona is unchanged,
    the rest of the baseline) is taken from the current definition."""
    data: dict[str, Any] = current.toml_data() if current is not None else {}
    data.update(
        id=character_id,
        name=fields.name,
        language=fields.language,
        description=fields.description,
        greeting=fields.greeting,
    )
    unchanged = current is not None and fields.persona.strip() == current.persona
    if not unchanged:
        data["persona"] = fields.persona
    baseline = baseline_data(current.baseline) if current is not None else {}
    if fields.baseline is not None:
        baseline.update(msgspec.to_builtins(fields.baseline))
    data["baseline"] = baseline
    return {key: value for key, value in data.items() if value not in ("", None)} | {
        "persona": data.get("persona", "")
    }
