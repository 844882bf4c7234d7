"""follow(): what `training --wait/--stream-logs` and `jobs wait/stream-logs` do, Ctrl-C included."""

from __future__ import annotations

import os
import signal
import sys
import threading
from typing import Any

import pytest

from mlsubmit.console import Console
from mlsubmit.errors import ApiError, ExitStatus, FollowInterrupted
from mlsubmit.follow.session import Following, follow, sigterm_as_interrupt
from mlsubmit.services.poll import drop_connections, interrupted
from mlsubmit.services.retry import PollPolicy
from mlsubmit.services.settings import Settings
from tests.fakes.follow import FakeClock, FakeLoggingService, ScriptedBackend, entry

FAST = PollPolicy(initial=0.5, factor=1.0, cap=0.5, error_budget=2)


def interrupting_sleep(after: int) -> Any:
    """A sleep that raises KeyboardInterrupt (Ctrl-C) on its ``after``-th call."""
    calls = {"n": 0}

    def sleep(_seconds: float) -> None:
        calls["n"] += 1
        if calls["n"] >= after:
            raise KeyboardInterrupt

    return sleep


def run_follow(
    backend: ScriptedBackend,
    *,
    sleep: Any = None,
    logs: Any = None,
    settings: Settings | None = None,
    **how: Any,
) -> tuple[dict[str, Any], list[str], list[str]]:
    """follow() with a fake clock, status lines and log lines kept in lists; ``logs``: the logging service
    factory that stands in for ``settings.logging``; ``how``: the Following fields."""
    notes: list[str] = []
    lines: list[str] = []
    clock = FakeClock()
    settings = settings or Settings.from_flags({})
    if logs is not None:
        settings.logging = logs  # type: ignore[method-assign]
    console = Console(notify=notes.append, emit=lines.append, sleep=sleep or clock.sleep, clock=clock.clock)
    job = follow(backend, "j1", settings, console, Following(**{"poll": FAST, **how}))
    return job, notes, lines


def test_wait_mode_reports_states_and_returns_the_final_job() -> None:
    job, notes, lines = run_follow(ScriptedBackend(["QUEUED", "RUNNING", "RUNNING", "FAILED"]))
    assert job["state"] == "FAILED"
    assert notes == ["Job [j1] is QUEUED.", "Job [j1] is RUNNING.", "Job [j1] is FAILED."]
    assert lines == []


def test_stream_logs_mode_prints_log_lines_through_emit() -> None:
    service = FakeLoggingService([{"entries": [entry(1, "hello")]}, {}, {}])
    factory_calls: list[int] = []

    def factory() -> FakeLoggingService:
        factory_calls.append(1)
        return service

    job, notes, lines = run_follow(
        ScriptedBackend(["RUNNING", "SUCCEEDED"]), mode="stream-logs", logs=factory
    )
    assert job["state"] == "SUCCEEDED"
    assert [line.split("\t")[-1] for line in lines] == ["hello"]
    assert notes == ["Job [j1] is RUNNING.", "Job [j1] is SUCCEEDED."]
    assert factory_calls == [1]
    assert service.bodies[0]["resourceNames"] == ["projects/p"]


def test_ctrl_c_leaves_the_job_running_and_says_how_to_cancel_it() -> None:
    backend = ScriptedBackend(["RUNNING"])
    with pytest.raises(FollowInterrupted) as caught:
        run_follow(backend, sleep=interrupting_sleep(after=2))
    assert caught.value.exit_status == ExitStatus.INTERRUPTED
    assert int(caught.value.exit_status) == 130
    message = str(caught.value)
    assert "job j1 was not cancelled and keeps running" in message
    assert "`mlsubmit jobs cancel j1`" in message
    assert backend.cancels == []
    assert caught.value.__suppress_context__  # no KeyboardInterrupt traceback chained to the message


def test_cancel_on_interrupt_cancels_the_job() -> None:
    backend = ScriptedBackend(["RUNNING"])
    with pytest.raises(FollowInterrupted) as caught:
        run_follow(backend, sleep=interrupting_sleep(after=1), cancel_on_interrupt=True)
    assert backend.cancels == ["j1"]
    assert "asked the service to cancel job j1" in str(caught.value)
    assert caught.value.exit_status == ExitStatus.INTERRUPTED


