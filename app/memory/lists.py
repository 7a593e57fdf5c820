"""The notes agent's named lists, per pair: a Redis hash `lists:{user}:{character}` whose
fields are normalized list names and whose values are list JSON.

Changes are read-modify-write with a compare-and-set script: the new list is written only
if the field still holds exactly the text the change was computed from, so two writers never
lose each other's items; on a mismatch the script answers the current text and the change is
computed again. The first expectation is what this store's `all()` read (one round trip for
the usual "read the lists, then change one" of an agent run); a stale one only costs a retry.
Writers in the same process queue on a per-list lock first, so they do not spin.

An agent does not write: it computes what its command would do (`preview`) and returns the
intended `ListEdit`; the dispatcher applies it with the turn (`edit_write`, one part of the
turn's commit, `app.memory.commit`), so a turn the tribunal rejects changes no list.
Items keep the user's spelling; matching (duplicates, removal, list names) ignores case and
surrounding whitespace.

The user's own edits (the API: remove or rename an item, remove or rename a list) write at
once, with the same compare-and-set: a turn whose commit computed a list edit from the text
before the user's change sees the hash changed (its commit `WATCH`es the hash), and computes
the edit again from what the user left — neither change is lost. An item or a list that is
not there is `Missing`; a rename onto a name or item already there is a `Conflict`.
"""

from __future__ import annotations

import asyncio
import time
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import msgspec
import redis.asyncio as aioredis
from redis.asyncio.client import Pipeline
from redis.exceptions import WatchError

from app.memory import keys
from app.storage.errors import Conflict, Missing

ATTEMPTS = 10
_LOCKS: weakref.WeakValueDictionary[str, asyncio.Lock] = weakref.WeakValueDictionary()


class NamedList(msgspec.Struct, kw_only=True):
    name: str
    items: list[str] = msgspec.field(default_factory=list)
    created_at: float = 0.0
    updated_at: float = 0.0


@dataclass(slots=True)
class ListChange:
    """What one `apply` did, for the agent's report."""

    named: NamedList  # the list as the change left it
    created: bool = False
    added: list[str] = field(default_factory=list)
    already: list[str] = field(default_factory=list)  # asked to add, were there already
    removed: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)  # asked to remove, were not there
    cleared: int = 0


class ListEdit(msgspec.Struct, kw_only=True, tag="list_edit"):
    """A change an agent intends; the dispatcher applies it (order: clear, remove, add)."""

    list_name: str
    add: list[str] = msgspec.field(default_factory=list)
    remove: list[str] = msgspec.field(default_factory=list)
    clear: bool = False
    create: bool = True


_DECODER = msgspec.json.Decoder(NamedList)
_ENCODER = msgspec.json.Encoder()

# KEYS: lists hash · ARGV: field, expected present ("1"/"0"), expected text, new text
# → {1} written, or {0, present, current text} when the field holds something else.
_SET_IF_UNCHANGED = """
local current = redis.call('HGET', KEYS[1], ARGV[1])
local present = current and '1' or '0'
if present == ARGV[2] and (not current or current == ARGV[3]) then
  redis.call('HSET', KEYS[1], ARGV[1], ARGV[4])
  return {1}
end
return {0, present, current or ''}
"""


def normalize(name: str) -> str:
    return " ".join(name.split()).casefold()


class ListStores:
    """The named lists of every pair over one Redis, built once by the wiring: `of()` gives
    one pair's `ListStore` (a view that remembers what it read for its next write)."""

    def __init__(self, redis: aioredis.Redis) -> None:
        self.redis = redis

    def of(self, user_id: str, character_id: str) -> ListStore:
        return ListStore(self.redis, user_id, character_id)


