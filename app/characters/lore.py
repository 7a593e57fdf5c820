"""A character's lorebook: the `character_book` of a character card (Character Card V2, and the
V3 lorebook with its decorators), read into entries that enter the responder's prompt when
the conversation names them (design §11).

Why a keyword-triggered store beside the definition, not long-term memory: a lorebook is
written by the card's author about the character's world, and it is keyword-triggered by
design (keys, secondary keys, `constant`, `selective`, insertion order, `enabled`). Long-term
memory holds what *the user* told the character: the Pixie worker keeps only what the user's
own words carry, consolidation refreshes and supersedes it, the user edits and forgets it,
and the responder is told "the person told you this". Lore entries put there would be
dropped by those checks, attributed to the user, exported as the user's memories and lost
on "forget everything". Kept with the definition they are exported with the card again,
unchanged, and cost nothing at rest: selection is a scan of the last few turns.

What of a lorebook is used (the rest is kept as the card had it and exported again):

- an entry triggers when one of its `keys` appears in the last `scan_depth` texts of the
  conversation (the book's, else `DEFAULT_SCAN_DEPTH`; the current message counts), at word
  bounds, case-insensitive unless `case_sensitive`; with `selective` and `secondary_keys`
  one of those must appear too; `constant` entries always trigger; `enabled: false` never;
- with `recursive_scanning`, triggered entries' content is scanned too (`RECURSION_ROUNDS`);
- decorators (V3) at the top of `content`: `@@activate`, `@@dont_activate`,
  `@@activate_only_after N`, `@@activate_only_every N`, `@@scan_depth N`,
  `@@additional_keys a,b`, `@@exclude_keys a,b`, with `@@@` fallbacks; the others
  (`@@depth`, `@@position`, `@@role`, …) place text in ways the one prompt frame does not
  have, so their fallbacks are looked at and they are otherwise ignored. The decorator lines
  never reach the prompt;
- `use_regex` entries are kept but never trigger: a card's regular expression would run on
  the server's event loop, where one catastrophic pattern stalls every conversation;
- the budget (`within_budget`): whole entries only, by `priority`, then insertion order —
  the book's `token_budget` and the setting `lore_budget_chars`, the smaller one; what does
  not fit is left out and named in a warning; what is kept goes in insertion order.

One module: reading a lorebook and triggering its entries share the entry's shape and its
decorators.
"""

from __future__ import annotations

import logging
import math
import re
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import ahocorasick

from app.core.log import fields

log = logging.getLogger(__name__)

DEFAULT_SCAN_DEPTH = 4  # texts of the conversation a key is looked for in (the book may say)
# A card's lorebook holds tens of entries, a large world book hundreds; selection looks at
# every entry on every turn (about 25 µs each, bench/lore.py), so a book beyond this is
# refused on import.
MAX_ENTRIES = 2_000
# Keys: a real entry has a handful (names, a place and its spellings); a card's keys are all
# found in one Aho–Corasick pass over the scanned text (its cost is the text's length and the
# hits, not the book's keys), and every entry's keys are then looked up in what it found, so
# the keys are bounded too: per entry (keys, secondary and `@@additional_keys` /
# `@@exclude_keys` each) and in all (MAX_KEYS), refused on import. A book of more than
# OFF_LOOP_KEYS keys in all is scanned in a worker thread (bench/lore.py, bench/uploads.py).
MAX_KEYS_PER_ENTRY = 256
MAX_KEYS = 50_000
OFF_LOOP_KEYS = 2_000
# Keys per automaton: building one (`make_automaton`, C) holds the GIL throughout — ~190 ms
# for MAX_KEYS keys of two words, a stall of the loop while a worker thread builds it. In
# automatons of this many keys each build holds it ~2 ms, and a scan makes at most
# MAX_KEYS / AUTOMATON_KEYS passes over the (short) scanned text, a few milliseconds in all
# (bench/uploads.py: the first turn of a MAX_KEYS book kept /api/health under ~15 ms).
AUTOMATON_KEYS = 500
RECURSION_ROUNDS = 3  # recursive scanning: rounds of entries triggering entries
ENTRY_SEPARATOR = "\n"