def test_a_failed_cancel_on_interrupt_is_reported_with_the_manual_command() -> None:
    backend = ScriptedBackend(["RUNNING"])
    backend.cancel_error = ApiError("cancelling job j1 failed: HTTP 403 PERMISSION_DENIED: nope", status=403)
    with pytest.raises(FollowInterrupted) as caught:
        run_follow(backend, sleep=interrupting_sleep(after=1), cancel_on_interrupt=True)
    message = str(caught.value)
    assert "PERMISSION_DENIED: nope" in message
    assert "`mlsubmit jobs cancel j1`" in message


def test_ctrl_c_while_streaming_logs_is_handled_the_same_way() -> None:
    backend = ScriptedBackend(["RUNNING"])
    service = FakeLoggingService([])
    with pytest.raises(
        FollowInterrupted, match="mlsubmit jobs cancel j1 --target vertex --region europe-west4"
    ):
        run_follow(
            backend,
            mode="stream-logs",
            logs=lambda: service,
            sleep=interrupting_sleep(after=3),
            settings=Settings.from_flags({}, target="vertex", region="europe-west4"),
        )
    assert len(service.bodies) == 3  # it really was streaming when interrupted


def test_env_poll_interval_applies_when_no_policy_is_given() -> None:
    clock = FakeClock()
    follow(
        ScriptedBackend(["RUNNING", "RUNNING", "SUCCEEDED"]),
        "j1",
        Settings.from_flags({"MLSUBMIT_POLL_INTERVAL": "0.01"}),
        Console(sleep=clock.sleep, clock=clock.clock),
    )
    assert clock.sleeps == [0.01, 0.01]


def test_unknown_mode_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="unknown follow mode"):
        run_follow(ScriptedBackend(["RUNNING"]), mode="tail")


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_sigterm_becomes_keyboard_interrupt_inside_the_block_only() -> None:
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(KeyboardInterrupt), sigterm_as_interrupt():
        os.kill(os.getpid(), signal.SIGTERM)
        signal.sigtimedwait([], 0)  # give the handler a chance to run if delivery is deferred
    assert signal.getsignal(signal.SIGTERM) is before


def test_sigterm_handling_is_skipped_outside_the_main_thread() -> None:
    before = signal.getsignal(signal.SIGTERM)
    seen: list[object] = []

    def worker() -> None:
        with sigterm_as_interrupt():
            seen.append(signal.getsignal(signal.SIGTERM))

    thread = threading.Thread(target=worker)
    thread.start()
    thread.join()
    assert seen == [before]


class FakeConnection:
    def __init__(self) -> None:
        self.closed = False

    def close(self) -> None:
        self.closed = True


def test_the_cancel_after_an_interrupt_goes_out_on_fresh_connections() -> None:
    """Ctrl-C can land halfway through a request; that pooled connection must not carry the cancel."""
    from types import SimpleNamespace

    from mlsubmit.services.wire import Wire

    wire = Wire()  # services.rest.Client's: the pooled connections
    pooled: dict[Any, Any] = wire.connections
    pooled.update(
        {("https", "ml.googleapis.com", 443): FakeConnection(), ("https", "other", 443): FakeConnection()}
    )
    client = SimpleNamespace(wire=wire)

    class Backend(ScriptedBackend):
        def cancel(self, job_id: str) -> None:
            assert pooled == {}, "cancel sent before the pool was emptied"
            super().cancel(job_id)

    backend = Backend(["RUNNING"])
    backend.service = SimpleNamespace(_client=client)  # type: ignore[attr-defined]
    conns = list(pooled.values())
    error = interrupted(backend, "j1", cancel=True)
    assert backend.cancels == ["j1"] and "asked the service to cancel" in str(error)
    assert all(conn.closed for conn in conns)


def test_drop_connections_tolerates_backends_without_http() -> None:
    drop_connections(ScriptedBackend(["RUNNING"]))  # no .service at all: nothing to do, no error
