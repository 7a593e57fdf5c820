"""Every Redis key of Novaberg, built in one place (design §2; the seeds' layout).

No other module spells a key. The per-pair keys keep the seeds' names exactly, so data
written by the seeds' implementation reads here and the other way round.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any


def pair_id(user_id: str, character_id: str) -> str:
    """The "user_id:character_id" form used in keys and log lines."""
    return f"{user_id}:{character_id}"


def session_turns(user_id: str, character_id: str) -> str:
    return f"session:{user_id}:{character_id}:turns"


def session_summary(user_id: str, character_id: str) -> str:
    return f"session:{user_id}:{character_id}:summary"


def session_summary_lock(user_id: str, character_id: str) -> str:
    """Held while one summary of the pair runs (one at a time per pair, across processes)."""
    return f"session:{user_id}:{character_id}:summary_lock"


def nova_state(user_id: str, character_id: str) -> str:
    return f"nova_state:{user_id}:{character_id}"


def haltung(user_id: str, character_id: str) -> str:
    return f"haltung:{user_id}:{character_id}"


def prompt_queue(user_id: str, character_id: str) -> str:
    return f"prompt_queue:{user_id}:{character_id}"


def event_queue(user_id: str, character_id: str) -> str:
    return f"event_queue:{user_id}:{character_id}"


def event_processing(user_id: str, character_id: str) -> str:
    """Events taken from the queue but not yet acknowledged (reliable queue)."""
    return f"event_queue:{user_id}:{character_id}:processing"


def turn_marker(user_id: str, character_id: str) -> str:
    return f"turn_laeuft:{user_id}:{character_id}"


def turn_record(turn_id: str) -> str:
    return f"turn:{turn_id}"


def message_record(message_id: str) -> str:
    return f"message:{message_id}"


def auth_session(session_hash: str) -> str:
    """A login session's user, under the SHA-256 of the session id (`app.auth.credentials`):
    never the id itself, which is the cookie's secret."""
    return f"auth_session:{session_hash}"


def login_failures(kind: str, who: str) -> str:
    """Failed logins of a user name (`kind` "name") or a client address ("client")."""
    return f"login_failures:{kind}:{who}"


def login_blocked(kind: str, who: str) -> str:
    """Present (with a TTL) while `who` must wait before the next login attempt."""
    return f"login_blocked:{kind}:{who}"


def heartbeat(instance_id: str) -> str:
    return f"heartbeat:{instance_id}"


# --- turn runtime (app/runtime) -----------------------------------------------------------


def split_pair(pair: str) -> tuple[str, str]:
    """The inverse of `pair_id`: "user_id:character_id" → (user_id, character_id)."""
    user_id, _, character_id = pair.rpartition(":")
    return user_id, character_id


def known_pairs() -> str:
    """Set of every pair that ever had a message or event (recovery walks it at start-up)."""
    return "pairs:known"


def user_pairs(user_id: str) -> str:
    """Set of the character ids one user has talked to (a reconnecting tab's snapshot reads
    their queues without walking every pair of every user)."""
    return f"pairs:user:{user_id}"


def event_awaiting(user_id: str, character_id: str) -> str:
    """The parked `awaiting_user` event whose agent context the next user turn resumes."""
    return f"event_queue:{user_id}:{character_id}:awaiting"


def turn_history(turn_id: str) -> str:
    """List of `{"state", "at"}` JSON entries, one per transition of the turn."""
    return f"turn:{turn_id}:history"


def open_turns() -> str:
    """Set of every turn id not yet delivered or failed (recovery walks it)."""
    return "turns:open"


def user_open_turns(user_id: str) -> str:
    """Set of the open turn ids of one user (sent to a WebSocket on connect)."""
    return f"turns:open:{user_id}"


def run_slots(endpoint: str) -> str:
    """Sorted set of the held pipeline run slots of one model endpoint (its base URL; holder
    → lease expiry), multi-process mode: processes that share a model server share these."""
    return f"run_slots:{endpoint}"


def run_slot_queue(endpoint: str) -> str:
    """List of the process instances waiting for a run slot of `endpoint`, one ticket each,
    in turn order (`app.runtime.slots.RedisSlots`)."""
    return f"run_slot_queue:{endpoint}"


def slot_channel() -> str:
    """Pub/sub channel: a run slot of the endpoint named in the message was released."""
    return "novaberg:slots"


def instances() -> str:
    """Set of the process instances that keep a heartbeat (`heartbeat`); the keeper's death
    watch looks at their heartbeats' expiry."""
    return "heartbeats"


def wake_channel() -> str:
    """Pub/sub channel: a pair has new input (multi-process mode)."""
    return "novaberg:wake"


def hub_channel() -> str:
    """Pub/sub channel: a message for the WebSockets of a user (multi-process mode)."""
    return "novaberg:hub"


# --- pipeline: short-term memory, lists, reminders (app/pipeline) -------------------------


def short_term_memory(user_id: str, character_id: str) -> str:
    """Sorted set of the pair's short-term memory entries (KZG), scored by expiry time."""
    return f"kzg:{user_id}:{character_id}"


def lists(user_id: str, character_id: str) -> str:
    """Hash of the notes agent's named lists: normalized name → list JSON."""
    return f"lists:{user_id}:{character_id}"


