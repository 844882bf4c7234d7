"""Following a job: poll its state with backoff until it ends, and map the outcome to an exit code. Waits,
the clock and notices go through the command's console, so tests never really wait."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from mlsubmit import console
from mlsubmit.errors import ApiError, FollowInterrupted, JobFailedError, WaitTimeoutError
from mlsubmit.job.values import format_duration
from mlsubmit.services import retry
from mlsubmit.services.backends import TERMINAL_STATES, JobsBackend
from mlsubmit.services.retry import PollPolicy, RetryPolicy

T = TypeVar("T")


class PollErrors:
    """Repeats a transiently failed poll ``policy.error_budget`` times in a row, then ApiError + ``hint``."""

    def __init__(self, what: str, hint: str, *, policy: PollPolicy) -> None:
        self.what = what
        self.hint = hint
        self.retry = RetryPolicy(
            attempts=policy.error_budget, initial=policy.initial, factor=policy.factor, cap=policy.cap
        )

    def call(self, fn: Callable[[], T]) -> T:
        """``fn()``, repeated after transient failures within the budget."""
        out = console.current()
        try:
            return retry.call(fn, self.what, self.retry, sleep=out.wait, notify=out.notify, reason=str)
        except ApiError as err:
            if not retry.is_transient(err):  # a busy or unreachable service, not a refusal
                raise
            raise ApiError(
                f"{self.what} failed {self.retry.attempts} times in a row; last error: {str(err).rstrip('.')}. "
                f"{self.hint}",
                status=err.status,
            ) from None


def job_summary(job: Mapping[str, Any]) -> dict[str, Any]:
    """The fields text output shows: gcloud's JOB_FORMAT (jobId, state, times) and the service's error message."""
    out = {key: job.get(key) for key in ("jobId", "state")}
    out.update({k: job[k] for k in ("createTime", "startTime", "endTime", "errorMessage") if job.get(k)})
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
    poll: PollPolicy,
    hint_flags: str = "",
    hint: str | None = None,
) -> dict[str, Any]:
    """Poll ``backend.get(job_id)`` until the job ends; the final job. ``on_state`` sees state changes; past
    ``timeout`` seconds WaitTimeoutError; ``hint`` ends a spent error budget (default: still_running_hint)."""
    out = console.current()
    errors = PollErrors(f"polling job {job_id}", hint or still_running_hint(job_id, hint_flags), policy=poll)
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
        out.wait(wait_before(deadline, poll.delay(quiet), job, job_id, timeout, hint_flags))
        quiet += 1


def wait_before(
    deadline: float | None,
    delay: float,
    job: dict[str, Any],
    job_id: str,
    timeout: float | None,
    hint_flags: str,
) -> float:
    """``delay`` cut to the time left before ``deadline``; past it, WaitTimeoutError (last poll: deadline)."""
    left = None if deadline is None else deadline - console.current().now()
    if left is not None and left <= 0:
        raise WaitTimeoutError(
            f"timed out after {format_duration(timeout or 0)}: job {job_id} is still {state_of(job)}. "
            + still_running_hint(job_id, hint_flags),
            job,
        )
    return delay if left is None else min(delay, left)


def raise_for_outcome(job: dict[str, Any]) -> dict[str, Any]:
    """``job`` if it SUCCEEDED; else :class:`JobFailedError`: ``job X ended in state FAILED: <errorMessage>``."""
    if state_of(job) == "SUCCEEDED":
        return job
    text = f"job {job.get('jobId', '?')} ended in state {state_of(job)}"
    error = str(job.get("errorMessage") or "").strip()
    raise JobFailedError(f"{text}: {error}" if error else f"{text}.")


def cancel_job(backend: JobsBackend, job_id: str) -> tuple[dict[str, Any], bool]:
    """Cancel ``job_id``; (the job as read afterwards, whether a cancel was sent). As gcloud, an ended job is not
    an error (nothing sent), also one that ends before the cancel (the service answers 400 FAILED_PRECONDITION)."""
    job = backend.get(job_id)
    if state_of(job) in TERMINAL_STATES:
        return job, False
    try:
        backend.cancel(job_id)
    except ApiError as err:  # a 400 for a job that ended meanwhile
        if err.status == 400 and state_of(job := backend.get(job_id)) in TERMINAL_STATES:
            return job, False
        raise
    return backend.get(job_id), True


def drop_connections(backend: JobsBackend) -> None:
    """Close the backend client's pooled connections (best effort): a cancel after Ctrl-C goes on fresh ones."""
    wire = getattr(getattr(getattr(backend, "service", None), "_client", None), "wire", None)
    if wire is not None:
        wire.close()


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