class LoreError(ValueError):
    """A lorebook whose shape is not a lorebook's; the message names the place."""


@dataclass(frozen=True, slots=True)
class LoreEntry:
    index: int  # its place in the card's list (for logs)
    label: str  # name, comment or id, for logs
    keys: tuple[str, ...]
    secondary_keys: tuple[str, ...]
    content: str  # without decorator lines; macros as written
    enabled: bool = True
    constant: bool = False
    selective: bool = False
    insertion_order: float = 0.0
    priority: float | None = None
    case_sensitive: bool = False
    use_regex: bool = False
    # decorators
    force: bool = False  # @@activate
    never: bool = False  # @@dont_activate
    only_after: int | None = None  # @@activate_only_after
    only_every: int | None = None  # @@activate_only_every
    scan_depth: int | None = None  # @@scan_depth
    additional_keys: tuple[str, ...] = ()
    exclude_keys: tuple[str, ...] = ()

    @property
    def rank(self) -> tuple[float, float]:
        """Higher is kept first when the budget is short: by `priority` (V2: a lower one is
        dropped first; an entry without one comes after every entry with one), then by
        insertion order (V3: the lowest is dropped first)."""
        return (self.priority if self.priority is not None else -math.inf, self.insertion_order)


@dataclass(frozen=True, slots=True)
class Lorebook:
    entries: tuple[LoreEntry, ...]
    scan_depth: int | None = None
    token_budget: int | None = None
    recursive: bool = False
    # every key of the book, as written and lowered, in automatons of AUTOMATON_KEYS keys:
    # built at the first scan, not when the card is read (`keys`)
    _keys: _KeyIndex | None = field(default=None, init=False, repr=False, compare=False)
    _building: threading.Lock = field(
        default_factory=threading.Lock, init=False, repr=False, compare=False
    )

    @property
    def keys(self) -> _KeyIndex:
        """The book's key index, built once, at the first scan. Not when the card is read:
        a card may be read on the loop (the first message after it changed), and a big
        book's automatons take far longer than its parse (50 000 keys: ~150 ms against
        ~40 ms); the first scan of a big book runs in a worker thread
        (`app.pipeline.recall.triggered_lore`), so the build does too. The lock keeps two
        threads from building it twice."""
        index = self._keys
        if index is None:
            with self._building:
                index = self._keys
                if index is None:
                    index = _KeyIndex(self.entries)
                    object.__setattr__(self, "_keys", index)
        return index

    @property
    def size(self) -> int:
        """What a scan's cost grows with beside the text: the keys looked up, in all."""
        return sum(_key_count(entry) for entry in self.entries) + len(self.entries)


# --- reading ---------------------------------------------------------------------------------


def read_book(raw: Any) -> Lorebook:
    """A lorebook from the card's `character_book` object; `LoreError` names what is wrong.
    Lenient where card writers differ (keys as a comma-separated string, a missing
    `enabled`), strict where a value cannot mean anything (keys that are a number)."""
    if not isinstance(raw, dict):
        raise LoreError("character_book must be an object")
    entries = raw.get("entries", [])
    if not isinstance(entries, list):
        raise LoreError("character_book.entries must be a list")
    if len(entries) > MAX_ENTRIES:
        raise LoreError(
            f"character_book has {len(entries)} entries; at most {MAX_ENTRIES} are taken"
        )
    read = tuple(_entry(i, entry) for i, entry in enumerate(entries))
    keys = sum(_key_count(entry) for entry in read)
    if keys > MAX_KEYS:
        _refused("MAX_KEYS", keys, MAX_KEYS)
        raise LoreError(f"character_book has {keys} keys; at most {MAX_KEYS} are taken")
    return Lorebook(
        entries=read,
        scan_depth=_count(raw, "scan_depth", "character_book"),
        token_budget=_count(raw, "token_budget", "character_book"),
        recursive=_flag(raw, "recursive_scanning", "character_book", False),
    )