def reminders(user_id: str, character_id: str) -> str:
    """Hash of the pair's reminders: reminder id → reminder JSON."""
    return f"reminders:{user_id}:{character_id}"


def reminders_due() -> str:
    """Sorted set of every pending reminder (member from `reminder_member`), scored by due time;
    the reminder clock watches it."""
    return "reminders:due"


def reminder_member(user_id: str, character_id: str, reminder_id: str) -> str:
    """A member of `reminders_due`: "user_id:character_id:reminder_id"."""
    return f"{user_id}:{character_id}:{reminder_id}"


def split_reminder_member(member: str) -> tuple[str, str, str]:
    """The inverse of `reminder_member`: (user_id, character_id, reminder_id)."""
    pair, _, reminder_id = member.rpartition(":")
    user_id, character_id = split_pair(pair)
    return user_id, character_id, reminder_id


def reminders_claimed() -> str:
    """Sorted set of reminders a clock has taken but not yet delivered (member as in
    `reminders_due`), scored by claim time; a claim that grows old is put back."""
    return "reminders:claimed"


def message_outbox(user_id: str, character_id: str) -> str:
    """List of the pair's message-log rows (JSON) that a turn's commit promised and that are
    not yet confirmed in SQLite (`app.memory.message_log.LogOutbox`)."""
    return f"message_outbox:{user_id}:{character_id}"


def offline_said(user_id: str, character_id: str) -> str:
    """List of what the offline model said to the pair on the user's calendar day (entry
    JSON with the day), expiring at that day's end in the user's zone
    (`app.memory.said_today`)."""
    return f"offline_said:{user_id}:{character_id}"


def idle_reflection(user_id: str, character_id: str) -> str:
    """The `nutzer_zeit` of the quiet period the character last reflected on (one reflection
    per quiet period)."""
    return f"reflection:{user_id}:{character_id}"


# --- backup (app/backup) ------------------------------------------------------------------

# Keys that describe this moment of one running process, not the user's data: a backup
# leaves them out and a restore never writes them. Everything else in Novaberg's Redis
# database is backed up, so a key added later is included without a change here. Login
# sessions are credentials (and a restored one would outlive its logout); the login
# throttle's failures and blocks are the state of recent attempts, no user data (a restored
# one would lock a person out again); heartbeats, run slots and their queues, turn markers
# and the summary lock belong to processes that are gone after a restore. What the offline
# model said today (`offline_said`) only keeps its replies varied.
_TRANSIENT_PREFIXES = (
    "heartbeat:",
    "auth_session:",
    "login_failures:",
    "login_blocked:",
    "turn_laeuft:",
    "run_slots:",
    "run_slot_queue:",
    "offline_said:",
)
_TRANSIENT_KEYS = ("heartbeats",)
_TRANSIENT_SUFFIXES = (":summary_lock",)


def transient_rules() -> dict[str, tuple[str, ...]]:
    """The rules of `transient` as data, for a server-side script that applies them
    (`app.backup.redis_snapshot` reads a private snapshot server that way)."""
    return {
        "prefixes": _TRANSIENT_PREFIXES,
        "keys": _TRANSIENT_KEYS,
        "suffixes": _TRANSIENT_SUFFIXES,
    }


def transient(key: str) -> bool:
    """True for a key that a backup leaves out (see above)."""
    return (
        key.startswith(_TRANSIENT_PREFIXES)
        or key in _TRANSIENT_KEYS
        or key.endswith(_TRANSIENT_SUFFIXES)
    )


# --- long-term memory: the Pixie queue (app/memory/pixie_queue.py) ------------------------


def pixie_queue(user_id: str, character_id: str) -> str:
    """List of the pair's promotion triggers waiting for the Pixie worker (seed 001 §5)."""
    return f"pixie_queue:{user_id}:{character_id}"


def pixie_processing(user_id: str, character_id: str) -> str:
    """Triggers the Pixie worker has taken but not yet acknowledged (reliable queue)."""
    return f"pixie_queue:{user_id}:{character_id}:processing"


def pixie_taken(user_id: str, character_id: str) -> str:
    """Hash: a taken trigger's raw record → the process instance that took it (recovery puts
    back what a dead process held)."""
    return f"pixie_queue:{user_id}:{character_id}:taken"


def pixie_pairs() -> str:
    """Set of the pairs that may have promotion triggers waiting (the worker walks it)."""
    return "pixie_queue:pairs"


# --- replies --------------------------------------------------------------------------------
# Every client the app makes decodes its replies (`decode_responses=True`,
# `app.storage.redis_driver`); redis-py types a reply as `bytes | str` for either kind of client.
# These say which it is where a reply is read, and refuse a client that does not decode.


def text(reply: object) -> str:
    """One reply (a member, a field, a value) as the str a decoding client gives."""
    if not isinstance(reply, str):
        raise TypeError(f"a Redis reply of {type(reply).__name__}: a client without decoding")
    return reply


def texts(replies: Iterable[object]) -> list[str]:
    """Each reply of a list, a set or a range as a str (`text`)."""
    return [text(reply) for reply in replies]


def text_hash(reply: Mapping[Any, Any]) -> dict[str, str]:
    """A hash (`HGETALL`) with str fields and values (`text`)."""
    return {text(name): text(value) for name, value in reply.items()}
