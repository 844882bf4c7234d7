"""`mlsubmit training --target vertex --build-image`: one build per change, a job pinned by digest, no job after a
failed build (docs/containers.md). Cloud Build, Cloud Storage, Vertex AI and the registry are one loopback fake."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.cli import run_cli
from tests.fakes.cloudbuild_api import BUILDS_CREATE, FakeCloudBuild

REGION = "us-central1"


def submit(cloud_build: FakeCloudBuild, job: str, *extra: str) -> Any:
    return run_cli(
        ["training", job, "--config", "legacy.yaml", "--package-path", "trainer", "--staging-bucket", "gs://stage",
         "--target", "vertex", "--region", REGION, "--build-image", "--builder", "cloud-build",
         "--output-image-uri", f"127.0.0.1:{cloud_build.port}/p/mlsubmit/trainer", *extra]
    )  # fmt: skip


def images_of(body: dict[str, Any]) -> set[str]:
    return {pool["containerSpec"]["imageUri"] for pool in body["jobSpec"]["workerPoolSpecs"] if pool}


def test_a_legacy_runtime_runs_in_its_built_image_pinned_by_digest(
    cloud_build: FakeCloudBuild, legacy_project: Path
) -> None:
    first = submit(cloud_build, "j1")
    assert first.exit_code == 0, first.stderr
    (build,) = cloud_build.stored_builds
    digest = build["results"]["images"][0]["digest"]
    (job,) = cloud_build.custom_job_bodies
    assert images_of(job) == {f"127.0.0.1:{cloud_build.port}/p/mlsubmit/trainer@{digest}"}
    assert "pythonPackageSpec" not in json.dumps(job)
    assert "Successfully built" in first.stderr  # the build log was streamed

    # unchanged code: no build, nothing uploaded, the same pinned digest
    uploaded = cloud_build.uploaded_bytes
    again = submit(cloud_build, "j2")
    assert again.exit_code == 0, again.stderr
    assert len(cloud_build.build_bodies) == 1
    assert cloud_build.uploaded_bytes == uploaded
    assert images_of(cloud_build.custom_job_bodies[1]) == images_of(job)
    assert "not rebuilt" in again.stderr

    # one changed byte: exactly one new build, a new image
    (legacy_project / "trainer" / "task.py").write_text("print('training!')\n")
    changed = submit(cloud_build, "j3")
    assert changed.exit_code == 0, changed.stderr
    assert len(cloud_build.build_bodies) == 2
    assert images_of(cloud_build.custom_job_bodies[2]) != images_of(job)


def test_an_unanswered_create_still_builds_once(cloud_build: FakeCloudBuild, legacy_project: Path) -> None:
    cloud_build.inject_drop("POST", BUILDS_CREATE, after=True)
    result = submit(cloud_build, "j1")
    assert result.exit_code == 0, result.stderr
    assert len(cloud_build.stored_builds) == 1 and len(cloud_build.build_bodies) == 1
    assert len(cloud_build.custom_job_bodies) == 1


def test_a_failed_build_exits_1_and_creates_no_job(cloud_build: FakeCloudBuild, legacy_project: Path) -> None:
    cloud_build.script_build_all(
        "FAILURE", log_lines=["Step 3/6 : RUN pip install", "ERROR: No matching distribution"]
    )
    result = submit(cloud_build, "j1")
    assert result.exit_code == 1
    (build,) = cloud_build.stored_builds
    assert build["id"] in result.stderr and "step 0" in result.stderr
    assert "ERROR: No matching distribution" in result.stderr
    assert cloud_build.custom_job_bodies == []


def test_dry_run_shows_the_image_and_uses_no_network(
    legacy_project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CLOUDSDK_CORE_PROJECT", "p")
    result = run_cli(
        ["training", "j1", "--config", "legacy.yaml", "--package-path", "trainer", "--staging-bucket",
         "gs://stage", "--target", "vertex", "--region", REGION, "--build-image", "--dry-run", "--format", "json"]
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    out = json.loads(result.stdout)
    image = out["image"]
    assert image["image"].startswith("us-central1-docker.pkg.dev/p/mlsubmit/trainer:ctx-")
    assert image["contentTag"] == image["image"].rsplit(":", 1)[1]
    assert image["dockerfile"].startswith("# Generated") and "ENTRYPOINT" in image["dockerfile"]
    assert image["cloudBuild"]["build"]["images"] == [image["image"]]
    assert images_of(out["job"]) == {image["image"]}


FRAMEWORK_IMAGE = "gcr.io/cloud-ml-public/training/pytorch-xla.1-11"  # the AI Platform PyTorch sample's


def test_the_image_and_package_pattern_runs_the_package(
    cloud_build: FakeCloudBuild, legacy_project: Path
) -> None:
    args = ["training", "j1", "--package-path", "trainer", "--module-name", "trainer.task", "--staging-bucket",
            "gs://stage", "--target", "vertex", "--region", REGION, "--scale-tier", "custom",
            "--master-machine-type", "n1-standard-8", "--master-image-uri", FRAMEWORK_IMAGE]  # fmt: skip
    refused = run_cli(args)
    assert refused.exit_code == 2
    assert "--build-image" in refused.stderr and FRAMEWORK_IMAGE in refused.stderr
    assert cloud_build.custom_job_bodies == [] and cloud_build.uploads == []

    built = run_cli([*args, "--build-image", "--builder", "cloud-build", "--output-image-uri",
                     f"127.0.0.1:{cloud_build.port}/p/mlsubmit/trainer"])  # fmt: skip
    assert built.exit_code == 0, built.stderr
    (job,) = cloud_build.custom_job_bodies
    (image,) = images_of(job)
    assert "@sha256:" in image
    context = cloud_build.build_bodies[0]["source"]["storageSource"]
    archive = cloud_build.objects[f"gs://{context['bucket']}/{context['object']}"].data
    import gzip
    import io
    import tarfile

    with tarfile.open(fileobj=io.BytesIO(gzip.decompress(bytes(archive)))) as tar:
        dockerfile = tar.extractfile("Dockerfile").read().decode()  # type: ignore[union-attr]
    assert f"FROM {FRAMEWORK_IMAGE}" in dockerfile and "trainer.task" in dockerfile


def test_build_image_for_the_ml_target_says_which_target_builds(legacy_project: Path) -> None:
    result = run_cli(
        ["training", "j1", "--package-path", "trainer", "--module-name", "trainer.task", "--region", REGION,
         "--runtime-version", "2.11", "--staging-bucket", "gs://stage", "--build-image", "--dry-run"]
    )  # fmt: skip
    assert result.exit_code == 2
    assert "--build-image" in result.stderr and "--target vertex" in result.stderr
