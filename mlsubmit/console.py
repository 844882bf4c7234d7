"""The program's edge as one object (httpie's ``Environment``): where status lines, log lines and children's output
go, whether a person watches, and the clock and sleep of waits. The cli sets one per command (:func:`using`, a
context variable as pypa/build's ``_ctx``); core code reaches it with :func:`current`; tests set their own."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import IO, cast


def bytes_of(stream: IO[str]) -> IO[bytes]:
    """The byte stream under a text stream (a test's or a caller's ``io.StringIO`` has none: itself)."""
    return cast("IO[bytes]", getattr(stream, "buffer", stream))


@dataclass(frozen=True)
class Console:
    """``notify``: a status line (stderr); ``emit``: a result line (a log line); ``stdout``/``stderr``: children's
    bytes; ``interactive``: stderr is a terminal. ``sleep``/``clock`` None: ``time``'s, looked up when used."""

    notify: Callable[[str], None] = field(default=lambda _text: None)
    emit: Callable[[str], None] = field(default=lambda _text: None)
    stdout: IO[bytes] = field(default_factory=lambda: bytes_of(sys.stdout))
    stderr: IO[bytes] = field(default_factory=lambda: bytes_of(sys.stderr))
    interactive: bool = False
    sleep: Callable[[float], None] | None = None
    clock: Callable[[], float] | None = None

    def wait(self, seconds: float) -> None:
        """Sleep ``seconds`` (the bound method serves loops that take a sleep function)."""
        (self.sleep or time.sleep)(seconds)

    def now(self) -> float:
        """Monotonic seconds (the bound method serves loops that take a clock)."""
        return (self.clock or time.monotonic)()


_CURRENT: ContextVar[Console | None] = ContextVar("mlsubmit_console", default=None)


def current() -> Console:
    """The command's console (set once at the CLI's edge by :func:`using`); a silent one outside a command."""
    return _CURRENT.get() or Console()


@contextmanager
def using(console: Console) -> Iterator[Console]:
    """Make ``console`` the current one while the block runs."""
    token = _CURRENT.set(console)
    try:
        yield console
    finally:
        _CURRENT.reset(token)
