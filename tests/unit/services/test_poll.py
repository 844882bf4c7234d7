"""Waiting for a job: backoff, state reports, timeout, transient errors, outcome -> exit code."""

from __future__ import annotations

from typing import Any

import pytest

from mlsubmit.console import Console, using
from mlsubmit.errors import ApiError, ExitStatus, JobFailedError, UsageError
from mlsubmit.job.values import parse_human_duration as parse_duration
from mlsubmit.services.poll import (
    WaitTimeoutError,
    cancel_job,
    format_duration,
    job_summary,
    raise_for_outcome,
    wait_for_job,
)
from mlsubmit.services.retry import PollPolicy, log_lag_from_env
from tests.fakes.follow import FakeClock, ScriptedBackend

POLL = PollPolicy(initial=1.0, factor=2.0, cap=8.0, error_budget=3)


def run_wait(
    backend: ScriptedBackend, timeout: float | None = None, poll: PollPolicy = POLL
) -> tuple[dict[str, Any], list[str], FakeClock, list[str]]:
    clock = FakeClock()
    states: list[str] = []
    notes: list[str] = []
    with using(Console(sleep=clock.sleep, clock=clock.clock, notify=notes.append)):
        job = wait_for_job(
            backend, "j1", timeout=timeout, on_state=lambda j: states.append(j["state"]), poll=poll
        )
    return job, states, clock, notes


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("90", 90.0),
        ("3600s", 3600.0),
        ("30m", 1800.0),
        ("2h", 7200.0),
        ("1h30m", 5400.0),
        ("1.5h", 5400.0),
        ("1d", 86400.0),
        ("2H", 7200.0),
        (" 45s ", 45.0),
        ("0", 0.0),
    ],
)
def test_parse_duration_accepts(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "abc", "30x", "-5", "1h 30m", "m", "5 minutes", "1e3"])
def test_parse_duration_refuses(text: str) -> None:
    with pytest.raises(ValueError, match="not a duration"):
        parse_duration(text)


@pytest.mark.parametrize(
    ("seconds", "text"), [(0, "0s"), (45, "45s"), (1800, "30m"), (5400, "1h30m"), (7201, "2h1s")]
)
def test_format_duration(seconds: float, text: str) -> None:
    assert format_duration(seconds) == text


def test_poll_policy_backs_off_to_the_cap() -> None:
    assert [POLL.delay(n) for n in range(6)] == [1.0, 2.0, 4.0, 8.0, 8.0, 8.0]


def test_poll_interval_env_fixes_the_interval_and_retry_delay() -> None:
    env = {"MLSUBMIT_POLL_INTERVAL": "0.25"}
    policy = PollPolicy.from_env(env, POLL)
    assert [policy.delay(n) for n in range(3)] == [0.25, 0.25, 0.25]
    assert policy.error_budget == POLL.error_budget
    assert PollPolicy.from_env({}, POLL) is POLL


@pytest.mark.parametrize(("raw", "seconds"), [(None, None), ("0", 0.0), ("0.05", 0.05), ("300", 300.0)])
def test_the_log_ingestion_lag_comes_from_the_environment(raw: str | None, seconds: float | None) -> None:
    assert log_lag_from_env({} if raw is None else {"MLSUBMIT_LOG_LAG": raw}) == seconds


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("soon", "expected a number"),
        ("-1", "from 0 to 300"),
        ("nan", "from 0 to 300"),
        ("301", "from 0 to 300"),
    ],
)
def test_the_log_ingestion_lag_is_range_checked(raw: str, message: str) -> None:
    with pytest.raises(UsageError, match=f"MLSUBMIT_LOG_LAG='{raw}': .*{message}"):
        log_lag_from_env({"MLSUBMIT_LOG_LAG": raw})


@pytest.mark.parametrize("raw", ["soon", "-1", "nan"])
def test_poll_interval_env_must_be_seconds(raw: str) -> None:
    with pytest.raises(UsageError, match="MLSUBMIT_POLL_INTERVAL"):
        PollPolicy.from_env({"MLSUBMIT_POLL_INTERVAL": raw})


