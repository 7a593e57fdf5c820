"""The lifecycle of a user's writing profile (seed 004 §14), as data.

A profile starts empty. Its first real content comes from an *initial build*: a proposal
(from the AI review or an imported copy/paste result in mode ``initial_build``) that waits
for the user, or the user's own hand. Continuous learning and advising (evidence queue, drift,
dialog samples, governed application of review results) start only once the build is
confirmed.

::

                   propose                       confirm
    +---------------+ -----> +-----------------+ -------> +-----------+
    | uninitialized |        | initial_pending |          | confirmed |
    +---------------+ <----- +-----------------+          +-----------+
          |            abandon  (the user dropped            ^
          |                      every proposed change)      |
          +--------------------------------------------------+
                 confirm (the user wrote or accepted content by hand)

- ``propose``: an initial-build proposal was made and waits for the user;
- ``confirm``: the user accepted at least one change of it, or set content by hand;
- ``abandon``: the user rejected the whole initial proposal; the profile is empty again.

``confirmed`` is final: a later rebuild is a review of a confirmed profile. Anything else
raises `IllegalTransition`. This module is pure: no I/O, nothing of ``app/``.
"""

from __future__ import annotations

from typing import Any, Final

from transitions import Machine, MachineError

UNINITIALIZED: Final = "uninitialized"
INITIAL_PENDING: Final = "initial_pending"
CONFIRMED: Final = "confirmed"

STATES: tuple[str, ...] = (UNINITIALIZED, INITIAL_PENDING, CONFIRMED)
TRIGGERS: tuple[str, ...] = ("propose", "confirm", "abandon")

TRANSITIONS: tuple[dict[str, Any], ...] = (
    {"trigger": "propose", "source": UNINITIALIZED, "dest": INITIAL_PENDING},
    {"trigger": "confirm", "source": [UNINITIALIZED, INITIAL_PENDING], "dest": CONFIRMED},
    {"trigger": "abandon", "source": INITIAL_PENDING, "dest": UNINITIALIZED},
)


class IllegalProfileTransition(Exception):
    """A trigger the profile's current lifecycle state does not allow."""

    def __init__(self, trigger: str, state: str, why: str) -> None:
        super().__init__(f"cannot {trigger} a writing profile in state {state}: {why}")
        self.trigger = trigger
        self.state = state


class ProfileLifecycle:
    """The model the machine drives: only the state."""

    def __init__(self, machine: Machine, state: str = UNINITIALIZED) -> None:
        if state not in STATES:
            raise ValueError(f"unknown profile lifecycle state {state!r}")
        self._machine = machine
        self.state = state

    def fire(self, trigger: str) -> str:
        """Apply `trigger`; return the new state or raise `IllegalProfileTransition`."""
        event = self._machine.events.get(trigger)
        if event is None:
            raise IllegalProfileTransition(trigger, self.state, "no such trigger")
        try:
            event.trigger(self)
        except MachineError as exc:
            raise IllegalProfileTransition(trigger, self.state, exc.value) from None
        return self.state

    def can(self, trigger: str) -> bool:
        return any(t["trigger"] == trigger and self.state in _sources(t) for t in TRANSITIONS)

    @property
    def learns(self) -> bool:
        """Continuous learning/advising runs only after a confirmed initial build."""
        return self.state == CONFIRMED


def _sources(transition: dict[str, Any]) -> list[str]:
    source = transition["source"]
    return [source] if isinstance(source, str) else list(source)


_MACHINE: Machine | None = None


def _machine() -> Machine:
    global _MACHINE
    if _MACHINE is None:
        _MACHINE = Machine(
            model=None,
            states=list(STATES),
            transitions=[dict(t) for t in TRANSITIONS],
            initial=UNINITIALIZED,
            auto_transitions=False,
            ignore_invalid_triggers=False,
        )
    return _MACHINE


def build_profile_machine(state: str = UNINITIALIZED) -> ProfileLifecycle:
    """A lifecycle in `state`, driven by the machine built from `TRANSITIONS`."""
    return ProfileLifecycle(_machine(), state)
