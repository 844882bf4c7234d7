"""``mlsubmit.api`` against the loopback APIs (docs/api.md), as Airflow uses it: one task submits and pushes the
handle's JSON (an XCom), another process gets only that JSON and polls; ``status()`` is one GET and no sleep,
``cancel()`` of a finished job is an error, an edited handle is refused before any request."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from mlsubmit import api
from mlsubmit.errors import ApiError, JobEndedError, UsageError
from tests.fakes.api_server import FakeGoogleApis
from tests.fakes.cli import _child_env
from tests.fakes.lifecycle_support import PROJECT, point_cli_at

REPO = Path(__file__).resolve().parents[2]
REGION = "us-central1"
IMAGE = "us-docker.pkg.dev/vertex-ai/training/sklearn-cpu.1-0:latest"
FLAGS: dict[str, Any] = {"packages": ["gs://bkt/pkgs/trainer-0.0.0.tar.gz"], "job_dir": "gs://bkt/out"}
VERTEX: dict[str, Any] = {**FLAGS, "target": "vertex", "executor_image_uri": IMAGE}
# the Airflow worker that polls: a fresh interpreter given nothing but the handle's JSON on stdin
POLLER = """
import sys
from mlsubmit.api import Handle
handle = Handle.from_json(sys.stdin.read())
print(handle.status().state)
final = handle.wait()
print(final.state, final.succeeded)
"""


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch, fake_apis: FakeGoogleApis) -> None:
    point_cli_at(monkeypatch, fake_apis)


@pytest.fixture
def config(tmp_path: Path) -> Path:
    """The tuning example without its hyperparameters: a plain job in us-central1."""
    data = yaml.safe_load((REPO / "examples" / "trainer_tune" / "config.yaml").read_text())
    del data["trainingInput"]["hyperparameters"]
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_airflow_submits_in_one_process_and_polls_the_handle_from_another(
    fake_apis: FakeGoogleApis, config: Path
) -> None:
    handle = api.submit("job_1", config, VERTEX)
    assert fake_apis.custom_job_bodies == [api.plan("job_1", config, VERTEX).body]  # the dry run's body
    assert (handle.target, handle.project, handle.region) == ("vertex", PROJECT, REGION)
    assert handle.name.startswith(f"projects/{PROJECT}/locations/{REGION}/customJobs/")
    xcom = json.loads(json.dumps(handle.to_json()))  # what Airflow stores and hands to the next task
    done = subprocess.run(
        [sys.executable, "-c", POLLER],
        input=xcom,
        env=_child_env(None),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["QUEUED", "SUCCEEDED True"]
    assert len(fake_apis.requests_matching("POST", r"/customJobs$")) == 1  # created once


def test_the_cli_and_the_api_send_the_same_ml_body(
    fake_apis: FakeGoogleApis, config: Path, run_cli: Any
) -> None:
    handle = api.submit("job_api", config, FLAGS)
    typed = ["--packages", FLAGS["packages"][0], "--job-dir", FLAGS["job_dir"]]
    cli = run_cli(["training", "job_cli", "--config", str(config), *typed])
    assert cli.exit_code == 0, cli.stderr
    api_body, cli_body = fake_apis.job_bodies[0], fake_apis.job_bodies[-1]
    assert {**api_body, "jobId": "job_cli"} == cli_body
    assert handle == api.Handle("job_api", "ml", PROJECT, None, f"projects/{PROJECT}/jobs/job_api")
    assert api.attach("job_api") == handle
    with pytest.raises(UsageError, match="job id 'a/b' is invalid"):
        api.attach("a/b")


@pytest.mark.parametrize("flags", [FLAGS, VERTEX], ids=["ml", "vertex"])
def test_status_is_one_get_and_no_sleep(
    fake_apis: FakeGoogleApis, config: Path, monkeypatch: pytest.MonkeyPatch, flags: dict[str, Any]
) -> None:
    handle = api.submit("job_1", config, flags)
    fake_apis.clear_requests()

    def no_sleep(_seconds: float) -> None:
        raise AssertionError("status() slept")

    monkeypatch.setattr(time, "sleep", no_sleep)
    first, second = handle.status(), handle.status()
    requests = fake_apis.requests
    assert [r.method for r in requests] == ["GET", "GET"]
    assert all(r.path == f"/v1/{handle.name}" for r in requests)
    assert (first.job_id, first.done, second.state) == ("job_1", False, "PREPARING")
    fake_apis.inject("GET", f"^/v1/{handle.name}$", 503)  # no retry, no sleep: the next poke is the retry
    with pytest.raises(ApiError):
        handle.status()
    assert len(fake_apis.requests) == 3


def test_wait_logs_and_a_cancel_after_the_end(fake_apis: FakeGoogleApis, config: Path) -> None:
    handle = api.submit("job_1", config, FLAGS)
    fake_apis.add_log_lines("job_1", ["epoch 1", "epoch 2"], when_state="RUNNING")
    lines: list[str] = []
    final = handle.logs(follow=True, emit=lines.append)
    assert final.succeeded and final.state == "SUCCEEDED"
    assert [line.rsplit("\t", 1)[-1] for line in lines] == ["epoch 1", "epoch 2"]
    again: list[str] = []
    assert handle.logs(emit=again.append).succeeded  # the lines there now, one read
    assert again == lines
    fake_apis.clear_requests()
    with pytest.raises(
        JobEndedError, match=r"^job job_1 has already ended \(SUCCEEDED\); nothing to cancel\.$"
    ):
        handle.cancel()
    assert fake_apis.requests_matching("POST") == []  # nothing was sent to cancel


def test_cancel_of_a_running_vertex_job(fake_apis: FakeGoogleApis, config: Path) -> None:
    fake_apis.script_custom_job("job_1", ["JOB_STATE_RUNNING"] * 50)
    handle = api.submit("job_1", config, VERTEX)
    status = handle.cancel()
    assert status.state in ("CANCELLING", "CANCELLED")
    [cancel] = fake_apis.requests_matching("POST", r":cancel$")
    assert cancel.path == f"/v1/{handle.name}:cancel"
    assert handle.wait().state == "CANCELLED"


def test_attach_finds_the_job_a_submit_made(fake_apis: FakeGoogleApis, config: Path) -> None:
    handle = api.submit("job_1", config, VERTEX)
    assert api.attach("job_1", target="vertex", region=REGION) == handle
    assert api.attach(handle.name, target="vertex", region=REGION) == handle
    with pytest.raises(UsageError, match="job: 'a\"b' is not a job id"):
        api.attach('a"b', target="vertex", region=REGION)


def test_an_edited_handle_sends_nothing(fake_apis: FakeGoogleApis, config: Path) -> None:
    handle = api.submit("job_1", config, VERTEX)
    fake_apis.clear_requests()
    data = json.loads(handle.to_json())
    data["name"] = data["name"].replace(f"projects/{PROJECT}/", "projects/someone-else/")
    with pytest.raises(UsageError, match="refusing a handle mlsubmit did not write"):
        api.Handle.from_json(json.dumps(data)).status()
    assert fake_apis.requests == []


def test_bad_input_creates_nothing(fake_apis: FakeGoogleApis, config: Path) -> None:
    with pytest.raises(UsageError, match="did you mean 'job_dir'"):
        api.submit("job_1", config, {**VERTEX, "jobdir": "gs://bkt/out"})
    assert fake_apis.requests == []