class ListStore:
    def __init__(self, redis: aioredis.Redis, user_id: str, character_id: str) -> None:
        self.redis = redis
        self.key = keys.lists(user_id, character_id)
        self._set_if_unchanged = redis.register_script(_SET_IF_UNCHANGED)
        self._seen: dict[str, str] = {}  # field → text as `all()` read it: apply's first guess

    async def all(self) -> list[NamedList]:
        """Every list, oldest first."""
        stored = await self.redis.hgetall(self.key)
        self._seen = keys.text_hash(stored)
        lists = []
        for raw in stored.values():
            try:
                lists.append(_DECODER.decode(raw))
            except (msgspec.DecodeError, msgspec.ValidationError):
                continue
        return sorted(lists, key=lambda item: (item.created_at, item.name))

    def as_read(self, name: str) -> NamedList | None:
        """The list `name` as the last `all()` read it (None: it was not there). Raises
        `msgspec.DecodeError`/`ValidationError` for a stored list that cannot be read, which
        `all()` leaves out."""
        raw = self._seen.get(normalize(name))
        return _DECODER.decode(raw) if raw is not None else None

    async def get(self, name: str) -> NamedList | None:
        raw = await self.redis.hget(self.key, normalize(name))
        return _DECODER.decode(raw) if raw is not None else None

    async def apply(
        self,
        name: str,
        *,
        add: Sequence[str] = (),
        remove: Sequence[str] = (),
        clear: bool = False,
        create: bool = True,
    ) -> ListChange | None:
        """Change the list `name` (created when `create` and it does not exist yet; else None
        for a missing list). Order: clear, remove, add."""

        def compute(existing: NamedList | None) -> ListChange | None:
            if existing is None and not create:
                return None
            return _change(existing, name, add, remove, clear)

        return await self._update(name, compute)

    async def remove_item(self, name: str, item: str) -> NamedList:
        """The list without `item`; `Missing` when the list or the item is not there."""
        change = await self.apply(name, remove=[item], create=False)
        if change is None:
            raise Missing(f"there is no list {name!r}")
        if change.missing:
            raise Missing(f"{item!r} is not on the list {change.named.name!r}")
        return change.named

    async def replace_item(self, name: str, item: str, text: str) -> NamedList:
        """`item` replaced by `text` in its place. `Missing`: no such list or item;
        `Conflict` `item_exists`: `text` is another item of the list already."""

        def compute(existing: NamedList | None) -> ListChange:
            if existing is None:
                raise Missing(f"there is no list {name!r}")
            at = _find(existing.items, item)
            if at is None:
                raise Missing(f"{item!r} is not on the list {existing.name!r}")
            twin = _find(existing.items, text)
            if twin is not None and twin != at:
                raise Conflict("item_exists", f"{text!r} is on the list {existing.name!r} already")
            items = list(existing.items)
            items[at] = " ".join(text.split())
            return ListChange(
                named=msgspec.structs.replace(existing, items=items, updated_at=time.time())
            )

        change = await self._update(name, compute)
        assert change is not None
        return change.named

    async def merge(
        self, name: str, items: list[str], created_at: float = 0.0, updated_at: float = 0.0
    ) -> ListChange:
        """An import's step: the list `name` with the `items` it lacks added (created with
        the times it had elsewhere when it is not here). A list that lacks nothing is left
        as it is — its times too — and the change says so (nothing added)."""

        def compute(existing: NamedList | None) -> ListChange:
            change = _change(existing, name, items, [], False)
            if existing is None and created_at:
                change.named = msgspec.structs.replace(
                    change.named, created_at=created_at, updated_at=updated_at or created_at
                )
            elif existing is not None and not change.added:
                change.named = existing
            return change

        change = await self._update(name, compute)
        assert change is not None  # compute always makes one
        return change

    async def delete_list(self, name: str) -> None:
        """Remove the list `name` with its items; `Missing` when there is none."""
        if not await self.redis.hdel(self.key, normalize(name)):
            raise Missing(f"there is no list {name!r}")
        self._seen.pop(normalize(name), None)

    async def rename_list(self, name: str, new_name: str) -> NamedList:
        """The list `name`, called `new_name` from now on (its items and age kept).
        `Missing`: no such list; `Conflict` `list_exists`: another list has that name."""
        old_field, new_field = normalize(name), normalize(new_name)
        async with self.redis.pipeline(transaction=True) as pipe:
            for _ in range(ATTEMPTS):
                try:
                    await pipe.watch(self.key)
                    raw = await pipe.hget(self.key, old_field)
                    if raw is None:
                        raise Missing(f"there is no list {name!r}")
                    if new_field != old_field and await pipe.hexists(self.key, new_field):
                        raise Conflict("list_exists", f"there is a list {new_name!r} already")
                    renamed = msgspec.structs.replace(
                        _DECODER.decode(raw),
                        name=" ".join(new_name.split()),
                        updated_at=time.time(),
                    )
                    pipe.multi()
                    pipe.hdel(self.key, old_field)
                    pipe.hset(self.key, new_field, _ENCODER.encode(renamed))
                    await pipe.execute()
                    return renamed
                except WatchError:
                    continue
        raise RuntimeError(f"list {name!r} kept changing; gave up after {ATTEMPTS} attempts")

    async def _update(
        self, name: str, compute: Callable[[NamedList | None], ListChange | None]
    ) -> ListChange | None:
        """Write what `compute` makes of the list `name` (None: write nothing), compared and
        set against the text it was computed from; computed again when that changed."""
        field_name = normalize(name)
        lock = _LOCKS.setdefault(f"{self.key}\n{field_name}", asyncio.Lock())
        async with lock:
            return await self._compare_and_set(name, field_name, compute)

    def edit_write(self, edit: ListEdit) -> EditWrite:
        """`edit` as one part of a turn's commit; after it, `.change` says what it did (None:
        the list was not there and the edit does not create it)."""
        return EditWrite(self, edit)

    async def _compare_and_set(
        self, name: str, field_name: str, compute: Callable[[NamedList | None], ListChange | None]
    ) -> ListChange | None:
        raw = self._seen.get(field_name)
        if raw is None:  # not seen (or absent when seen): read it now
            fetched = await self.redis.hget(self.key, field_name)
            raw = None if fetched is None else keys.text(fetched)
        for _ in range(ATTEMPTS):
            change = compute(_DECODER.decode(raw) if raw is not None else None)
            if change is None:
                return None
            encoded = _ENCODER.encode(change.named).decode()
            answer = await self._set_if_unchanged(
                keys=[self.key], args=[field_name, "0" if raw is None else "1", raw or "", encoded]
            )
            if answer[0] == 1:
                self._seen[field_name] = encoded
                return change
            raw = answer[2] if answer[1] == "1" else None  # changed meanwhile: again from it
        raise RuntimeError(f"list {name!r} kept changing; gave up after {ATTEMPTS} attempts")


