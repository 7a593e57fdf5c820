"""`novaberg character import | export`: character cards on the command line.

- `import FILE [--user NAME] [--id ID]`: a card (PNG or JSON) becomes one of the user's own
  characters. Like every command that writes the data dir it takes the data dir's lock and
  refuses while an app holds it (import in the page then); a card that cannot be imported is
  one line on stderr and exit code 2, with nothing written.
- `export ID [--user NAME] [--spec v2|v3] [--format png|json] [--out FILE]`: any character
  the user has (built-in `nova` too) as a card; it only reads, so it also works while the
  app runs.
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from app.characters.book import CharacterBook, CharacterError
from app.characters.cards import SPECS, CardError
from app.characters.pictures import PictureError
from app.characters.service import Characters
from app.characters.store import CharacterStore
from app.core.settings import Settings
from app.core.user_names import LOCAL_USER
from app.storage.database import connect, connect_postgres
from app.storage.datadir import DATABASE_FILE, DataDirInUse, DataDirLock

CHARACTER_COMMAND = "character"
EXIT_OK, EXIT_REFUSED = 0, 2


class CommandError(Exception):
    """A refusal: one line on stderr, exit code 2."""


def add_character_commands(commands: Any, parents: Sequence[Any] = ()) -> None:
    character = commands.add_parser(CHARACTER_COMMAND, help="import or export character cards")
    actions = character.add_subparsers(dest="character_command", metavar="ACTION", required=True)
    importing = actions.add_parser(
        "import",
        parents=list(parents),
        help="import a character card (PNG or JSON; the app must not be running)",
        description="Import a Character Card V2 or V3 (a PNG with a chara/ccv3 chunk, or "
        "JSON) as one of the user's own characters. Refused while an app runs "
        "on the data dir: import in the page then.",
    )
    importing.add_argument("file", metavar="FILE", help="the card")
    importing.add_argument("--user", default=LOCAL_USER, help="whose character (default: local)")
    importing.add_argument(
        "--id",
        dest="character_id",
        help="the id to give it (default: from the card, or made from its name)",
    )
    exporting = actions.add_parser(
        "export",
        parents=list(parents),
        help="export a character as a card (PNG or JSON)",
        description="Write a character (built-in ones too) as a Character Card V2 or V3.",
    )
    exporting.add_argument("character_id", metavar="ID", help="the character's id")
    exporting.add_argument("--user", default=LOCAL_USER, help="whose character (default: local)")
    exporting.add_argument("--spec", choices=sorted(SPECS), default="v3")
    exporting.add_argument("--format", choices=("png", "json"), default="png")
    exporting.add_argument(
        "--out",
        metavar="FILE",
        help="where to write it (default: <id>-card-<spec>.<format> in the current folder)",
    )


def run_character_command(settings: Settings, args: argparse.Namespace) -> int:
    try:
        if args.character_command == "import":
            return _import(settings, Path(args.file), args.user, args.character_id)
        return _export(settings, args.character_id, args.user, args.spec, args.format, args.out)
    except (
        CommandError,
        CardError,
        PictureError,
        CharacterError,
        DataDirInUse,
        LookupError,
    ) as exc:
        message = exc.args[0] if isinstance(exc, LookupError) and exc.args else str(exc)
        print(f"novaberg: {message}", file=sys.stderr)
        return EXIT_REFUSED


def _import(settings: Settings, file: Path, user_id: str, character_id: str | None) -> int:
    try:
        raw = file.read_bytes()
    except OSError as exc:
        raise CommandError(f"cannot read {file}: {exc.strerror}") from None
    limit = settings.character_upload_max_bytes
    if len(raw) > limit:
        raise CommandError(
            f"{file} has {len(raw)} bytes; a card may have at most {limit} "
            "(setting character_upload_max_bytes)"
        )
    lock = DataDirLock(settings.data_path)
    try:
        lock.acquire()
    except DataDirInUse as exc:
        raise CommandError(f"{exc}: import the card in the page, or stop the app first") from None
    try:
        _check_user(settings, user_id)
        characters = Characters(CharacterStore(CharacterBook(settings)))
        definition, warnings = characters.import_card(user_id, raw, character_id=character_id)
    finally:
        lock.release()
    lore = len(definition.lore.entries) if definition.lore is not None else 0
    print(
        f"character {definition.id} imported: {definition.name} ({definition.language}, "
        f"{lore} lorebook entries{', with a picture' if definition.picture else ''})"
    )
    for warning in warnings:
        print(f"  note: {warning}")
    return EXIT_OK


def _check_user(settings: Settings, user_id: str) -> None:
    """The user must exist (`local` always does)."""
    if user_id == LOCAL_USER:
        return
    path = settings.data_path / DATABASE_FILE
    found = None
    if settings.database_url or path.exists():  # the store the install's processes use
        conn = (
            connect_postgres(settings.database_url, readonly=True)
            if settings.database_url
            else connect(path, readonly=True)
        )
        try:
            found = conn.execute("SELECT 1 FROM users WHERE user_id = ?", (user_id,)).fetchone()
        except sqlite3.Error:
            found = None
        finally:
            conn.close()
    if found is None:
        raise CommandError(f"no user {user_id!r} (add one with 'novaberg user add NAME')")


def _export(
    settings: Settings, character_id: str, user_id: str, spec: str, fmt: str, out: str | None
) -> int:
    characters = Characters(CharacterStore(CharacterBook(settings)))
    export = characters.export_card(user_id, character_id, spec, fmt)
    target = Path(out) if out else Path(export.file_name)
    try:
        target.write_bytes(export.body)
    except OSError as exc:
        raise CommandError(f"cannot write {target}: {exc.strerror}") from None
    print(f"card written: {target}")
    return EXIT_OK