def test_wait_reports_each_state_once_and_returns_the_final_job() -> None:
    backend = ScriptedBackend(["QUEUED", "QUEUED", "PREPARING", "RUNNING", "RUNNING", "RUNNING", "SUCCEEDED"])
    job, states, clock, _ = run_wait(backend)
    assert states == ["QUEUED", "PREPARING", "RUNNING", "SUCCEEDED"]
    assert job == {"jobId": "j1", "state": "SUCCEEDED"}
    assert backend.gets == 7
    # The interval grows while nothing changes and starts again after each change.
    assert clock.sleeps == [1.0, 2.0, 1.0, 1.0, 2.0, 4.0]


@pytest.mark.parametrize("final", ["FAILED", "CANCELLED"])
def test_wait_stops_at_any_terminal_state(final: str) -> None:
    job, states, _, _ = run_wait(ScriptedBackend(["RUNNING", final, "RUNNING"]))
    assert job["state"] == final
    assert states == ["RUNNING", final]


def test_wait_timeout_raises_with_the_running_job_and_polls_at_the_deadline() -> None:
    backend = ScriptedBackend(["RUNNING"])
    clock = FakeClock()
    with using(Console(sleep=clock.sleep, clock=clock.clock)), pytest.raises(WaitTimeoutError) as caught:
        wait_for_job(backend, "j1", timeout=10.0, on_state=lambda _j: None, poll=POLL)
    assert caught.value.job == {"jobId": "j1", "state": "RUNNING"}
    message = str(caught.value)
    assert "timed out after 10s" in message
    assert "still RUNNING" in message
    assert "mlsubmit jobs cancel j1" in message
    assert caught.value.exit_status == ExitStatus.FAILURE
    # 1 + 2 + 4 = 7 s, then only the 3 s left (not 8), then one last poll exactly at the deadline.
    assert clock.sleeps == [1.0, 2.0, 4.0, 3.0]
    assert backend.gets == 5


def test_wait_zero_timeout_polls_once() -> None:
    backend = ScriptedBackend(["QUEUED"])
    with pytest.raises(WaitTimeoutError, match="still QUEUED"):
        run_wait(backend, timeout=0)
    assert backend.gets == 1


def test_wait_timeout_is_not_hit_when_the_job_ends_in_time() -> None:
    job, _, _, _ = run_wait(ScriptedBackend(["RUNNING", "RUNNING", "SUCCEEDED"]), timeout=60)
    assert job["state"] == "SUCCEEDED"


@pytest.mark.parametrize("status", [None, 429, 500, 503])
def test_transient_polling_errors_are_retried_and_reported(status: int | None) -> None:
    backend = ScriptedBackend(
        ["RUNNING", ApiError("busy", status=status), ApiError("busy", status=status), "SUCCEEDED"]
    )
    job, states, clock, notes = run_wait(backend)
    assert job["state"] == "SUCCEEDED"
    assert states == ["RUNNING", "SUCCEEDED"]
    assert len(notes) == 2
    assert all(n.startswith("polling job j1: busy; retrying in ") for n in notes)
    assert clock.sleeps == [1.0, 1.0, 2.0]  # the poll interval, then error backoff 1 s and 2 s


def test_polling_errors_beyond_the_budget_become_one_api_error() -> None:
    backend = ScriptedBackend(["RUNNING", ApiError("HTTP 503 UNAVAILABLE", status=503)])
    with pytest.raises(ApiError) as caught:
        run_wait(backend)
    message = str(caught.value)
    assert message.startswith("polling job j1 failed 3 times in a row; last error: HTTP 503 UNAVAILABLE.")
    assert "mlsubmit jobs wait j1" in message
    assert caught.value.__cause__ is None and caught.value.__suppress_context__
    assert backend.gets == 4


def test_budget_counts_consecutive_failures_only() -> None:
    err = ApiError("busy", status=503)
    backend = ScriptedBackend(["RUNNING", err, err, "RUNNING", err, err, "SUCCEEDED"])
    job, _, _, notes = run_wait(backend)
    assert job["state"] == "SUCCEEDED"
    assert len(notes) == 4


