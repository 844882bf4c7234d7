"""`mlsubmit jobs wait` against the loopback API: exit codes per outcome, states, timeout, polling errors."""

from __future__ import annotations

import pytest

from tests.fakes.api_server import FakeGoogleApis
from tests.fakes.lifecycle_support import parse_json, point_cli_at, run_cli, seed_job

JOB_GET = r"^/v1/projects/p/jobs/j1$"


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch, fake_apis: FakeGoogleApis) -> None:
    point_cli_at(monkeypatch, fake_apis)


@pytest.mark.parametrize(
    ("final", "error_message", "exit_code"),
    [
        ("SUCCEEDED", None, 0),
        ("FAILED", "The replica master 0 ran out of memory.", 1),
        ("CANCELLED", None, 1),
    ],
)
def test_exit_code_follows_the_outcome(
    fake_apis: FakeGoogleApis, final: str, error_message: str | None, exit_code: int
) -> None:
    seed_job(fake_apis, "j1", ["QUEUED", "PREPARING", "RUNNING", "RUNNING", final], error_message)
    result = run_cli(["jobs", "wait", "j1"])
    assert result.exit_code == exit_code, result.stderr
    states = [line for line in result.stderr.splitlines() if line.startswith("Job [j1] is ")]
    assert states == [f"Job [j1] is {s}." for s in ("QUEUED", "PREPARING", "RUNNING", final)]
    assert f"state: {final}" in result.stdout and "jobId: j1" in result.stdout
    if final == "FAILED":
        assert f"ERROR: job j1 ended in state FAILED: {error_message}" in result.stderr
    elif final == "CANCELLED":
        assert "ERROR: job j1 ended in state CANCELLED: Job cancelled by the user." in result.stderr
    else:
        assert "ERROR" not in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("fmt", ["json", "yaml"])
def test_machine_readable_output_is_the_final_job(fake_apis: FakeGoogleApis, fmt: str) -> None:
    seed_job(fake_apis, "j1", ["RUNNING", "FAILED"], "boom")
    result = run_cli(["jobs", "wait", "j1", "--format", fmt])
    assert result.exit_code == 1
    if fmt == "json":
        job = parse_json(result)
    else:
        import yaml

        job = yaml.safe_load(result.stdout)
    assert job["jobId"] == "j1" and job["state"] == "FAILED"
    assert job["errorMessage"] == "boom"
    assert job["trainingInput"] == {"region": "us-central1"}  # the whole resource, not a summary


def test_timeout_exits_1_and_says_the_job_is_still_running(fake_apis: FakeGoogleApis) -> None:
    fake_apis.add_job({"jobId": "j1", "state": "RUNNING", "trainingInput": {}}, project="p")
    result = run_cli(["jobs", "wait", "j1", "--timeout", "0s", "--format", "json"])
    assert result.exit_code == 1
    assert "ERROR: timed out after 0s: job j1 is still RUNNING." in result.stderr
    assert "mlsubmit jobs cancel j1" in result.stderr
    job = parse_json(result)
    assert (job["jobId"], job["state"]) == ("j1", "RUNNING")
    assert fake_apis.requests_matching("POST", r":cancel$") == []  # the job is left alone


def test_timeout_that_is_not_reached(fake_apis: FakeGoogleApis) -> None:
    seed_job(fake_apis, "j1", ["RUNNING", "SUCCEEDED"])
    assert run_cli(["jobs", "wait", "j1", "--timeout", "2h"]).exit_code == 0


@pytest.mark.parametrize("bad", ["soon", "-5", "1h 30m"])
def test_bad_timeout_is_a_usage_error(fake_apis: FakeGoogleApis, bad: str) -> None:
    result = run_cli(["jobs", "wait", "j1", "--timeout", bad])
    assert result.exit_code == 2
    assert "not a duration" in result.stderr
    assert fake_apis.requests == []


def test_transient_errors_while_polling_are_retried(fake_apis: FakeGoogleApis) -> None:
    seed_job(fake_apis, "j1", ["QUEUED", "RUNNING", "SUCCEEDED"])
    fake_apis.inject("GET", JOB_GET, 503, times=3)
    fake_apis.inject_drop("GET", JOB_GET, times=1)
    result = run_cli(["jobs", "wait", "j1", "--format", "json"])
    assert result.exit_code == 0, result.stderr
    assert parse_json(result)["state"] == "SUCCEEDED"
    assert "HTTP 503" in result.stderr
    assert fake_apis.pending_faults() == []


def test_polling_that_keeps_failing_ends_with_one_error_and_no_traceback(fake_apis: FakeGoogleApis) -> None:
    seed_job(fake_apis, "j1", ["RUNNING"])
    fake_apis.inject("GET", JOB_GET, 503, times=None)
    result = run_cli(["jobs", "wait", "j1"])
    assert result.exit_code == 1
    errors = [line for line in result.stderr.splitlines() if line.startswith("ERROR:")]
    assert len(errors) == 1
    assert errors[0].startswith(
        "ERROR: polling job j1 failed 5 times in a row; last error: reading job j1 failed: HTTP 503"
    )
    assert "mlsubmit jobs wait j1" in errors[0] and ".." not in errors[0]
    assert "Traceback" not in result.stderr
    # Bounded: 5 polls, each with the API layer's 5 attempts.
    assert len(fake_apis.requests_matching("GET", JOB_GET)) == 25


def test_a_missing_job_is_reported_at_once(fake_apis: FakeGoogleApis) -> None:
    result = run_cli(["jobs", "wait", "nope"])
    assert result.exit_code == 1
    assert "ERROR: job 'nope' not found in project p." in result.stderr
    assert len(fake_apis.requests_matching("GET", r"/jobs/nope$")) == 1
