"""Following a job (``training --wait/--stream-logs``, ``jobs wait/stream-logs``), and the one place that decides
what Ctrl-C means: the job keeps running and we say how to cancel it, or with ``--cancel-on-interrupt`` it is
cancelled; either way exit 130, never a traceback."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from mlsubmit.console import Console, using
from mlsubmit.services.backends import JobsBackend
from mlsubmit.services.poll import interrupted, state_line, wait_for_job
from mlsubmit.services.retry import PollPolicy, log_lag_from_env

if TYPE_CHECKING:
    from mlsubmit.services.settings import Settings

FollowMode = Literal["wait", "stream-logs"]


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """Within the block SIGTERM acts like Ctrl-C: CI systems stop a build with it (GitLab CI, Kubernetes, GitHub
    Actions after its SIGINT), and ``--cancel-on-interrupt`` must still cancel the job. Main thread only."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(_signum: int, _frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@dataclass(frozen=True)
class Following:
    """How to follow a job: the mode, whether Ctrl-C cancels it, a timeout, a task, and a poll policy."""

    mode: FollowMode = "wait"
    cancel_on_interrupt: bool = False
    timeout: float | None = None
    task_name: str | None = None
    allow_multiline: bool = False
    poll: PollPolicy | None = None


def follow(
    backend: JobsBackend, job_id: str, settings: Settings, console: Console, how: Following = Following()
) -> dict[str, Any]:
    """Follow ``job_id`` until it ends: the final job (FollowInterrupted on Ctrl-C)."""
    if how.mode not in ("wait", "stream-logs"):
        raise ValueError(f"unknown follow mode {how.mode!r}")
    try:
        with using(console):  # the poll engine's waits and notices
            return _follow(backend, job_id, settings, console, how)
    except KeyboardInterrupt:
        hint = settings.hint_flags
        raise interrupted(backend, job_id, cancel=how.cancel_on_interrupt, hint_flags=hint) from None


def _follow(
    backend: JobsBackend, job_id: str, settings: Settings, console: Console, how: Following
) -> dict[str, Any]:
    poll, hint = how.poll, settings.hint_flags

    def on_state(job: dict[str, Any]) -> None:
        console.notify(state_line(job))

    if how.mode == "wait":
        policy = poll or settings.poll
        return wait_for_job(
            backend, job_id, timeout=how.timeout, on_state=on_state, poll=policy, hint_flags=hint
        )
    from mlsubmit.follow.logs import LAG_SECONDS, LOGS_POLL, LogReader, log_source, stream_job_logs
    from mlsubmit.services.ml import Caller

    caller = Caller(
        policy=settings.retry.capped(settings.poll.cap), sleep=console.wait, notify=console.notify
    )
    lag = log_lag_from_env(settings.env)
    lag = LAG_SECONDS if lag is None else lag

    def open_reader(job: dict[str, Any]) -> LogReader:
        target, log_id = log_source(job, job_id)
        task = how.task_name
        return LogReader(
            settings.logging(), backend.project, log_id, caller=caller, task_name=task, target=target, lag=lag
        )

    return stream_job_logs(
        backend,
        open_reader,
        job_id,
        emit=console.emit,
        on_state=on_state,
        poll=poll or PollPolicy.from_env(settings.env, LOGS_POLL),
        allow_multiline=how.allow_multiline,
        hint_flags=hint,
        lag=lag,
    )
