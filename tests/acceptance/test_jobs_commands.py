"""`mlsubmit jobs describe|list|cancel` against the loopback ml API; JSON output of every command."""

from __future__ import annotations

import pytest
import yaml

from tests.fakes.api_server import FakeGoogleApis
from tests.fakes.lifecycle_support import PROJECT, parse_json, point_cli_at, run_cli, seed_job

CANCEL = r"^/v1/projects/p/jobs/j1(:|%3A)cancel$"


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch, fake_apis: FakeGoogleApis) -> None:
    point_cli_at(monkeypatch, fake_apis)


def add_jobs(server: FakeGoogleApis, states: dict[str, str]) -> None:
    for job_id, state in states.items():
        server.add_job({"jobId": job_id, "state": state, "trainingInput": {"region": "us-central1"}}, PROJECT)


# -- describe ---------------------------------------------------------------------------------------------


def test_describe_json_is_the_whole_job(fake_apis: FakeGoogleApis) -> None:
    add_jobs(fake_apis, {"j1": "RUNNING"})
    result = run_cli(["jobs", "describe", "j1", "--format", "json"])
    assert result.exit_code == 0
    job = parse_json(result)
    assert (job["jobId"], job["state"]) == ("j1", "RUNNING")
    assert job["trainingInput"] == {"region": "us-central1"}
    assert "https://console.cloud.google.com/ai-platform/jobs/j1?project=p" in result.stderr


def test_describe_text_is_yaml_of_the_whole_job(fake_apis: FakeGoogleApis) -> None:
    add_jobs(fake_apis, {"j1": "FAILED"})
    result = run_cli(["jobs", "describe", "j1"])
    assert result.exit_code == 0  # describing a failed job is not a failure of describe
    job = yaml.safe_load(result.stdout)
    assert job["state"] == "FAILED" and job["errorMessage"]


def test_describe_uses_the_project_flag(fake_apis: FakeGoogleApis) -> None:
    fake_apis.add_job({"jobId": "j1", "state": "QUEUED", "trainingInput": {}}, project="other")
    result = run_cli(["jobs", "describe", "j1", "--project", "other", "--format", "json"])
    assert result.exit_code == 0
    assert [r.path for r in fake_apis.requests] == ["/v1/projects/other/jobs/j1"]


def test_describe_of_a_missing_job_exits_1(fake_apis: FakeGoogleApis) -> None:
    result = run_cli(["jobs", "describe", "nope"])
    assert result.exit_code == 1
    assert result.stderr.strip() == "ERROR: job 'nope' not found in project p."


# -- list -------------------------------------------------------------------------------------------------


def test_list_json_is_a_list_of_jobs(fake_apis: FakeGoogleApis) -> None:
    add_jobs(fake_apis, {"a": "SUCCEEDED", "b": "FAILED", "c": "RUNNING"})
    result = run_cli(["jobs", "list", "--format", "json"])
    assert result.exit_code == 0
    jobs = parse_json(result)
    assert [(j["jobId"], j["state"]) for j in jobs] == [("a", "SUCCEEDED"), ("b", "FAILED"), ("c", "RUNNING")]


def test_list_filter_and_limit_reach_the_service(fake_apis: FakeGoogleApis) -> None:
    add_jobs(fake_apis, {f"f{n}": "FAILED" for n in range(30)})
    add_jobs(fake_apis, {"ok": "SUCCEEDED"})
    result = run_cli(["jobs", "list", "--filter", "state=FAILED", "--limit", "25", "--format", "json"])
    assert result.exit_code == 0
    jobs = parse_json(result)
    assert [j["jobId"] for j in jobs] == [f"f{n}" for n in range(25)]
    first = fake_apis.requests_matching("GET", r"/jobs$")[0]
    assert first.param("filter") == "state=FAILED"


def test_list_text_is_a_table(fake_apis: FakeGoogleApis) -> None:
    add_jobs(fake_apis, {"train_1": "SUCCEEDED", "t2": "RUNNING"})
    result = run_cli(["jobs", "list"])
    assert result.exit_code == 0
    rows = [line.split() for line in result.stdout.splitlines()]
    assert [row[:2] for row in rows] == [["JOB_ID", "STATUS"], ["train_1", "SUCCEEDED"], ["t2", "RUNNING"]]
    assert rows[0][2] == "CREATED" and len(rows[1]) == 3


def test_list_of_nothing(fake_apis: FakeGoogleApis) -> None:
    text = run_cli(["jobs", "list"])
    assert (text.exit_code, text.stdout, text.stderr.strip()) == (0, "", "Listed 0 items.")
    assert parse_json(run_cli(["jobs", "list", "--format", "json"])) == []


# -- cancel -----------------------------------------------------------------------------------------------


def test_cancel_reaches_the_api_and_the_job_ends_cancelled(fake_apis: FakeGoogleApis) -> None:
    seed_job(fake_apis, "j1", ["RUNNING"])
    result = run_cli(["jobs", "cancel", "j1", "--format", "json"])
    assert result.exit_code == 0, result.stderr
    job = parse_json(result)
    assert (job["jobId"], job["state"]) == ("j1", "CANCELLING")
    assert len(fake_apis.requests_matching("POST", CANCEL)) == 1
    assert "Cancellation of job [j1] requested" in result.stderr
    # The job then ends CANCELLED, which `wait` reports as a failure with the service's message.
    waited = run_cli(["jobs", "wait", "j1", "--format", "json"])
    assert waited.exit_code == 1
    assert parse_json(waited)["state"] == "CANCELLED"
    assert "ERROR: job j1 ended in state CANCELLED: Job cancelled by the user." in waited.stderr


def test_cancel_of_an_ended_job_sends_nothing_and_succeeds(fake_apis: FakeGoogleApis) -> None:
    add_jobs(fake_apis, {"j1": "SUCCEEDED"})
    result = run_cli(["jobs", "cancel", "j1"])
    assert result.exit_code == 0
    assert "already ended (SUCCEEDED); nothing to cancel" in result.stderr
    assert yaml.safe_load(result.stdout)["state"] == "SUCCEEDED"
    assert fake_apis.requests_matching("POST", CANCEL) == []


def test_cancel_refused_exits_1(fake_apis: FakeGoogleApis) -> None:
    seed_job(fake_apis, "j1", ["RUNNING"])
    fake_apis.inject_permission_denied("ml.jobs.cancel", "POST", CANCEL)
    result = run_cli(["jobs", "cancel", "j1"])
    assert result.exit_code == 1
    assert "HTTP 403 PERMISSION_DENIED" in result.stderr and "ml.jobs.cancel" in result.stderr


# -- usage ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("command", ["describe", "cancel", "wait"])
def test_vertex_needs_a_region(fake_apis: FakeGoogleApis, command: str) -> None:
    result = run_cli(["jobs", command, "123", "--target", "vertex"])
    assert result.exit_code == 2
    assert "--target vertex needs a region" in result.stderr
    assert fake_apis.requests == []


def test_no_project_is_a_usage_error(fake_apis: FakeGoogleApis, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CLOUDSDK_CORE_PROJECT")
    result = run_cli(["jobs", "describe", "j1"])
    assert result.exit_code == 2
    assert "no project" in result.stderr


def test_jobs_help_lists_every_command() -> None:
    result = run_cli(["jobs", "--help"])
    assert result.exit_code == 0
    for command in ("cancel", "describe", "list", "stream-logs", "wait"):
        assert command in result.stdout
