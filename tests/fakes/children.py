"""Child processes in tests: wait for them without sleeping blindly, signal them, never leave one running.

::

    with reaped(subprocess.Popen([...])) as child:  # killed and reaped if the test fails first
        wait_for(lambda: marker.exists(), timeout=20)
        child.send_signal(signal.SIGTERM)
        _, err = child.communicate(timeout=15)

    code, stdout, stderr = signal_when(child, lambda: len(server.requests) >= 3, signal.SIGINT, what="...")
"""

from __future__ import annotations

import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

Child = TypeVar("Child", bound="subprocess.Popen[Any]")


@contextmanager
def reaped(proc: Child) -> Iterator[Child]:
    """``proc``, killed and waited for when the block ends with it still running (a failed test leaves none)."""
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def wait_for(condition: Callable[[], bool], *, timeout: float, step: float = 0.05) -> bool:
    """Poll ``condition`` every ``step`` seconds for at most ``timeout``; whether it came true."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() >= deadline:
            return False
        time.sleep(step)
    return True


def signal_when(
    child: subprocess.Popen[str],
    ready: Callable[[], bool],
    sig: signal.Signals,
    *,
    what: str,
    timeout: float = 60,
) -> tuple[int, str, str]:
    """Send ``sig`` to the running ``child`` once ``ready()`` holds (a bounded wait, not a timing check), then
    its exit status, stdout and stderr. Fails with ``what`` if ``ready`` never holds, or with the child's output
    if it ends first; the child never outlives the call."""
    with reaped(child):
        deadline = time.monotonic() + timeout
        while not ready():
            assert child.poll() is None, child.communicate()
            assert time.monotonic() < deadline, what
            time.sleep(0.02)
        child.send_signal(sig)
        stdout, stderr = child.communicate(timeout=timeout)
    return child.returncode, stdout, stderr