def _entry(index: int, raw: Any) -> LoreEntry:
    where = f"character_book entry {index + 1}"
    if not isinstance(raw, dict):
        raise LoreError(f"{where} must be an object")
    content = raw.get("content", "")
    if not isinstance(content, str):
        raise LoreError(f"{where}: content must be a string")
    text, decorators = split_decorators(content)
    label = next(
        (str(raw[k]) for k in ("name", "comment", "id") if raw.get(k) not in (None, "")),
        str(index + 1),
    )
    priority = raw.get("priority")
    if priority is not None and not _number(priority):
        raise LoreError(f"{where}: priority must be a number")
    order = raw.get("insertion_order", index)
    if not _number(order):
        raise LoreError(f"{where}: insertion_order must be a number")
    entry = LoreEntry(
        index=index,
        label=label,
        keys=_keys(raw.get("keys"), f"{where}: keys"),
        secondary_keys=_keys(raw.get("secondary_keys"), f"{where}: secondary_keys"),
        content=text,
        enabled=_flag(raw, "enabled", where, True),
        constant=_flag(raw, "constant", where, False),
        selective=_flag(raw, "selective", where, False),
        insertion_order=float(order),
        priority=None if priority is None else float(priority),
        case_sensitive=_flag(raw, "case_sensitive", where, False),
        use_regex=_flag(raw, "use_regex", where, False),
        force="activate" in decorators,
        never="dont_activate" in decorators,
        only_after=_decorator_count(decorators.get("activate_only_after")),
        only_every=_decorator_count(decorators.get("activate_only_every")),
        scan_depth=_decorator_count(decorators.get("scan_depth")),
        additional_keys=_split(decorators.get("additional_keys", "")),
        exclude_keys=_split(decorators.get("exclude_keys", "")),
    )
    for keys in (entry.keys, entry.secondary_keys, entry.additional_keys, entry.exclude_keys):
        if len(keys) > MAX_KEYS_PER_ENTRY:
            _refused("MAX_KEYS_PER_ENTRY", len(keys), MAX_KEYS_PER_ENTRY)
            raise LoreError(f"{where}: {len(keys)} keys; at most {MAX_KEYS_PER_ENTRY} are taken")
    return entry


def _key_count(entry: LoreEntry) -> int:
    return (
        len(entry.keys)
        + len(entry.secondary_keys)
        + len(entry.additional_keys)
        + len(entry.exclude_keys)
    )


def _refused(limit: str, found: int, bound: int) -> None:
    log.warning(
        "lorebook refused: over a limit", extra=fields(limit=limit, found=found, bound=bound)
    )


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _flag(raw: dict[str, Any], key: str, where: str, default: bool) -> bool:
    value = raw.get(key)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise LoreError(f"{where}: {key} must be true or false")
    return value


def _count(raw: dict[str, Any], key: str, where: str) -> int | None:
    value = raw.get(key)
    if value is None:
        return None
    if not _number(value) or value < 0:
        raise LoreError(f"{where}: {key} must be a number of 0 or more")
    return int(value)


def _keys(value: Any, where: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):  # V3's "multiple values separated by a comma"
        return _split(value)
    if not isinstance(value, list) or not all(isinstance(k, str) for k in value):
        raise LoreError(f"{where} must be a list of strings")
    return tuple(k.strip() for k in value if k.strip())


def _split(value: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in value.split(",") if part.strip())


# --- decorators (V3) -------------------------------------------------------------------------

# The decorators this selection acts on; any other is "not recognized", so its fallbacks are
# looked at (V3: an ignored decorator counts as not recognized).
USED_DECORATORS = frozenset(
    {
        "activate",
        "dont_activate",
        "activate_only_after",
        "activate_only_every",
        "scan_depth",
        "additional_keys",
        "exclude_keys",
    }
)
_DECORATOR = re.compile(r"^(@{2,3})([A-Za-z_]+)(?:[ \t]+(.*?))?[ \t]*$")


