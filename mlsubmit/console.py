"""The program's edge as one object (httpie's ``Environment``): where status lines, log lines and the children's
output go, whether a person watches, and the clock and sleep a wait uses.

The cli makes one :class:`Console` per command (``cli/output.py``); core code (``follow``, ``local``) takes it
instead of a dozen parameters, and tests build one from lists and fake clocks. Standard library only, below every
package (docs/architecture.md).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import IO


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
    stdout: IO[bytes] = field(default_factory=lambda: sys.stdout.buffer)
    stderr: IO[bytes] = field(default_factory=lambda: sys.stderr.buffer)
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
