"""Answers no API sends, read in the one reader (``services.answers.read_json``, docs/security.md): a number out
of range (``1e400``, ``NaN``, 400 digits) or a value nested 100,000 deep is exit 1 naming the call, never a crash
(exit 3); and a registry that drips its answer or never answers is a clear error, not "unexpected TimeoutError"; SIGTERM while
a cancel call hangs ends ``jobs cancel`` at once, saying the cancel may have been sent and how to check."""

from __future__ import annotations

import json
import signal
import socket
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.cli import run_cli, start_cli_process
from tests.fakes.hostile_http import Behaviour, HostileServer, answer, slow_drip
from tests.fakes.trainers import write_trainer

TOKEN = "ya29.hostile-answers-SECRET-token-5e1d"
DEEP = b'{"name": "j1", "state": "RUNNING", "x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
OUT_OF_RANGE = [
    b'{"name": "projects/p/locations/us-central1/customJobs/1", "state": "JOB_STATE_RUNNING", "x": 1e400}',
    b'{"name": "projects/p/locations/us-central1/customJobs/1", "state": "JOB_STATE_RUNNING", "x": NaN}',
    b'{"name": "projects/p/locations/us-central1/customJobs/1", "state": "JOB_STATE_RUNNING", "x": '
    + b"9" * 400
    + b"}",
]
JOB = [
    "--region", "us-central1", "--packages", "gs://pkgs/trainer-0.1.tar.gz", "--module-name", "trainer.task",
    "--executor-image-uri", "us-docker.pkg.dev/vertex-ai/training/pytorch-gpu.2-4.py310:latest",
    "--scale-tier", "custom", "--master-machine-type", "n1-standard-8",
    "--master-accelerator", "type=nvidia-tesla-t4,count=2",
]  # fmt: skip


def silent() -> Behaviour:
    """Reads the request, answers nothing, keeps the connection open (until the server stops)."""

    def behave(request: Any, sock: socket.socket, stop: threading.Event) -> bool:
        stop.wait(30)
        return False

    return behave


def env_for(url: str, **extra: str) -> dict[str, str | None]:
    return {
        "CLOUDSDK_AUTH_ACCESS_TOKEN": TOKEN,
        "CLOUDSDK_CORE_PROJECT": "p",
        "CLOUDSDK_API_ENDPOINT_OVERRIDES_ML": url,
        "CLOUDSDK_API_ENDPOINT_OVERRIDES_AIPLATFORM": url,
        "CLOUDSDK_API_ENDPOINT_OVERRIDES_SERVICEUSAGE": url,
        "CLOUDSDK_API_ENDPOINT_OVERRIDES_STORAGE": url + "storage/v1/",
        "MLSUBMIT_RETRY_INITIAL_DELAY": "0.01",
        "MLSUBMIT_POLL_INTERVAL": "0.01",
        **extra,
    }


def assert_clean(result: Any, code: int, *fragments: str) -> str:
    output = result.stdout + result.stderr
    assert result.exit_code == code, output[-2000:]
    assert "Traceback" not in output and "unexpected" not in output and "report it" not in output, output
    assert TOKEN not in output
    for fragment in fragments:
        assert fragment in output, output[-2000:]
    return output


@pytest.mark.timeout(60)
@pytest.mark.parametrize("body", [DEEP, *OUT_OF_RANGE], ids=["deep", "1e400", "NaN", "400-digits"])
def test_jobs_describe_on_vertex_refuses_an_answer_no_api_sends(body: bytes) -> None:
    with HostileServer(answer(200, body, {"Content-Type": "application/json"})) as server:
        result = run_cli(
            ["jobs", "describe", "1", "--target", "vertex", "--region", "us-central1"],
            env=env_for(server.url),
        )
    why = "nests more than 100 levels" if body is DEEP else "which no API sends"
    output = assert_clean(result, 1, why)
    assert "retrying" not in output  # an answer came: another try would get the same


