"""The program's edge as one object (httpie's ``Environment``): where status lines, log lines and the children's
output go, whether a person watches, and the clock and sleep a wait uses.

The cli makes one :class:`Console` per command (``cli/output.py``) and sets it as the current one (:func:`using`,
a context variable as pypa/build's ``_ctx``); core code reaches it with :func:`current` instead of threading
``notify``/``clock``/``sleep`` parameters, and tests set one built from lists and fake clocks. Standard library only, below every
package (docs/architecture.md).
"""

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


def _discard(_text: str) -> None:
    """A line nobody reads (a console for a test that only looks at results)."""


@dataclass(frozen=True)
class Console:
    """Streams, notices, clock and sleep of one command.

    ``notify``: a status line for a person (stderr); ``emit``: a result line of a stream the command prints (a
    log line); ``stdout``/``stderr``: where children's bytes go (``local train``); ``interactive``: stderr is a
    terminal (progress lines). ``sleep``/``clock`` left None are ``time.sleep``/``time.monotonic`` looked up
    at the moment of use, so an in-process test can stand in for ``time.sleep``.
    """

    notify: Callable[[str], None] = _discard
    emit: Callable[[str], None] = _discard
    stdout: IO[bytes] = field(default_factory=lambda: bytes_of(sys.stdout))
    stderr: IO[bytes] = field(default_factory=lambda: bytes_of(sys.stderr))
    interactive: bool = False
    sleep: Callable[[float], None] | None = None
    clock: Callable[[], float] | None = None

    def wait(self, seconds: float) -> None:
        """Sleep ``seconds`` (through ``sleep`` when one was given)."""
        (self.sleep or time.sleep)(seconds)

    def now(self) -> float:
        """Monotonic seconds (through ``clock`` when one was given)."""
        return (self.clock or time.monotonic)()

    def sleeper(self) -> Callable[[float], None]:
        """The sleep function itself, for loops that take one."""
        return self.sleep or time.sleep

    def timer(self) -> Callable[[], float]:
        """The clock function itself, for loops that take one."""
        return self.clock or time.monotonic


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
