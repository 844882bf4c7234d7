"""mlsubmit.console.Console: one object for streams, notices, clock and sleep (docs/architecture.md)."""

from __future__ import annotations

import io
import time

import pytest

from mlsubmit.console import Console


def test_a_console_without_a_clock_uses_times_functions_looked_up_when_used(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    console = Console()
    slept: list[float] = []
    monkeypatch.setattr(time, "sleep", slept.append)  # after the console was made
    monkeypatch.setattr(time, "monotonic", lambda: 42.0)
    console.wait(1.5)
    sleep, clock = console.wait, console.now  # as loops that take the functions hold them
    sleep(2.0)
    assert slept == [1.5, 2.0] and console.now() == 42.0 and clock() == 42.0


def test_a_console_made_for_a_test_keeps_what_it_is_given() -> None:
    notes: list[str] = []
    out, err = io.BytesIO(), io.BytesIO()
    console = Console(notify=notes.append, stdout=out, stderr=err, sleep=lambda _s: None, clock=lambda: 7.0)
    console.notify("hello")
    console.emit("nobody reads this")  # the default emit discards
    console.wait(100)  # returns at once: the given sleep
    assert notes == ["hello"] and console.now() == 7.0 and console.stdout is out and console.stderr is err
