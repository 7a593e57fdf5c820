"""The characters a user can talk to: the one list the API and the runtime consult.

Until character definitions are loaded from TOML (the pipeline issue), `nova` is the one
known character. Whoever adds definitions replaces `default_catalog()` (or the catalog put on
`app[CHARACTERS]`); nothing else spells a character id.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class Character:
    id: str
    name: str
    language: str = "de"
    extra: dict[str, Any] = field(default_factory=dict)

    def public(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "language": self.language, **self.extra}


class CharacterCatalog:
    def __init__(self, characters: list[Character]) -> None:
        self._by_id = {c.id: c for c in characters}

    def get(self, character_id: str) -> Character | None:
        return self._by_id.get(character_id)

    def all(self) -> list[Character]:
        return list(self._by_id.values())


def default_catalog() -> CharacterCatalog:
    return CharacterCatalog([Character(id="nova", name="Nova")])
