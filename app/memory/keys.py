"""Every Redis key of Novaberg, built in one place (SPEC §2; the seeds' layout).

No other module spells a key. The per-pair keys keep the seeds' names exactly, so data
written by the seeds' implementation reads here and the other way round.
"""

from __future__ import annotations


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


def auth_session(session_id: str) -> str:
    return f"auth_session:{session_id}"


def heartbeat(instance_id: str) -> str:
    return f"heartbeat:{instance_id}"
