"""The tests' process-liveness helpers (tests/fakes/children.py): a process that ends while it is looked at is
gone, never an error in the test (issue 27, item 10)."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from typing import Any

import pytest

from tests.fakes import children
from tests.fakes.children import kill_survivors, pid_alive

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc (Linux)")


class EndsWhileRead(io.BytesIO):
    """/proc/PID/stat of a process that exits after the open and before the read: the kernel answers ESRCH."""

    def read(self, size: int | None = -1) -> bytes:
        raise ProcessLookupError(3, "No such process")


def test_running_reaped_and_zombie_processes() -> None:
    assert pid_alive(os.getpid())
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT)  # ended, not yet reaped: a zombie
    assert not pid_alive(child.pid)
    child.wait()
    assert not pid_alive(child.pid)


def test_a_process_ending_between_open_and_read_is_gone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(children, "open", lambda *_: EndsWhileRead(), raising=False)
    assert not pid_alive(os.getpid())


def test_a_survivor_ending_before_its_kill_is_no_error(monkeypatch: pytest.MonkeyPatch) -> None:
    killed: list[int] = []

    def gone(pid: int, _signal: Any) -> None:
        killed.append(pid)
        raise ProcessLookupError(3, "No such process")

    monkeypatch.setattr(children.os, "kill", gone)
    assert kill_survivors([os.getpid()]) == [os.getpid()] == killed
