"""Every interrupt names what is in flight (issue 26): a real SIGTERM while a create is sent and not answered
(on one region and during the failover) says the job may exist, where, and how to check it; a SIGTERM while a
job that queued too long is being cancelled says so, not that it "keeps running". Exit 130, no traceback."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from tests.fakes.api_server import FakeGoogleApis
from tests.fakes.children import signal_when
from tests.fakes.cli import start_cli_process
from tests.fakes.cloudbuild_api import BUILDS_CREATE, FakeCloudBuild, build_env
from tests.fakes.lifecycle_support import cli_env
from tests.fakes.trainers import LEGACY_BASIC, write_legacy_project

A, B = "us-central1", "us-east4"
QUOTA = (
    "The following quota metrics exceed quota limits: aiplatform.googleapis.com/custom_model_training_cpus"
)
JOB = [
    "--packages", "gs://bkt/pkgs/trainer-0.1.tar.gz", "--module-name", "trainer.task",
    "--executor-image-uri", "us-docker.pkg.dev/vertex-ai/training/sklearn-cpu.1-0:latest",
]  # fmt: skip
CREATE = r"/locations/{}/customJobs$"
CANCEL = r"/customJobs/\d+(:|%3A)cancel$"

pytestmark = pytest.mark.timeout(90)


def sigterm_when_sent(server: FakeGoogleApis, args: list[str], path: str) -> tuple[int, str, str]:
    """Run `training` in a child, hold the first request to ``path`` unanswered and SIGTERM the child then."""
    server.hold("POST", path, parties=2, timeout=5)  # never a second one: it is answered after 5 s, too late
    child = start_cli_process(args, env=cli_env(server))
    return signal_when(
        child, lambda: bool(server.requests_matching("POST", path)), signal.SIGTERM, what=f"no POST {path}"
    )


def test_sigterm_during_a_single_region_create_names_the_job_and_its_region(
    fake_apis: FakeGoogleApis,
) -> None:
    code, stdout, stderr = sigterm_when_sent(
        fake_apis, ["training", "my_job", "--target", "vertex", "--region", A, *JOB], CREATE.format(A)
    )
    assert code == 130, stderr
    assert f"interrupted while creating job my_job in region {A}: the job may exist there" in stderr, stderr
    assert f"`mlsubmit jobs describe my_job --target vertex --region {A}`" in stderr
    assert "Traceback" not in stderr and stdout == ""


@pytest.mark.parametrize("cancel", [[], ["--cancel-on-interrupt"]])
def test_sigterm_during_a_failover_create_names_the_candidate_and_region(
    fake_apis: FakeGoogleApis, cancel: list[str]
) -> None:
    fake_apis.script_region(A, create_error=(429, QUOTA))  # candidate 1 answers quota: the loop goes on to B
    code, stdout, stderr = sigterm_when_sent(
        fake_apis,
        ["training", "my_job", "--target", "vertex", "--region", A, "--fallback-regions", B, *JOB, *cancel],
        CREATE.format(B),
    )
    assert code == 130, stderr
    assert f"interrupted while creating job my_job in {B} (failover candidate" in stderr, stderr
    assert "the job may exist there" in stderr
    assert f"`mlsubmit jobs describe my_job --target vertex --region {B}`" in stderr
    assert "no attempt" not in stderr and "Traceback" not in stderr and stdout == ""


def test_sigterm_while_a_job_queued_too_long_is_cancelled_says_it_is_being_cancelled(
    fake_apis: FakeGoogleApis,
) -> None:
    fake_apis.script_region(A, ["JOB_STATE_QUEUED"])  # stays queued: cancelled after --max-queue-wait
    code, stdout, stderr = sigterm_when_sent(
        fake_apis,
        ["training", "my_job", "--target", "vertex", "--region", A, "--fallback-regions", B,
         "--max-queue-wait", "1s", *JOB],
        CANCEL,
    )  # fmt: skip
    assert code == 130, stderr
    assert "queued too long and is being cancelled" in stderr, stderr
    assert f"`mlsubmit jobs describe my_job --target vertex --region {A}`" in stderr
    assert "keeps running" not in stderr and "Traceback" not in stderr and stdout == ""


def test_sigterm_while_a_cloud_build_is_being_started_names_the_build_to_look_for(
    tmp_path: Path,
) -> None:
    write_legacy_project(tmp_path, LEGACY_BASIC)
    with FakeCloudBuild(project="p") as server:
        server.hold("POST", BUILDS_CREATE, parties=2, timeout=5)
        child = start_cli_process(
            ["training", "j1", "--config", "legacy.yaml", "--package-path", "trainer", "--staging-bucket",
             "gs://stage", "--target", "vertex", "--region", A, "--build-image", "--builder", "cloud-build",
             "--output-image-uri", f"127.0.0.1:{server.port}/p/mlsubmit/trainer"],
            cwd=tmp_path, env=build_env(server),
        )  # fmt: skip
        code, stdout, stderr = signal_when(
            child,
            lambda: bool(server.requests_matching("POST", BUILDS_CREATE)),
            signal.SIGTERM,
            what="no build was started",
        )
        jobs = server.custom_job_bodies
    assert code == 130, stderr
    assert "interrupted while starting the Cloud Build of 127.0.0.1:" in stderr, stderr
    assert "a build may have started; no job was created" in stderr
    assert "`gcloud builds list --filter=tags=" in stderr
    assert jobs == [] and "Traceback" not in stderr and stdout == ""


def test_sigterm_during_the_upload_says_no_job_was_created(fake_apis: FakeGoogleApis, tmp_path: Path) -> None:
    package = tmp_path / "trainer-0.1.tar.gz"
    package.write_bytes(b"not really a package, but bytes to upload")
    upload = r"^/(?:resumable/)?upload/storage/v1/b/[^/]+/o$"
    code, stdout, stderr = sigterm_when_sent(
        fake_apis,
        ["training", "my_job", "--target", "vertex", "--region", A, "--staging-bucket", "gs://bkt",
         "--packages", str(package), "--module-name", "trainer.task",
         "--executor-image-uri", "us-docker.pkg.dev/vertex-ai/training/sklearn-cpu.1-0:latest"],
        upload,
    )  # fmt: skip
    assert code == 130, stderr
    assert "interrupted before job my_job was created: no job was created" in stderr, stderr
    assert fake_apis.requests_matching("POST", CREATE.format(A)) == []
    assert "Traceback" not in stderr and stdout == ""
