"""Ctrl-C (a real SIGINT) while `training --target vertex` fails over (docs/getting-jobs-to-start.md): the live
attempt's job keeps running and the message says how to follow it, or `--cancel-on-interrupt` cancels it; a job
adopted from an earlier run is never cancelled. Exit 130, no traceback. Region A answers the create with a quota
429; region B's job stays QUEUED, so the loop is waiting on B when the signal comes."""

from __future__ import annotations

import signal
from typing import Any

import pytest

from tests.fakes.api_server import FakeGoogleApis
from tests.fakes.children import signal_when
from tests.fakes.cli import start_cli_process
from tests.fakes.lifecycle_support import cli_env

A, B = "us-central1", "us-east4"
QUOTA = (
    "The following quota metrics exceed quota limits: aiplatform.googleapis.com/custom_model_training_cpus"
)
TRAIN = [
    "training", "my_job", "--target", "vertex", "--region", A, "--fallback-regions", B,
    "--packages", "gs://bkt/pkgs/trainer-0.1.tar.gz", "--module-name", "trainer.task",
    "--executor-image-uri", "us-docker.pkg.dev/vertex-ai/training/sklearn-cpu.1-0:latest",
]  # fmt: skip
CANCEL = r"/customJobs/\d+(:|%3A)cancel$"
B_HINT = f"--target vertex --region {B}"

pytestmark = pytest.mark.timeout(90)


def jobs_in(server: FakeGoogleApis, region: str) -> list[dict[str, Any]]:
    return [j for j in server.custom_jobs.values() if f"/locations/{region}/" in j["name"]]


def interrupt_while_queued(server: FakeGoogleApis, *extra: str) -> tuple[int, str, str]:
    """Run the failover in a child and send it SIGINT once it has polled B's queued job a few times."""

    def polls() -> int:
        return sum(len(server.requests_matching("GET", f"{j['name']}$")) for j in jobs_in(server, B))

    before = polls()  # a rerun: the earlier run's polls do not count
    child = start_cli_process([*TRAIN, *extra], env=cli_env(server))
    # once the loop watches B's job
    return signal_when(
        child, lambda: polls() >= before + 3, signal.SIGINT, what="the failover never watched B's job"
    )


@pytest.fixture
def regions(fake_apis: FakeGoogleApis) -> FakeGoogleApis:
    fake_apis.script_region(A, create_error=(429, QUOTA))
    fake_apis.script_region(B, ["JOB_STATE_QUEUED"])  # stays queued: the loop waits on it
    return fake_apis


def test_ctrl_c_leaves_the_live_attempt_running_and_says_how_to_follow_it(regions: FakeGoogleApis) -> None:
    code, stdout, stderr = interrupt_while_queued(regions)
    assert code == 130, stderr
    assert "ERROR: interrupted; job my_job was not cancelled and keeps running." in stderr
    assert f"`mlsubmit jobs wait my_job {B_HINT}`" in stderr  # the job id and its region
    assert "To resume the failover, run the same command again" in stderr
    assert "Traceback" not in stderr and stdout == ""
    assert regions.requests_matching("POST", CANCEL) == []
    (job,) = jobs_in(regions, B)
    assert job["state"] == "JOB_STATE_QUEUED"


def test_cancel_on_interrupt_cancels_the_live_attempt(regions: FakeGoogleApis) -> None:
    code, _stdout, stderr = interrupt_while_queued(regions, "--cancel-on-interrupt")
    assert code == 130, stderr
    assert "asked the service to cancel job my_job (--cancel-on-interrupt)" in stderr
    assert f"`mlsubmit jobs describe my_job {B_HINT}`" in stderr and "Traceback" not in stderr
    (cancel,) = regions.requests_matching("POST", CANCEL)
    (job,) = jobs_in(regions, B)
    assert job["name"] in cancel.path
    assert job["state"] in ("JOB_STATE_CANCELLING", "JOB_STATE_CANCELLED")
    assert jobs_in(regions, A) == []  # the quota answer made no job


def test_an_adopted_job_is_never_cancelled(regions: FakeGoogleApis) -> None:
    """The first run is interrupted and leaves B's job queued; the rerun adopts it, and its Ctrl-C leaves it be."""
    assert interrupt_while_queued(regions)[0] == 130
    code, _stdout, stderr = interrupt_while_queued(regions, "--cancel-on-interrupt")
    assert code == 130, stderr
    assert "adopting" in stderr and "was made by an earlier run, so it was not cancelled" in stderr
    assert f"`mlsubmit jobs cancel my_job {B_HINT}`" in stderr
    assert regions.requests_matching("POST", CANCEL) == []
    (job,) = jobs_in(regions, B)
    assert job["state"] == "JOB_STATE_QUEUED"
