"""Following a job: poll its state with backoff until it ends, and map the outcome to an exit code. Waits,
the clock and notices go through the command's console, so tests never really wait."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from mlsubmit import console
from mlsubmit.errors import ApiError, ExitStatus, FollowInterrupted, JobFailedError, WaitTimeoutError
from mlsubmit.job.values import format_duration
from mlsubmit.services import retry
from mlsubmit.services.backends import TERMINAL_STATES, JobsBackend
from mlsubmit.services.retry import PollPolicy, RetryPolicy

T = TypeVar("T")


DEFAULT_POLL = PollPolicy()


class PollErrors:
    """Repeats a poll that failed transiently (``services.retry.call``), at most ``policy.error_budget`` times
    in a row, with the poll policy's backoff.

    A success resets the count. Refusals (403, 404, ...) are raised at once. When the budget is spent the
    last error is re-raised as an :class:`ApiError` whose message says the job may still be running, with no
    traceback (the CLI prints ``ERROR: ...``).
    """

    def __init__(self, what: str, hint: str, *, policy: PollPolicy) -> None:
        self.what = what
        self.hint = hint
        self.retry = RetryPolicy(
            attempts=policy.error_budget, initial=policy.initial, factor=policy.factor, cap=policy.cap
        )

    def call(self, fn: Callable[[], T]) -> T:
        """``fn()``, repeated after transient failures within the budget."""
        failures = 0

        def count(_err: BaseException, attempt: int) -> None:
            nonlocal failures
            failures = attempt

        try:
            return retry.call(
                fn,
                self.what,
                self.retry,
                sleep=console.current().wait,
                notify=console.current().notify,
                on_error=count,
                reason=str,
            )
        except ApiError as err:
            if not retry.is_transient(err):  # a busy or unreachable service, not a refusal
                raise
            raise ApiError(
                f"{self.what} failed {failures} times in a row; last error: {str(err).rstrip('.')}. {self.hint}",
                status=err.status,
            ) from None


# Fields of the text-mode summary of a job: gcloud's JOB_FORMAT (jobId, state, start and end time), the
# creation time and the service's error message.
SUMMARY_KEYS = ("jobId", "state", "createTime", "startTime", "endTime", "errorMessage")


def job_summary(job: Mapping[str, Any]) -> dict[str, Any]:
    """The few fields text output shows for a job (``jobId`` and ``state`` always)."""
    out = {key: job[key] for key in SUMMARY_KEYS if job.get(key)}
    out.setdefault("jobId", job.get("jobId"))
    out.setdefault("state", job.get("state"))
    return out


def state_of(job: Mapping[str, Any]) -> str:
    """The job's ml-style state (``STATE_UNSPECIFIED`` when the service gave none)."""
    return str(job.get("state") or "STATE_UNSPECIFIED")


def state_line(job: Mapping[str, Any]) -> str:
    """One progress line for a state change, e.g. ``Job [train_1] is RUNNING.``"""
    return f"Job [{job.get('jobId', '?')}] is {state_of(job)}."


def still_running_hint(job_id: str, extra_flags: str = "") -> str:
    """What to run next when we stop following a job that may still be going."""
    return (
        f"The job itself is not affected: follow it again with `mlsubmit jobs wait {job_id}{extra_flags}` "
        f"or stop it with `mlsubmit jobs cancel {job_id}{extra_flags}`."
    )


def wait_for_job(
    backend: JobsBackend,
    job_id: str,
    *,
    timeout: float | None,
    on_state: Callable[[dict[str, Any]], None],
    poll: PollPolicy = DEFAULT_POLL,
    hint_flags: str = "",
) -> dict[str, Any]:
    """Poll ``backend.get(job_id)`` until the job reaches a terminal state and return that final job.

    ``on_state`` gets the job at the first poll and at every state change. The interval backs off while
    nothing changes (``poll``). With ``timeout`` (seconds), :class:`WaitTimeoutError` is raised once the
    deadline passes with the job still going; the last poll happens at the deadline, not a whole interval
    after it. Transient polling errors are repeated within ``poll.error_budget`` (see :class:`PollErrors`).
    """
    out = console.current()
    errors = PollErrors(f"polling job {job_id}", still_running_hint(job_id, hint_flags), policy=poll)
    deadline = None if timeout is None else out.now() + max(0.0, timeout)
    last_state: str | None = None
    quiet = 0
    while True:
        job = errors.call(lambda: backend.get(job_id))
        state = state_of(job)
        if state != last_state:
            on_state(job)
            last_state, quiet = state, 0
        if state in TERMINAL_STATES:
            return job
        delay = poll.delay(quiet)
        quiet += 1
        if deadline is not None:
            left = deadline - out.now()
            if left <= 0:
                assert timeout is not None
                raise WaitTimeoutError(
                    f"timed out after {format_duration(timeout)}: job {job_id} is still {state}. "
                    + still_running_hint(job_id, hint_flags),
                    job,
                )
            delay = min(delay, left)
        out.wait(delay)


