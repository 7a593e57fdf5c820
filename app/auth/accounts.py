"""User accounts in SQLite (design §1): the headless users with their scrypt password hashes
and API tokens (only a token's SHA-256 is stored), and the synchronous administration that
the CLI runs on the database (`novaberg user …`, `novaberg token …`): each write a function of
a connection, which the CLI hands to the database's one writer while it holds the data dir's
lock (`app.wiring.cli`). Who is asking and from where is `app.auth.credentials`'s.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import sqlite3
import time

from app.core.user_names import LOCAL_USER, valid_user_name
from app.storage import dialect

__all__ = ["LOCAL_USER", "valid_user_name"]  # the name rule lives in app.core.user_names

SCRYPT_N, SCRYPT_R, SCRYPT_P = 2**14, 8, 1


# --- secrets -------------------------------------------------------------------------------


def new_token() -> str:
    return secrets.token_urlsafe(32)


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def hash_password(password: str) -> str:
    salt = secrets.token_bytes(16)
    digest = hashlib.scrypt(password.encode(), salt=salt, n=SCRYPT_N, r=SCRYPT_R, p=SCRYPT_P)
    b64 = base64.b64encode
    return f"scrypt${SCRYPT_N}${SCRYPT_R}${SCRYPT_P}${b64(salt).decode()}${b64(digest).decode()}"


def verify_password(password: str, stored: str) -> bool:
    try:
        scheme, n, r, p, salt, digest = stored.split("$")
        if scheme != "scrypt":
            return False
        expected = base64.b64decode(digest)
        actual = hashlib.scrypt(
            password.encode(),
            salt=base64.b64decode(salt),
            n=int(n),
            r=int(r),
            p=int(p),
            dklen=len(expected),
        )
    except (ValueError, TypeError):
        return False
    return hmac.compare_digest(actual, expected)


# --- users in the store -----------------------------------------------------------------------


def add_user_sync(conn: sqlite3.Connection, name: str, password: str) -> str:
    """Create a user with a password and one API token; returns the token (shown once)."""
    token = new_token()
    now = time.time()
    with conn:
        conn.execute(
            "INSERT INTO users (user_id, password_hash, created_at) VALUES (?, ?, ?)",
            (name, hash_password(password), now),
        )
        conn.execute(
            "INSERT INTO api_tokens (token_hash, user_id, created_at) VALUES (?, ?, ?)",
            (token_hash(token), name, now),
        )
    return token


TOKEN_ID_CHARS = 12  # a token is named by the head of its hash: safe to show, enough to pick


def list_tokens_sync(
    conn: sqlite3.Connection, name: str | None = None
) -> list[tuple[str, str, float]]:
    """(token id, user, created_at) of the stored API tokens, oldest first."""
    rows = conn.execute(
        "SELECT token_hash, user_id, created_at FROM api_tokens "
        "WHERE CAST(? AS TEXT) IS NULL OR user_id = ? ORDER BY created_at",
        (name, name),
    )
    return [(row[0][:TOKEN_ID_CHARS], row[1], row[2]) for row in rows]


def revoke_token_sync(conn: sqlite3.Connection, token_id: str) -> int:
    """Remove the token whose id is `token_id` (at least 6 characters of it); returns how many
    matched — only exactly one is removed."""
    if len(token_id) < 6 or not all(c in "0123456789abcdef" for c in token_id):
        return 0
    with conn:
        rows = conn.execute(
            "SELECT token_hash FROM api_tokens WHERE token_hash LIKE ?", (token_id + "%",)
        ).fetchall()
        if len(rows) == 1:
            conn.execute("DELETE FROM api_tokens WHERE token_hash = ?", (rows[0][0],))
    return len(rows)


def delete_user_sync(conn: sqlite3.Connection, name: str) -> bool:
    """Delete a user and every row of theirs; False: no such user.

    The user's rows are those of each table with a `user_id` column, and every row that
    reaches one of them through foreign keys (a journal day through its space, a version
    through its entry, …), children first. Tables added by later migrations are covered
    without touching this code. The `users` row goes last, all in one transaction.
    """
    tables = dialect.tables(conn)
    children = _foreign_key_children(conn)
    with conn:
        if conn.execute("SELECT 1 FROM users WHERE user_id = ?", (name,)).fetchone() is None:
            return False
        for table in tables:
            if table != "users" and "user_id" in dialect.columns_of(conn, table):
                _delete_with_children(conn, children, table, '"user_id" = ?', (name,))
        _delete_with_children(conn, children, "users", '"user_id" = ?', (name,))
    return True


ForeignKeyChild = tuple[str, str, str]  # (child table, its column, the parent's column)


def _foreign_key_children(conn: sqlite3.Connection) -> dict[str, list[ForeignKeyChild]]:
    children: dict[str, list[ForeignKeyChild]] = {}
    for table, column, parent, parent_column in dialect.foreign_keys(conn):
        if parent != table:
            children.setdefault(parent, []).append((table, column, parent_column))
    return children


def _delete_with_children(
    conn: sqlite3.Connection,
    children: dict[str, list[ForeignKeyChild]],
    table: str,
    where: str,
    params: tuple[object, ...],
) -> None:
    for child, column, parent_column in children.get(table, []):
        _delete_with_children(
            conn,
            children,
            child,
            f'"{column}" IN (SELECT "{parent_column}" FROM "{table}" WHERE {where})',
            params,
        )
    conn.execute(f'DELETE FROM "{table}" WHERE {where}', params)


def count_users_sync(conn: sqlite3.Connection) -> int:
    return conn.execute("SELECT COUNT(*) FROM users").fetchone()[0]
