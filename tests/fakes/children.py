"""Child processes in tests: wait for them without sleeping blindly, signal them, never leave one running.

::

    with reaped(subprocess.Popen([...])) as child:  # killed and reaped if the test fails first
        wait_for(lambda: marker.exists(), timeout=20)
        child.send_signal(signal.SIGTERM)
        _, err = child.communicate(timeout=15)

    code, stdout, stderr = signal_when(child, lambda: len(server.requests) >= 3, signal.SIGINT, what="...")
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, suppress
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


def pid_alive(pid: int) -> bool:
    """Running, as opposed to gone or a zombie nobody reaped (PID 1 in a container may never reap).

    A process that ends between the ``open`` of ``/proc/PID/stat`` and its ``read`` makes the read fail with
    ESRCH (``ProcessLookupError``), not ENOENT: both mean gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return stat[stat.rfind(b")") + 2 :].split()[0] not in (b"Z", b"X")


def kill_survivors(pids: Iterable[int]) -> list[int]:
    """SIGKILL each of ``pids`` still running; the ones that were (one that ends meanwhile is no error)."""
    survivors = [pid for pid in pids if pid_alive(pid)]
    for pid in survivors:
        with suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    return survivors
