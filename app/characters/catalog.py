"""The characters a user can talk to, as the API and the runtime see them.

`app[CHARACTERS]` holds the catalog. In the running product it is the pipeline's catalog
over the TOML character definitions (`app.characters.book`: `nova` built in, more from
`<data dir>/characters/`, and each user's own); `default_catalog()`, with `nova` alone,
serves the runtime's own tests and benchmarks, which run without the pipeline.
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
    """The characters a user can talk to. This fixed list is the same for every user (the
    runtime's tests and benchmarks); the product's (`app.characters.book.LiveCatalog`) adds
    each user's own characters."""

    def __init__(self, characters: list[Character]) -> None:
        self._by_id = {c.id: c for c in characters}

    def get(self, user_id: str, character_id: str) -> Character | None:
        return self._by_id.get(character_id)

    def all(self, user_id: str) -> list[Character]:
        return list(self._by_id.values())


def default_catalog() -> CharacterCatalog:
    return CharacterCatalog([Character(id="nova", name="Nova")])
