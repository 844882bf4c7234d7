"""Nothing remote is adopted on its name alone (issue 26): a running Cloud Build under mlsubmit's tags and image
name that builds another archive is not "the build of this content", a create answered with a job of another
project or region is not taken for ours, and an interrupt names what is in flight."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.api_server import VERTEX_CREATE
from tests.fakes.cli import run_cli
from tests.fakes.cloudbuild_api import BUILDS_CREATE, FakeCloudBuild
from tests.fakes.wire import RecordedRequest


def build_submit(cloud_build: FakeCloudBuild, job_id: str) -> list[str]:
    return [
        "training", job_id, "--config", "legacy.yaml", "--package-path", "trainer", "--staging-bucket",
        "gs://stage", "--target", "vertex", "--region", "us-central1", "--build-image", "--builder",
        "cloud-build", "--output-image-uri", f"127.0.0.1:{cloud_build.port}/p/mlsubmit/trainer",
    ]  # fmt: skip


def ran_image(cloud_build: FakeCloudBuild, job_id: str) -> str:
    body = next(b for b in cloud_build.custom_job_bodies if b.get("displayName") == job_id)
    spec = body["jobSpec"]["workerPoolSpecs"][0]
    return str((spec.get("containerSpec") or spec.get("pythonPackageSpec"))["imageUri"])


def other_bucket(build: dict[str, Any]) -> None:
    build["source"]["storageSource"]["bucket"] = "attacker"


def other_object(build: dict[str, Any]) -> None:
    build["source"]["storageSource"]["object"] = "evil/context.tar.gz"


def other_generation(build: dict[str, Any]) -> None:  # an older version of the object at our name
    build["source"]["storageSource"]["generation"] = "1"


def another_step(build: dict[str, Any]) -> None:
    build["steps"].append({"name": "gcr.io/attacker/step", "args": ["poison"]})


@pytest.mark.parametrize("change", [other_bucket, other_object, other_generation, another_step])
def test_a_running_build_of_another_source_under_our_tags_is_not_adopted(
    basic_trainer: Path, cloud_build: FakeCloudBuild, change: Callable[[dict[str, Any]], None]
) -> None:
    first = run_cli(build_submit(cloud_build, "j1"))
    assert first.exit_code == 0, first.stderr
    (ours,) = cloud_build.stored_builds
    # someone else's build: the same tags and image name, another archive (or steps), still running
    theirs = copy.deepcopy(ours)
    theirs["id"] = "00000000-0000-4000-8000-999999999999"
    theirs["name"] = theirs["name"].rsplit("/", 1)[0] + "/" + theirs["id"]
    change(theirs)
    theirs["status"] = "WORKING"
    theirs["results"] = {"images": [{"name": ours["images"][0], "digest": "sha256:" + "e" * 64}]}
    with cloud_build._lock:
        stored = cloud_build.builds[ours["id"]]
        cloud_build.builds[theirs["id"]] = type(stored)(theirs, copy.deepcopy(stored.script), pos=1)
        cloud_build.preflight.images.clear()  # the registry lost the image: it must be built again
    second = run_cli(build_submit(cloud_build, "j2"))
    assert second.exit_code == 0, second.stderr
    assert theirs["id"] not in second.stderr, second.stderr
    assert len(cloud_build.build_bodies) == 2  # ours was started, theirs not followed
    image, before = ran_image(cloud_build, "j2"), ran_image(cloud_build, "j1")
    assert "e" * 64 not in image
    assert image == before  # the digest of this content, as built from this run's archive


def plain_submit(job_id: str, *more: str) -> list[str]:
    return [
        "training", job_id, "--config", "legacy.yaml", "--package-path", "trainer", "--staging-bucket",
        "gs://stage", "--target", "vertex", "--region", "us-central1", *more,
    ]  # fmt: skip


@pytest.mark.parametrize(
    "name",
    [
        "projects/other/locations/europe-west4/customJobs/42",  # another project and region
        "projects/p/locations/europe-west4/customJobs/42",  # our project, another region
        "projects/other/locations/us-central1/customJobs/42",  # another project (by id), our region
    ],
)
def test_a_create_answered_with_a_job_elsewhere_is_not_taken_for_ours(
    basic_trainer: Path, cloud_build: FakeCloudBuild, name: str
) -> None:

    def foreign(request: RecordedRequest) -> dict[str, Any]:
        return {**request.json, "name": name, "state": "JOB_STATE_QUEUED"}

    cloud_build.inject("POST", VERTEX_CREATE, 200, after=True, body=foreign)
    result = run_cli(plain_submit("j1"))
    touched = [r.path for r in cloud_build.requests_matching(None, r"customJobs/42")]
    cancels = cloud_build.requests_matching("POST", r"cancel")
    assert result.exit_code == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert "not taking it for ours" in result.stderr, result.stderr
    assert "mlsubmit jobs describe j1 --target vertex --region us-central1" in result.stderr
    assert touched == [] and cancels == []  # never read, polled or cancelled


def test_under_failover_a_foreign_answer_stops_the_loop(
    basic_trainer: Path, cloud_build: FakeCloudBuild
) -> None:

    def foreign(request: RecordedRequest) -> dict[str, Any]:
        # a text the failover table would read as a stockout: still not a reason to create elsewhere
        return {
            **request.json,
            "name": "projects/o/locations/resources-exhausted/customJobs/7",
            "state": "JOB_STATE_QUEUED",
        }

    cloud_build.inject("POST", VERTEX_CREATE, 200, after=True, body=foreign)
    result = run_cli(
        ["training", "j1", "--target", "vertex", "--region", "us-central1", "--fallback-regions", "us-east4",
         "--packages", "gs://bkt/pkgs/trainer-0.1.tar.gz", "--module-name", "trainer.task",
         "--executor-image-uri", "us-docker.pkg.dev/vertex-ai/training/sklearn-cpu.1-0:latest"]
    )  # fmt: skip
    creates = cloud_build.requests_matching("POST", VERTEX_CREATE)
    cancels = cloud_build.requests_matching("POST", r"cancel")
    assert result.exit_code == 1, result.stderr
    assert "not taking it for ours" in result.stderr, result.stderr
    assert len(creates) == 1 and cancels == []


def test_a_listed_job_named_in_another_project_is_never_cancelled(cloud_build: FakeCloudBuild) -> None:
    foreign = {
        "name": "projects/other/locations/us-central1/customJobs/42",
        "displayName": "j1",
        "labels": {"mlsubmit_job_id": "j1"},
        "state": "JOB_STATE_RUNNING",
        "createTime": "2026-11-27T00:00:00Z",
    }
    cloud_build.inject(
        "GET", r"/locations/us-central1/customJobs$", 200, times=None, body={"customJobs": [foreign]}
    )
    result = run_cli(["jobs", "cancel", "j1", "--target", "vertex", "--region", "us-central1"])
    touched = cloud_build.requests_matching(None, r"customJobs/42")
    assert result.exit_code == 1, result.stderr
    assert "not found" in result.stderr and "Traceback" not in result.stderr
    assert touched == []


def test_a_build_create_answered_with_a_build_of_another_source_is_not_followed(
    basic_trainer: Path, cloud_build: FakeCloudBuild
) -> None:

    def other_source(request: RecordedRequest) -> dict[str, Any]:
        build = {**request.json, "id": "00000000-0000-4000-8000-999999999999", "status": "QUEUED"}
        build["source"] = {"storageSource": {"bucket": "attacker", "object": "evil.tar.gz"}}
        return {"name": "projects/p/locations/global/operations/x", "metadata": {"build": build}}

    cloud_build.inject("POST", BUILDS_CREATE, 200, after=True, body=other_source)
    result = run_cli(build_submit(cloud_build, "j1"))
    jobs = cloud_build.custom_job_bodies
    reads = cloud_build.requests_matching("GET", r"builds/00000000-0000-4000-8000-999999999999")
    assert result.exit_code == 1, result.stderr
    assert (
        "which builds another image, source or steps" in result.stderr and "not following it" in result.stderr
    )
    assert jobs == [] and reads == [] and "Traceback" not in result.stderr


def test_a_build_read_back_from_another_source_gives_no_digest_to_run(
    basic_trainer: Path, cloud_build: FakeCloudBuild
) -> None:

    def swapped(request: RecordedRequest) -> dict[str, Any]:
        build = copy.deepcopy(cloud_build.builds[request.path.rsplit("/", 1)[1]].resource)
        build["source"] = {"storageSource": {"bucket": "attacker", "object": "evil.tar.gz"}}
        return build

    cloud_build.inject("GET", r"/builds/[^/:%]+$", 200, times=None, after=True, body=swapped)
    result = run_cli(build_submit(cloud_build, "j1"))
    jobs = cloud_build.custom_job_bodies
    assert result.exit_code == 1, result.stderr
    assert "not this run's archive and steps; not running the image it reports" in result.stderr, (
        result.stderr
    )
    assert jobs == [] and "Traceback" not in result.stderr
