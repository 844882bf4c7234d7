"""`mlsubmit jobs ... --target vertex` against the loopback aiplatform and logging APIs."""

from __future__ import annotations

from typing import Any

import pytest

from tests.fakes.api_server import FakeGoogleApis
from tests.fakes.lifecycle_support import PROJECT, parse_json, point_cli_at, run_cli

pytest.importorskip("mlsubmit.services.vertex")

from mlsubmit.job.vocab import JOB_ID_LABEL, job_id_label

REGION = "us-central1"
VERTEX = ["--target", "vertex", "--region", REGION]
STATES = ["JOB_STATE_QUEUED", "JOB_STATE_PENDING", "JOB_STATE_RUNNING", "JOB_STATE_RUNNING"]


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch, fake_apis: FakeGoogleApis) -> None:
    point_cli_at(monkeypatch, fake_apis)


def seed_custom_job(server: FakeGoogleApis, job_id: str, states: list[str], error: str | None = None) -> str:
    """A custom job mlsubmit submitted as ``job_id``; returns its numeric id."""
    server.script_custom_job(job_id, states, error_message=error)
    resource: dict[str, Any] = {
        "displayName": job_id,
        "labels": {JOB_ID_LABEL: job_id_label(job_id)},
        "jobSpec": {
            "workerPoolSpecs": [{"machineSpec": {"machineType": "n1-standard-4"}, "replicaCount": "1"}]
        },
    }
    stored = server.add_custom_job(resource, project=PROJECT, region=REGION)
    return str(stored["name"]).rsplit("/", 1)[-1]


@pytest.mark.parametrize(("final", "code"), [("JOB_STATE_SUCCEEDED", 0), ("JOB_STATE_FAILED", 1)])
def test_wait_maps_vertex_states(fake_apis: FakeGoogleApis, final: str, code: int) -> None:
    seed_custom_job(fake_apis, "my_job", [*STATES, final], error="replica workerpool0-0 exited with 1")
    result = run_cli(["jobs", "wait", "my_job", *VERTEX, "--format", "json"])
    assert result.exit_code == code, result.stderr
    job = parse_json(result)
    assert job["jobId"] == "my_job"
    assert job["state"] == final.removeprefix("JOB_STATE_")
    states = [line for line in result.stderr.splitlines() if line.startswith("Job [my_job] is ")]
    assert states[:3] == ["Job [my_job] is QUEUED.", "Job [my_job] is PREPARING.", "Job [my_job] is RUNNING."]
    if code:
        assert "ERROR: job my_job ended in state FAILED: replica workerpool0-0 exited with 1" in result.stderr


def test_stream_logs_reads_the_numeric_id_and_prints_gcloud_ai_columns(fake_apis: FakeGoogleApis) -> None:
    number = seed_custom_job(fake_apis, "my_job", [*STATES, "JOB_STATE_SUCCEEDED"])
    fake_apis.add_log_lines(
        number, ["epoch 1", "epoch 2"], task_name="workerpool0-0", when_state="JOB_STATE_RUNNING"
    )
    fake_apis.add_log_lines(number, ["saved"], task_name="workerpool0-0", when_state="JOB_STATE_SUCCEEDED")
    result = run_cli(["jobs", "stream-logs", "my_job", *VERTEX])
    assert result.exit_code == 0, result.stderr
    rows = [line.split("\t") for line in result.stdout.splitlines()]
    assert [row[-1] for row in rows] == ["epoch 1", "epoch 2", "saved"]
    assert all(len(row) == 4 and row[2] == "workerpool0-0" for row in rows)  # no trial column, as gcloud ai
    filters = [r.json["filter"] for r in fake_apis.requests_matching("POST", r"^/v2/entries")]
    assert filters[0].startswith(f'resource.type="ml_job" AND resource.labels.job_id="{number}"')


def test_stream_logs_json_carries_job_id_and_state(fake_apis: FakeGoogleApis) -> None:
    number = seed_custom_job(fake_apis, "my_job", ["JOB_STATE_RUNNING", "JOB_STATE_SUCCEEDED"])
    fake_apis.add_log_lines(number, ["hi"])
    result = run_cli(["jobs", "stream-logs", number, *VERTEX, "--format", "json"])
    assert result.exit_code == 0, result.stderr
    assert parse_json(result)["state"] == "SUCCEEDED"
    assert result.stderr.splitlines()[-1] == "Job [my_job] is SUCCEEDED."
    assert [line.split("\t")[-1] for line in result.stderr.splitlines() if "\t" in line] == ["hi"]


def test_describe_list_cancel_json(fake_apis: FakeGoogleApis) -> None:
    seed_custom_job(fake_apis, "my_job", ["JOB_STATE_RUNNING"])
    described = parse_json(run_cli(["jobs", "describe", "my_job", *VERTEX, "--format", "json"]))
    assert (described["jobId"], described["state"]) == ("my_job", "RUNNING")
    listed = parse_json(run_cli(["jobs", "list", *VERTEX, "--format", "json"]))
    assert [(j["jobId"], j["state"]) for j in listed] == [("my_job", "RUNNING")]
    cancelled = run_cli(["jobs", "cancel", "my_job", *VERTEX, "--format", "json"])
    assert cancelled.exit_code == 0, cancelled.stderr
    assert parse_json(cancelled)["state"] == "CANCELLING"
    assert len(fake_apis.requests_matching("POST", r"/customJobs/\d+(:|%3A)cancel$")) == 1
    assert "mlsubmit jobs describe my_job --target vertex --region us-central1" in cancelled.stderr


def test_region_from_the_environment(fake_apis: FakeGoogleApis, monkeypatch: pytest.MonkeyPatch) -> None:
    seed_custom_job(fake_apis, "my_job", ["JOB_STATE_SUCCEEDED"])
    monkeypatch.setenv("CLOUDSDK_COMPUTE_REGION", REGION)
    result = run_cli(["jobs", "wait", "my_job", "--target", "vertex"])
    assert result.exit_code == 0, result.stderr