def split_decorators(content: str) -> tuple[str, dict[str, str]]:
    """The content without its leading decorator lines, and the decorators in force: of each
    `@@` line and the `@@@` fallbacks after it, the first one used here; of two of the same
    name, the first."""
    lines = content.split("\n")
    groups: list[list[tuple[str, str]]] = []
    taken = 0
    for line in lines:
        match = _DECORATOR.match(line.strip())
        if match is None:
            break
        taken += 1
        marks, name, value = match.group(1), match.group(2).lower(), match.group(3) or ""
        if len(marks) == 3 and groups:
            groups[-1].append((name, value))
        else:
            groups.append([(name, value)])
    found: dict[str, str] = {}
    for group in groups:
        chosen = next(((n, v) for n, v in group if n in USED_DECORATORS), None)
        if chosen is not None and chosen[0] not in found:
            found[chosen[0]] = chosen[1]
    return "\n".join(lines[taken:]).strip("\n"), found


def _decorator_count(value: str | None) -> int | None:
    if value is None:
        return None
    try:
        number = int(float(value))
    except ValueError:
        return None  # not a number: the decorator is ignored (V3)
    return number if number >= 0 else None


# --- selection -------------------------------------------------------------------------------


def triggered(book: Lorebook, recent: Sequence[str], *, character_turns: int) -> list[LoreEntry]:
    """The entries the conversation triggers. `recent`: its texts, oldest first, the current
    one last; `character_turns`: how many answers of the character it holds."""
    chosen: dict[int, LoreEntry] = {}
    depth = book.scan_depth if book.scan_depth is not None else DEFAULT_SCAN_DEPTH
    scanned: dict[int, _Scanned] = {}  # by scan depth: most entries share the book's

    def texts(scan: int) -> _Scanned:
        if scan not in scanned:
            scanned[scan] = _Scanned(book.keys, recent[-scan:] if scan > 0 else [])
        return scanned[scan]

    for entry in book.entries:
        if _triggers(entry, texts, depth, character_turns):
            chosen[entry.index] = entry
    if book.recursive:
        added = list(chosen.values())
        for _ in range(RECURSION_ROUNDS):  # each round scans what the one before added
            found = _Scanned(book.keys, (e.content for e in added))
            added = [
                e
                for e in book.entries
                if e.index not in chosen
                and _allowed(e, character_turns)
                and not e.constant
                and _keys_match(e, found)
            ]
            if not added:
                break
            chosen.update((e.index, e) for e in added)
    return sorted(chosen.values(), key=lambda e: (e.insertion_order, e.index))


def _allowed(entry: LoreEntry, character_turns: int) -> bool:
    if not entry.enabled or not entry.content.strip() or entry.use_regex:
        return False
    if entry.force:
        return True
    if entry.never:
        return False
    if entry.only_after is not None and character_turns < entry.only_after:
        return False
    return not (entry.only_every and character_turns % entry.only_every)


def _triggers(
    entry: LoreEntry, texts: Callable[[int], _Scanned], depth: int, character_turns: int
) -> bool:
    if not _allowed(entry, character_turns):
        return False
    if entry.force or entry.constant:
        return True
    return _keys_match(entry, texts(entry.scan_depth if entry.scan_depth is not None else depth))


def _keys_match(entry: LoreEntry, scanned: _Scanned) -> bool:
    if not scanned.text or not scanned.has_any(entry.keys, entry.case_sensitive):
        return False
    if (
        entry.selective
        and entry.secondary_keys
        and not scanned.has_any(entry.secondary_keys, entry.case_sensitive)
    ):
        return False
    if entry.additional_keys and not scanned.has_any(entry.additional_keys, entry.case_sensitive):
        return False
    return not scanned.has_any(entry.exclude_keys, entry.case_sensitive)


class _KeyIndex:
    """A book's keys in Aho–Corasick automatons: the case-sensitive entries' keys as
    written, the others' lowered (each found in the text as written or lowered), each set in
    automatons of at most AUTOMATON_KEYS keys."""

    __slots__ = ("exact", "lowered")

    def __init__(self, entries: Iterable[LoreEntry]) -> None:
        exact: set[str] = set()
        lowered: set[str] = set()
        for entry in entries:
            keys = (entry.keys, entry.secondary_keys, entry.additional_keys, entry.exclude_keys)
            if entry.case_sensitive:
                exact.update(key for group in keys for key in group)
            else:
                lowered.update(key.lower() for group in keys for key in group)
        self.exact = _automaton(exact)
        self.lowered = _automaton(lowered)