QUOTA = {
    "metrics": [
        {
            "metric": "aiplatform.googleapis.com/custom_model_training_nvidia_t4_gpus",
            "consumerQuotaLimits": [
                {"quotaBuckets": [{"effectiveLimit": "@", "dimensions": {"region": "us-central1"}}]}
            ],
        }
    ]
}


@pytest.mark.timeout(60)
@pytest.mark.parametrize("value", [b"1e400", b"[" * 100_000 + b"]" * 100_000], ids=["1e400", "deep"])
def test_preflight_with_a_quota_out_of_range_says_it_could_not_check(value: bytes) -> None:
    body = json.dumps(QUOTA).encode().replace(b'"@"', value)
    with HostileServer(answer(200, body, {"Content-Type": "application/json"})) as server:
        result = run_cli(["preflight", "my_job", *JOB, "--format", "json"], env=env_for(server.url))
    output = assert_clean(result, result.exit_code)
    assert result.exit_code in (0, 1, 2)  # the verdict of the other checks; never a crash
    report = json.loads(result.stdout)
    (quota,) = [
        c
        for c in report["checks"]
        if c["name"].startswith("quota aiplatform.googleapis.com/custom_model_training_nvidia_t4")
    ]
    assert quota["status"] != "ok", output
    assert "which no API sends" in quota["message"] or "nests more than" in quota["message"], quota


@pytest.mark.timeout(60)
@pytest.mark.parametrize("behaviour", [slow_drip(interval=0.05), silent()], ids=["drips", "never-answers"])
def test_a_registry_that_drips_or_never_answers_is_a_clear_error(
    behaviour: Behaviour, tmp_path: Path
) -> None:
    trainer = write_trainer(tmp_path, "print('hi')\n")
    with HostileServer(behaviour) as server:
        host = server.url.removeprefix("http://").rstrip("/")
        result = run_cli(
            ["local", "train", "--package-path", str(trainer), "--module-name", "trainer.task", "--build-image",
             "--builder", "buildah", "--output-image-uri", f"{host}/p/trainer", "--base-image", "python:3.11-slim",
             "--job-dir", str(tmp_path / "out")],
            env=env_for(server.url, MLSUBMIT_HTTP_TIMEOUT="0.2"),  # each of the five tries waits this long
        )  # fmt: skip
    assert_clean(result, 1, f"{host} did not answer HEAD", "TimeoutError", "MLSUBMIT_HTTP_TIMEOUT")


def _cancel_hangs(request: Any, sock: socket.socket, stop: threading.Event) -> bool:
    """Answers the job read; the cancel call is read and never answered."""
    if request.method == "GET":
        body = json.dumps({"jobId": "j1", "state": "RUNNING"}).encode()
        head = f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
        sock.sendall(head.encode() + body)
        return True
    stop.wait(60)
    return False


@pytest.mark.timeout(60)
def test_jobs_cancel_under_sigterm_while_the_cancel_hangs_ends_and_says_what_may_have_happened() -> None:
    with HostileServer(_cancel_hangs) as server:
        env = {k: v for k, v in env_for(server.url).items() if v is not None}
        child = start_cli_process(["jobs", "cancel", "j1"], env=env)
        try:
            ends = time.monotonic() + 20
            while not any(r.method == "POST" for r in server.requests) and time.monotonic() < ends:
                time.sleep(0.05)
            child.send_signal(signal.SIGTERM)
            sent = time.monotonic()
            _, stderr = child.communicate(timeout=10)
        finally:
            if child.poll() is None:
                child.kill()
                child.communicate()
    assert time.monotonic() - sent < 5
    assert child.returncode == 130, stderr
    assert "Traceback" not in stderr and TOKEN not in stderr
    assert (
        "interrupted while asking the service to cancel job [j1]; the request may have reached it" in stderr
    )
    assert "mlsubmit jobs describe j1" in stderr
