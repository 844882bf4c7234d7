"""`training --wait` / `--stream-logs`: one command that submits, follows and exits with the job's outcome."""

from __future__ import annotations

import pytest

from tests.fakes.api_server import FakeGoogleApis
from tests.fakes.lifecycle_support import parse_json, point_cli_at, run_cli

SUBMIT = [
    "training", "JOB", "--region", "us-central1", "--packages", "gs://bkt/trainer-0.0.0.tar.gz",
    "--module-name", "trainer.task", "--runtime-version", "2.11",
]  # fmt: skip


def submit(job_id: str, *flags: str) -> list[str]:
    return [job_id if a == "JOB" else a for a in SUBMIT] + list(flags)


@pytest.fixture
def server(fake_apis: FakeGoogleApis, monkeypatch: pytest.MonkeyPatch) -> FakeGoogleApis:
    point_cli_at(monkeypatch, fake_apis)
    return fake_apis


@pytest.mark.parametrize(
    ("states", "error", "exit_code"),
    [
        (["QUEUED", "PREPARING", "RUNNING", "SUCCEEDED"], None, 0),
        (["QUEUED", "RUNNING", "FAILED"], "The replica master 0 exited with a non-zero status of 1.", 1),
        (["QUEUED", "RUNNING", "CANCELLED"], None, 1),
    ],
    ids=["succeeded", "failed", "cancelled"],
)
def test_wait_exits_with_the_jobs_outcome(
    server: FakeGoogleApis, states: list[str], error: str | None, exit_code: int
) -> None:
    server.script_job("follow_me", states, error_message=error)
    result = run_cli(submit("follow_me", "--wait", "--format", "json"))
    assert result.exit_code == exit_code, result.stderr
    job = parse_json(result)  # exactly one JSON document on stdout: the final job
    assert job["jobId"] == "follow_me" and job["state"] == states[-1]
    seen = [line for line in result.stderr.splitlines() if line.startswith("Job [follow_me] is ")]
    assert seen == [f"Job [follow_me] is {s}." for s in states]
    if error:
        assert error in result.stderr
    assert len(server.job_bodies) == 1


def test_stream_logs_prints_each_line_once_then_exits_with_the_outcome(server: FakeGoogleApis) -> None:
    server.script_job("logged", ["QUEUED", "RUNNING", "RUNNING", "FAILED"], error_message="boom")
    server.add_log_lines("logged", ["epoch 1", "epoch 2", "epoch 3"])
    result = run_cli(submit("logged", "--stream-logs"))
    assert result.exit_code == 1
    lines = [line for line in result.stderr.splitlines() if "epoch" in line]
    assert [line.rsplit("\t", 1)[-1] for line in lines] == ["epoch 1", "epoch 2", "epoch 3"]
    assert "boom" in result.stderr


def test_async_is_the_default_and_does_not_poll(server: FakeGoogleApis) -> None:
    result = run_cli(submit("fire_and_forget"))
    assert result.exit_code == 0
    assert result.stdout.splitlines() == ["jobId: fire_and_forget", "state: QUEUED"]
    assert not server.requests_matching("GET", r"/jobs/fire_and_forget$")


def test_async_with_wait_is_a_usage_error(server: FakeGoogleApis) -> None:
    result = run_cli(submit("both", "--async", "--wait"))
    assert result.exit_code == 2
    assert not server.job_bodies


def vertex_submit(job_id: str, config: str, *flags: str) -> list[str]:
    """A Vertex AI submit whose region comes from the config file only (no --region, no environment)."""
    args = [a for a in submit(job_id) if a not in ("--region", "us-central1")]
    return [*args, "--config", config, "--target", "vertex", *flags]


@pytest.fixture
def region_in_file(
    server: FakeGoogleApis, monkeypatch: pytest.MonkeyPatch, tmp_path: pytest.TempPathFactory
) -> str:
    monkeypatch.delenv("CLOUDSDK_COMPUTE_REGION", raising=False)
    config = tmp_path / "job.yaml"  # type: ignore[operator]
    config.write_text("trainingInput:\n  region: europe-west4\n", encoding="utf-8")
    return str(config)


def test_ctrl_c_after_a_vertex_wait_names_the_jobs_region(
    server: FakeGoogleApis, region_in_file: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import time

    server.script_custom_job("vx_follow", ["JOB_STATE_QUEUED", "JOB_STATE_RUNNING"])
    calls = {"n": 0}

    def ctrl_c(_seconds: float) -> None:
        calls["n"] += 1
        if calls["n"] >= 3:
            raise KeyboardInterrupt

    monkeypatch.setattr(time, "sleep", ctrl_c)
    result = run_cli(vertex_submit("vx_follow", region_in_file, "--wait"))
    assert result.exit_code == 130, result.stderr
    assert "`mlsubmit jobs cancel vx_follow --target vertex --region europe-west4`" in result.stderr
    assert "--region None" not in result.stderr


def test_async_vertex_submit_suggests_commands_with_the_jobs_region(
    server: FakeGoogleApis, region_in_file: str
) -> None:
    result = run_cli(vertex_submit("vx_async", region_in_file))
    assert result.exit_code == 0, result.stderr
    assert "mlsubmit jobs describe vx_async --target vertex --region europe-west4" in result.stderr