def _automaton(keys: set[str]) -> tuple[ahocorasick.Automaton, ...]:
    """`keys` in automatons of at most `AUTOMATON_KEYS` keys each (none for no keys)."""
    ordered = list(keys)
    built = []
    for start in range(0, len(ordered), AUTOMATON_KEYS):
        automaton = ahocorasick.Automaton()
        for key in ordered[start : start + AUTOMATON_KEYS]:
            automaton.add_word(key, key)
        automaton.make_automaton()
        built.append(automaton)
    return tuple(built)


def _found_keys(automatons: tuple[ahocorasick.Automaton, ...], text: str) -> frozenset[str]:
    """The keys found in `text` at word bounds where they begin or end with a word character
    ("cat" is not found in "category"; "Dr." is found before a space) — `\\w` as `re` reads
    it: one pass over the text per automaton (at most MAX_KEYS / AUTOMATON_KEYS), whatever
    the number of keys."""
    if not text:
        return frozenset()
    found: set[str] = set()
    hits = (hit for automaton in automatons for hit in automaton.iter(text))
    for last, key in hits:
        if key in found:
            continue
        start, end = last - len(key) + 1, last + 1
        if _is_word(key[0]) and start > 0 and _is_word(text[start - 1]):
            continue
        if _is_word(key[-1]) and end < len(text) and _is_word(text[end]):
            continue
        found.add(key)
    return frozenset(found)


class _Scanned:
    """Texts a selection looks for keys in, joined once, and the book's keys found in them
    (as written and lowered), each set made once, when first asked."""

    __slots__ = ("_exact", "_index", "_lowered", "text")

    def __init__(self, index: _KeyIndex, texts: Iterable[str]) -> None:
        self.text = "\n".join(texts)
        self._index = index
        self._exact: frozenset[str] | None = None
        self._lowered: frozenset[str] | None = None

    def has_any(self, keys: Sequence[str], case_sensitive: bool) -> bool:
        if case_sensitive:
            if self._exact is None:
                self._exact = _found_keys(self._index.exact, self.text)
            return any(key in self._exact for key in keys)
        if self._lowered is None:
            self._lowered = _found_keys(self._index.lowered, self.text.lower())
        return any(key.lower() in self._lowered for key in keys)


def _is_word(char: str) -> bool:
    return char.isalnum() or char == "_"


def within_budget(
    entries: Sequence[LoreEntry], budget_chars: int, *, character_id: str = ""
) -> list[LoreEntry]:
    """Whole entries within `budget_chars` (content plus a separator each), the highest rank
    first; an entry that does not fit is left out (a smaller one after it may still fit),
    and the left-out ones are named in a warning. Kept ones come back in insertion order."""
    kept: list[LoreEntry] = []
    left: list[LoreEntry] = []
    used = 0
    for entry in sorted(entries, key=lambda e: e.rank, reverse=True):  # stable: ties in order
        cost = len(entry.content) + len(ENTRY_SEPARATOR)
        if used + cost <= budget_chars:
            kept.append(entry)
            used += cost
        else:
            left.append(entry)
    if left:
        log.warning(
            "lorebook entries left out: over the budget",
            extra=fields(
                character_id=character_id,
                left_out=[e.label for e in left],
                kept=len(kept),
                budget_chars=budget_chars,
                setting="lore_budget_chars",
            ),
        )
    return sorted(kept, key=lambda e: (e.insertion_order, e.index))


def book_budget(book: Lorebook, budget_chars: int, chars_per_token: float) -> int:
    """The smaller of the setting's budget and the book's own `token_budget` in characters."""
    if book.token_budget:
        return min(budget_chars, int(book.token_budget * chars_per_token))
    return budget_chars
