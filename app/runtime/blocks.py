"""Cutting the front block of a prompt queue (design §5 Block, seed 001 §3.0).

A block is the first queued message plus every following one whose gap to its *immediate
predecessor* is at most `input_window_seconds`. The rest stays for the next round. Nothing
waits for more input: a quiet window would be a delay on every answer.
"""

from __future__ import annotations

from collections.abc import Sequence

from app.runtime.wire import AcceptedMessage


def joins_block(previous: AcceptedMessage | None, message: AcceptedMessage, window: float) -> bool:
    """Does `message` belong to the block that `previous` (its predecessor) ends?"""
    return previous is None or message.received_at - previous.received_at <= window


def cut_front_block(queued: Sequence[AcceptedMessage], window: float) -> list[AcceptedMessage]:
    """The front block of `queued` (in queue order); empty if nothing is queued."""
    block: list[AcceptedMessage] = []
    for message in queued:
        if not joins_block(block[-1] if block else None, message, window):
            break
        block.append(message)
    return block
