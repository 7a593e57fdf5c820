"""The characters a user can talk to, as the API and the runtime see them.

`app[CHARACTERS]` holds the catalog. In the running product it is the pipeline's catalog
over the TOML character definitions (`app.characters.book`: `nova` built in, more from
`<data dir>/characters/`, and each user's own); `default_catalog()`, with `nova` alone,
serves the runtime's own tests and benchmarks, which run without the pipeline.
"""

from __future__ import annotations

import msgspec

UNSET = msgspec.UNSET


class Character(msgspec.Struct):
    """A catalog entry, also its read model (`GET /api/characters`: no persona text). What a
    definition does not have is UNSET: left out of the answer, never null; the runtime's own
    catalog (`default_catalog`) has only id, name and language. Field order is the answer's
    key order."""

    id: str
    name: str
    language: str = "de"
    kind: str | msgspec.UnsetType = UNSET
    # The picture's version (`CharacterDefinition.picture_version`; None: no picture), which
    # the API answers as the picture's address.
    picture: str | msgspec.UnsetType | None = UNSET
    description: str | msgspec.UnsetType = UNSET
    greeting: str | msgspec.UnsetType = UNSET  # as shown (macros filled in)
    alternate_greetings: list[str] | msgspec.UnsetType = UNSET
    replaces: str | msgspec.UnsetType | None = UNSET  # an own version: the original's kind


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
