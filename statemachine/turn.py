"""The lifecycle of one turn (design §5, seed 001 §3.0), as data.

A turn is one unit of work of a user/character pair: a block of user messages (perceived in
path 1, answered in path 2) or a character-originated run (an own impulse, answered in path 2
only). Its state tells a client, and the recovery after a crash, exactly where it stands, so
that no accepted message is ever left without an answer or a failure notice.

::

                perceive                    respond
    +--------+ ----------> +-------+ ------------------> +-------+  deliver   +-----------+
    | queued |             | path1 |                     | path2 | ---------> | delivered |
    +--------+ ----------------------------------------> +-------+ <--------- +-----------+
      ^    respond (character turn, or a user turn       |  ^        follow_up (a `continue`
      |     already perceived before a crash)            |  |         run under the same id)
      |                                                  |  |
      +---- requeue (crash recovery; attempts + 1, only while attempts < max_attempts) ----+
             from path1 and path2

    fail: queued | path1 | path2 --> failed          (failed is final; delivered is final
                                                      unless the character asks to continue)

Guards (conditions):

- ``perceive`` only for a user turn that has not been perceived yet (path 1 stores the user
  turn; running it twice would store it twice);
- ``respond`` from ``queued`` only for a character turn or a user turn already perceived;
- ``requeue`` only while ``attempts < max_attempts``; it adds one attempt.

Anything else raises `IllegalTransition`: a trigger the current state does not have, or a
guard that says no. A late result for a failed turn (``deliver`` on ``failed``) is such an
illegal transition; the runtime logs and drops it.

This module is pure: no I/O, nothing of ``app/``. The runtime persists every transition.
"""

from __future__ import annotations

from typing import Any, Final, Literal

from transitions import Machine, MachineError

State = Literal["queued", "path1", "path2", "delivered", "failed"]
Initiator = Literal["user", "character"]  # who started the turn

QUEUED: Final = "queued"
PATH1: Final = "path1"
PATH2: Final = "path2"
DELIVERED: Final = "delivered"
FAILED: Final = "failed"

STATES: tuple[str, ...] = (QUEUED, PATH1, PATH2, DELIVERED, FAILED)
TERMINAL_STATES: frozenset[str] = frozenset({DELIVERED, FAILED})
RUNNING_STATES: frozenset[str] = frozenset({PATH1, PATH2})
TRIGGERS: tuple[str, ...] = ("perceive", "respond", "deliver", "follow_up", "fail", "requeue")

# The whole lifecycle in one table; `build_machine` feeds it to `transitions`.
TRANSITIONS: tuple[dict[str, Any], ...] = (
    {"trigger": "perceive", "source": QUEUED, "dest": PATH1, "conditions": "needs_perception"},
    {"trigger": "respond", "source": PATH1, "dest": PATH2, "after": "mark_perceived"},
    {"trigger": "respond", "source": QUEUED, "dest": PATH2, "conditions": "answers_without_path1"},
    {"trigger": "deliver", "source": PATH2, "dest": DELIVERED},
    {"trigger": "follow_up", "source": DELIVERED, "dest": PATH2},
    {"trigger": "fail", "source": [QUEUED, PATH1, PATH2], "dest": FAILED},
    {
        "trigger": "requeue",
        "source": [PATH1, PATH2],
        "dest": QUEUED,
        "conditions": "has_attempts_left",
        "after": "count_attempt",
    },
)


class IllegalTransition(Exception):
    """A trigger that the turn's current state (or a guard) does not allow."""

    def __init__(self, trigger: str, state: str, why: str) -> None:
        super().__init__(f"cannot {trigger} a turn in state {state}: {why}")
        self.trigger = trigger
        self.state = state


class TurnLifecycle:
    """The model the machine drives: the turn's state plus what its guards need.

    `perceived` is true once path 1 has finished for this turn; `attempts` counts the runs,
    the first included. (Guards are not named `may_<trigger>`: `transitions` uses those names
    for its own convenience methods.)
    """

    def __init__(
        self,
        machine: Machine,
        initiator: Initiator,
        *,
        state: str = QUEUED,
        attempts: int = 1,
        max_attempts: int = 2,
        perceived: bool = False,
    ) -> None:
        if initiator not in ("user", "character"):
            raise ValueError(f"unknown turn initiator {initiator!r}")
        if state not in STATES:
            raise ValueError(f"unknown turn state {state!r}")
        self._machine = machine
        self.state = state
        self.initiator = initiator
        self.attempts = attempts
        self.max_attempts = max_attempts
        self.perceived = perceived

    # --- guards -------------------------------------------------------------------------
    def needs_perception(self) -> bool:
        return self.initiator == "user" and not self.perceived

    def answers_without_path1(self) -> bool:
        return self.initiator == "character" or self.perceived

    def has_attempts_left(self) -> bool:
        return self.attempts < self.max_attempts

    # --- effects ------------------------------------------------------------------------
    def mark_perceived(self) -> None:
        self.perceived = True

    def count_attempt(self) -> None:
        self.attempts += 1

    # --- the one way to move ------------------------------------------------------------
    def fire(self, trigger: str) -> str:
        """Apply `trigger`; return the new state or raise `IllegalTransition`."""
        event = self._machine.events.get(trigger)
        if event is None:
            raise IllegalTransition(trigger, self.state, "no such trigger")
        before = self.state
        try:
            moved = event.trigger(self)
        except MachineError as exc:
            raise IllegalTransition(trigger, before, exc.value) from None
        if not moved:
            raise IllegalTransition(trigger, before, "a guard refused it")
        return self.state

    @property
    def terminal(self) -> bool:
        return self.state in TERMINAL_STATES


_MACHINE: Machine | None = None


def _machine() -> Machine:
    """The one machine built from `TRANSITIONS`, shared by every turn.

    Models are not bound to it (no `add_model`): a bound model gets a dozen partials that
    point back at it, and a machine per turn left ~160 objects of cyclic garbage behind, which
    the garbage collector then swept in pauses of 100 ms under load. `fire` drives the
    machine's events with the model directly instead.
    """
    global _MACHINE
    if _MACHINE is None:
        _MACHINE = Machine(
            model=None,
            states=list(STATES),
            transitions=[dict(t) for t in TRANSITIONS],
            initial=QUEUED,
            auto_transitions=False,
            ignore_invalid_triggers=False,
        )
    return _MACHINE


def build_machine(
    initiator: Initiator,
    *,
    state: str = QUEUED,
    attempts: int = 1,
    max_attempts: int = 2,
    perceived: bool = False,
) -> TurnLifecycle:
    """A lifecycle in `state`, driven by the machine built from `TRANSITIONS`."""
    return TurnLifecycle(
        _machine(),
        initiator,
        state=state,
        attempts=attempts,
        max_attempts=max_attempts,
        perceived=perceived,
    )
