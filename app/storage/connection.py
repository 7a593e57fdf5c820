"""The connection the store hands a query function, as a type both engines satisfy.

`sqlite3.Connection` and `app.storage.database.PgConnection` speak the same DB-API subset
(`execute` with `?` placeholders, `executemany`, `with conn:` as a transaction); a function
that runs on either engine takes a `Connection`. A migration gets only `Executes`: on
PostgreSQL it runs on a wrapper that rewrites its table statements
(`app.storage.migrations`), inside the one transaction that `apply_migrations` holds.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from types import TracebackType
from typing import Any, Protocol, Self


class Executes(Protocol):
    """What a migration does with its connection: statements, one or many rows each."""

    def execute(self, sql: str, params: Sequence[Any] = ..., /) -> Any: ...

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]], /) -> Any: ...


class Connection(Executes, Protocol):
    """A connection of either engine: statements, `with conn:` as a transaction, `close`."""

    def __enter__(self) -> Self: ...

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
        /,
    ) -> bool | None: ...

    def rollback(self) -> None: ...

    def close(self) -> None: ...