def preview(existing: NamedList | None, edit: ListEdit) -> ListChange:
    """What `edit` does to `existing` (None: the list does not exist yet), without writing."""
    return _change(existing, edit.list_name, edit.add, edit.remove, edit.clear)


class EditWrite:
    """One list edit inside a turn's commit: the list is read under `WATCH` and the edit
    computed from it, so a change made meanwhile is neither lost nor overwritten."""

    def __init__(self, store: ListStore, edit: ListEdit) -> None:
        self.key = store.key
        self.watch = (store.key,)
        self.edit = edit
        self.field = normalize(edit.list_name)
        self.change: ListChange | None = None
        self._encoded = ""

    async def read(self, pipe: Pipeline) -> None:
        raw = await pipe.hget(self.key, self.field)
        self.change = None
        if raw is None and not self.edit.create:
            return  # removed meanwhile: nothing to change
        try:
            existing = _DECODER.decode(raw) if raw is not None else None
        except (msgspec.DecodeError, msgspec.ValidationError):
            return  # overwritten with something unreadable meanwhile: not ours to replace
        self.change = preview(existing, self.edit)
        self._encoded = _ENCODER.encode(self.change.named).decode()

    def queue(self, pipe: Pipeline) -> None:
        if self.change is not None:
            pipe.hset(self.key, self.field, self._encoded)


def _change(
    existing: NamedList | None, name: str, add: Sequence[str], remove: Sequence[str], clear: bool
) -> ListChange:
    now = time.time()
    created = existing is None
    current = existing or NamedList(name=" ".join(name.split()), created_at=now)
    items = list(current.items)
    change = ListChange(named=current, created=created)
    if clear:
        change.cleared = len(items)
        items = []
    for item in remove:
        match = _find(items, item)
        if match is None:
            change.missing.append(item)
        else:
            change.removed.append(items.pop(match))
    for item in add:
        text = " ".join(item.split())
        if not text:
            continue
        if _find(items, text) is not None:
            change.already.append(text)
        else:
            items.append(text)
            change.added.append(text)
    change.named = NamedList(
        name=current.name, items=items, created_at=current.created_at, updated_at=now
    )
    return change


def _find(items: list[str], item: str) -> int | None:
    wanted = normalize(item)
    for index, existing in enumerate(items):
        if normalize(existing) == wanted:
            return index
    return None