@pytest.mark.parametrize("status", [400, 401, 403, 404])
def test_refusals_are_not_retried(status: int) -> None:
    backend = ScriptedBackend(["RUNNING", ApiError("no", status=status), "SUCCEEDED"])
    with pytest.raises(ApiError, match=r"^no$"):
        run_wait(backend)
    assert backend.gets == 2


@pytest.mark.parametrize(
    ("job", "code"),
    [
        ({"jobId": "j", "state": "SUCCEEDED"}, ExitStatus.OK),
        ({"jobId": "j", "state": "FAILED", "errorMessage": "boom"}, ExitStatus.FAILURE),
        ({"jobId": "j", "state": "CANCELLED"}, ExitStatus.FAILURE),
        ({"jobId": "j", "state": "RUNNING"}, ExitStatus.FAILURE),
        ({"jobId": "j"}, ExitStatus.FAILURE),
    ],
)
def test_outcome_exit(job: dict[str, Any], code: ExitStatus) -> None:
    if code is ExitStatus.OK:
        assert raise_for_outcome(job) is job
    else:
        with pytest.raises(JobFailedError) as caught:
            raise_for_outcome(job)
        assert caught.value.exit_status == code


def test_raise_for_outcome_passes_success_through() -> None:
    job = {"jobId": "j", "state": "SUCCEEDED"}
    assert raise_for_outcome(job) is job


@pytest.mark.parametrize(
    ("job", "message"),
    [
        (
            {"jobId": "j", "state": "FAILED", "errorMessage": "The replica master 0 exited with status 1."},
            "job j ended in state FAILED: The replica master 0 exited with status 1.",
        ),
        (
            {"jobId": "j", "state": "CANCELLED", "errorMessage": "Job cancelled by the user."},
            "job j ended in state CANCELLED: Job cancelled by the user.",
        ),
        ({"jobId": "j", "state": "FAILED"}, "job j ended in state FAILED."),
    ],
)
def test_raise_for_outcome_carries_the_service_error(job: dict[str, Any], message: str) -> None:
    with pytest.raises(JobFailedError) as caught:
        raise_for_outcome(job)
    assert str(caught.value) == message
    assert caught.value.exit_status == ExitStatus.FAILURE


def test_cancel_sends_a_cancel_for_a_running_job() -> None:
    backend = ScriptedBackend(["RUNNING", "CANCELLING"])
    job, sent = cancel_job(backend, "j1")
    assert sent and backend.cancels == ["j1"]
    assert job["state"] == "CANCELLING"


def test_cancel_of_an_ended_job_sends_nothing() -> None:
    backend = ScriptedBackend(["SUCCEEDED"])
    job, sent = cancel_job(backend, "j1")
    assert not sent and backend.cancels == []
    assert job["state"] == "SUCCEEDED"


def test_cancel_racing_with_the_end_of_the_job_is_not_an_error() -> None:
    backend = ScriptedBackend(["RUNNING", "FAILED"])
    backend.cancel_error = ApiError("already in a terminal state", status=400)
    job, sent = cancel_job(backend, "j1")
    assert not sent and backend.cancels == ["j1"]
    assert job["state"] == "FAILED"


def test_cancel_refused_for_another_reason_is_raised() -> None:
    backend = ScriptedBackend(["RUNNING"])
    backend.cancel_error = ApiError("denied", status=403)
    with pytest.raises(ApiError, match="denied"):
        cancel_job(backend, "j1")


def test_job_summary_keeps_the_fields_text_output_shows() -> None:
    job = {
        "jobId": "j",
        "state": "FAILED",
        "createTime": "c",
        "startTime": "s",
        "endTime": "e",
        "errorMessage": "boom",
        "trainingInput": {"region": "r"},
        "etag": "x",
    }
    assert job_summary(job) == {
        k: job[k] for k in ("jobId", "state", "createTime", "startTime", "endTime", "errorMessage")
    }
    assert job_summary({"jobId": "j"}) == {"jobId": "j", "state": None}
