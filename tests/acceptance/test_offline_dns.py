"""With no network, a name that does not resolve is said as such, at once (issue 27, item 6): `mlsubmit preflight`
is not ok and exits 1 (it checked nothing), no read is retried for seconds, a submit that never left the machine
does not say an attempt may have reached the service, and staging says the name does not resolve."""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.cli import run_cli
from tests.fakes.network_guard import is_loopback_host
from tests.fakes.trainers import write_trainer

JOB = [
    "--region",
    "us-central1",
    "--packages",
    "gs://pkgs/trainer-0.1.tar.gz",
    "--module-name",
    "trainer.task",
]
JOB += ["--job-dir", "gs://out/run1", "--framework", "scikit-learn", "--framework-version", "1.3"]


@pytest.fixture(autouse=True)
def offline(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """A machine without DNS: every name but loopback fails to resolve, as getaddrinfo does offline."""
    asked: list[str] = []
    real = socket.create_connection

    def create_connection(address: Any, *args: Any, **kwargs: Any) -> socket.socket:
        host = address[0]
        if is_loopback_host(host):
            return real(address, *args, **kwargs)
        asked.append(str(host))
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(socket, "create_connection", create_connection)
    monkeypatch.setenv("CLOUDSDK_AUTH_ACCESS_TOKEN", "fake")
    monkeypatch.setenv("CLOUDSDK_CORE_PROJECT", "p")
    return asked


def test_preflight_offline_is_not_ok_says_why_and_is_quick(offline: list[str]) -> None:
    started = time.monotonic()
    result = run_cli(["preflight", "j1", *JOB, "--format", "json"])
    took = time.monotonic() - started
    report = json.loads(result.stdout)
    assert result.exit_code == 1, result.stderr
    assert report["ok"] is False
    unchecked = [c for c in report["checks"] if c["status"] == "unchecked"]
    assert unchecked and all("host name does not resolve" in c["message"] for c in unchecked)
    assert "retrying" not in result.stderr
    assert "check(s) could not run, so the job is not known to start" in result.stderr
    assert offline and took < 5  # one attempt per read (gaierror is not retried), not 15 s of retries


def test_a_custom_image_offline_is_not_reached_either() -> None:
    args = ["--region", "us-central1", "--master-image-uri", "us-docker.pkg.dev/p/repo/img:v1"]
    args += ["--job-dir", "gs://out/run1", "--scale-tier", "custom", "--master-machine-type", "n1-standard-4"]
    result = run_cli(["preflight", "j1", *args, "--format", "json"])
    assert result.exit_code == 1, result.stderr
    (image,) = [c for c in json.loads(result.stdout)["checks"] if c["name"].startswith("image ")]
    assert image["status"] == "unchecked" and "host name does not resolve" in image["message"]


def test_a_submit_that_never_left_says_so(tmp_path: Path) -> None:
    result = run_cli(
        ["training", "j1", *JOB[:6], "--runtime-version", "2.11", "--staging-bucket", "gs://b-1"]
    )
    assert result.exit_code == 1, result.stderr
    assert "does not resolve" in result.stderr
    assert "may have reached the service" not in result.stderr


def test_staging_offline_says_the_name_does_not_resolve(tmp_path: Path) -> None:
    package = write_trainer(tmp_path, "print('hi')\n")
    args = [
        *JOB[:2],
        "--package-path",
        str(package),
        "--module-name",
        "trainer.task",
        "--staging-bucket",
        "gs://b-1",
    ]
    result = run_cli(["training", "j1", *args, *JOB[8:], "--target", "vertex", "--no-preflight"])
    assert result.exit_code == 1, result.stderr
    assert (
        "Cloud Storage's host name does not resolve" in result.stderr and "nothing was sent" in result.stderr
    )
    assert "retrying" not in result.stderr