def outcome_exit(job: Mapping[str, Any]) -> ExitStatus:
    """The exit status a finished job maps to: 0 for SUCCEEDED, 1 for anything else."""
    return ExitStatus.OK if state_of(job) == "SUCCEEDED" else ExitStatus.FAILURE


def failure_message(job: Mapping[str, Any]) -> str:
    """``job X ended in state FAILED: <the service's errorMessage>``."""
    text = f"job {job.get('jobId', '?')} ended in state {state_of(job)}"
    error = str(job.get("errorMessage") or "").strip()
    return f"{text}: {error}" if error else f"{text}."


def raise_for_outcome(job: dict[str, Any]) -> dict[str, Any]:
    """Return ``job`` if it SUCCEEDED; otherwise raise :class:`JobFailedError` carrying its errorMessage."""
    if outcome_exit(job) is ExitStatus.OK:
        return job
    raise JobFailedError(failure_message(job))


def cancel_job(backend: JobsBackend, job_id: str) -> tuple[dict[str, Any], bool]:
    """Ask the service to cancel ``job_id``; return (the job as read afterwards, whether a cancel was sent).

    Like gcloud, cancelling a job that has already ended is not an error: nothing is sent and the job is
    returned as it is. A job that ends between our read and the cancel call makes the service answer 400
    FAILED_PRECONDITION; we read it again and treat it the same way.
    """
    job = backend.get(job_id)
    if state_of(job) in TERMINAL_STATES:
        return job, False
    try:
        backend.cancel(job_id)
    except ApiError as err:
        if err.status != 400:
            raise
        job = backend.get(job_id)
        if state_of(job) in TERMINAL_STATES:
            return job, False
        raise
    return backend.get(job_id), True


def drop_connections(backend: JobsBackend) -> None:
    """Close the pooled HTTP connections of the backend's ``services.rest`` client (best effort).

    Ctrl-C/SIGTERM raises KeyboardInterrupt wherever the program is, also between two requests of a page loop;
    the cancel sent next goes out on fresh connections, so it never waits on one left out of step with the
    server (until the socket timeout; a CI runner kills us long before). A closed connection is simply
    reopened.
    """
    client = getattr(getattr(backend, "service", None), "_client", None)
    connections = getattr(client, "connections", None)
    if isinstance(connections, dict):
        for conn in list(connections.values()):
            with contextlib.suppress(Exception):
                conn.close()
        connections.clear()


def interrupted(
    backend: JobsBackend, job_id: str, *, cancel: bool, hint_flags: str = ""
) -> FollowInterrupted:
    """The error to raise after Ctrl-C: cancel the job first when asked to, and say what became of it."""
    if not cancel:
        return FollowInterrupted(
            f"interrupted; job {job_id} was not cancelled and keeps running. "
            f"Cancel it with `mlsubmit jobs cancel {job_id}{hint_flags}`, "
            f"or follow it again with `mlsubmit jobs wait {job_id}{hint_flags}`."
        )
    drop_connections(backend)
    try:
        backend.cancel(job_id)
    except ApiError as err:
        return FollowInterrupted(
            f"interrupted; cancelling job {job_id} failed: {err} It may still be running; cancel it with "
            f"`mlsubmit jobs cancel {job_id}{hint_flags}`."
        )
    return FollowInterrupted(
        f"interrupted; asked the service to cancel job {job_id} (--cancel-on-interrupt). "
        f"Check it with `mlsubmit jobs describe {job_id}{hint_flags}`."
    )
