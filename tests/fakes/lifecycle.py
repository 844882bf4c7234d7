"""Scripted job state machines: each read moves a job one step along its script, so pollers see every state."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Lifecycle:
    """A job's scripted states and where it is in them.

    The state a reader sees is ``states[pos]``; :meth:`advance` (called after each GET is answered) moves one
    step and stays on the last state. ``entered`` lists every state the job has been in, in order.
    """

    states: list[str]
    error_message: str | None = None
    pos: int = 0
    entered: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.states:
            raise ValueError("a job script needs at least one state")
        self.entered.append(self.states[0])

    @property
    def current(self) -> str:
        """The state the next reader sees."""
        return self.states[self.pos]

    def advance(self) -> str | None:
        """Move one step along the script; return the new state, or None when already at the end."""
        if self.pos + 1 >= len(self.states):
            return None
        self.pos += 1
        self.entered.append(self.current)
        return self.current

    def divert(self, states: list[str]) -> str:
        """Replace the rest of the script (from the current state on) with ``states``, entering the first."""
        self.states = self.states[: self.pos] + list(states)
        self.entered.append(self.current)
        return self.current

    def reached(self, state: str) -> bool:
        """Whether the job has been in ``state`` (it is the current state or one before it)."""
        return state in self.entered
