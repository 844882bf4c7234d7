"""`mlsubmit export` with local code: packages staged as `training` stages them, or built into the image the
output runs (`--build-image`); the same image for a Vertex AI CustomJob and a TFJob (docs/containers.md).
Offline (issue 27 item 9): ``--dry-run`` prints the plan `training --dry-run` prints, nothing uploaded or built and
no credentials; packages built into an image ask for no staging bucket."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.cli import run_cli
from tests.fakes.cloudbuild_api import FakeCloudBuild, build_env

LEGACY = """\
trainingInput:
  region: us-central1
  scaleTier: CUSTOM
  runtimeVersion: "2.11"
  pythonModule: trainer.task
  masterType: n1-standard-8
  workerType: n1-standard-8
  workerCount: 1
"""


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[FakeCloudBuild]:
    (tmp_path / "trainer").mkdir()
    (tmp_path / "trainer" / "__init__.py").write_text("")
    (tmp_path / "trainer" / "task.py").write_text("print('training')\n")
    (tmp_path / "legacy.yaml").write_text(LEGACY)
    monkeypatch.chdir(tmp_path)
    with FakeCloudBuild(project="p") as fake:
        for name, value in build_env(fake).items():
            monkeypatch.setenv(name, value)
        yield fake


def export(kind: str, *extra: str, bucket: bool = True, env: dict[str, str | None] | None = None) -> Any:
    staging = ["--staging-bucket", "gs://stage"] if bucket else []
    result = run_cli(
        ["export", "--format", kind, "j1", "--config", "legacy.yaml", "--package-path", "trainer", *staging,
         "--output", "json", *extra],
        env=env,
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def test_a_legacy_runtime_exports_its_built_image_to_vertex_and_kubernetes(server: FakeCloudBuild) -> None:
    image = [
        "--build-image",
        "--builder",
        "cloud-build",
        "--output-image-uri",
        f"127.0.0.1:{server.port}/p/t/trainer",
    ]
    custom = export("customjob", *image)
    tfjob = export("tfjob", *image)
    assert len(server.build_bodies) == 1  # the second export found the image in the registry
    digest = server.stored_builds[0]["results"]["images"][0]["digest"]
    pinned = f"127.0.0.1:{server.port}/p/t/trainer@{digest}"
    assert {p["containerSpec"]["imageUri"] for p in custom["jobSpec"]["workerPoolSpecs"]} == {pinned}
    containers = [r["template"]["spec"]["containers"][0] for r in tfjob["spec"]["tfReplicaSpecs"].values()]
    assert {c["image"] for c in containers} == {pinned}
    assert all("command" not in c for c in containers)  # the image's entrypoint runs the module
    assert server.custom_job_bodies == []  # an export creates nothing


def test_a_local_package_is_staged_and_the_output_names_it(server: FakeCloudBuild) -> None:
    body = export("tfjob")
    (upload,) = server.uploads
    script = body["spec"]["tfReplicaSpecs"]["Chief"]["template"]["spec"]["containers"][0]["command"][2]
    assert upload.uri in script
    assert server.build_bodies == []
    again = export("tfjob")
    assert len(server.uploads) == 1 and again == body  # unchanged: nothing sent again


def test_a_tfjob_is_not_refused_over_vertex_image_dates(
    server: FakeCloudBuild, monkeypatch: pytest.MonkeyPatch
) -> None:
    from datetime import date

    from mlsubmit.targets import vertex_images

    monkeypatch.setattr(vertex_images, "CLOCK", lambda: date(2026, 11, 25))
    result = run_cli(
        ["export", "--format", "tfjob", "j1", "--config", "legacy.yaml", "--packages", "gs://bkt/trainer-0.1.tar.gz",
         "--output", "json"]
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert "end of availability" in result.stderr and "--build-image" in result.stderr
    refused = run_cli(
        ["export", "--format", "customjob", "j1", "--config", "legacy.yaml", "--packages", "gs://bkt/trainer-0.1.tar.gz"]
    )  # fmt: skip
    assert refused.exit_code == 2


FRAMEWORK_IMAGE = "gcr.io/cloud-ml-public/training/pytorch-xla.1-11"  # the AI Platform PyTorch sample's


@pytest.mark.parametrize("kind", ["customjob", "tfjob"])
def test_the_image_and_package_pattern_never_drops_the_trainer(server: FakeCloudBuild, kind: str) -> None:
    args = ["export", "--format", kind, "j1", "--package-path", "trainer", "--module-name", "trainer.task",
            "--region", "us-central1", "--staging-bucket", "gs://stage", "--scale-tier", "custom",
            "--master-machine-type", "n1-standard-8", "--master-image-uri", FRAMEWORK_IMAGE, "--output", "json"]  # fmt: skip
    refused = run_cli(args)
    assert refused.exit_code == 2 and "--build-image" in refused.stderr and refused.stdout == ""
    assert server.uploads == []
    built = run_cli([*args, "--build-image", "--builder", "cloud-build", "--output-image-uri",
                     f"127.0.0.1:{server.port}/p/t/trainer"])  # fmt: skip
    assert built.exit_code == 0, built.stderr
    text = built.stdout
    assert f"127.0.0.1:{server.port}/p/t/trainer@sha256:" in text and FRAMEWORK_IMAGE not in text


# no credentials of any kind: a dry run must not need them
NO_CREDENTIALS: dict[str, str | None] = {
    "CLOUDSDK_AUTH_ACCESS_TOKEN": None,
    "GOOGLE_APPLICATION_CREDENTIALS": None,
    "CLOUDSDK_CORE_PROJECT": None,
}


def test_a_tfjob_dry_run_of_local_packages_needs_no_credentials_and_uploads_nothing(
    server: FakeCloudBuild,
) -> None:
    body = export("tfjob", "--dry-run", env=NO_CREDENTIALS)
    script = body["spec"]["tfReplicaSpecs"]["Chief"]["template"]["spec"]["containers"][0]["command"][2]
    assert "gs://stage/" in script and "trainer-0.0.0.tar.gz" in script
    assert server.requests == []  # nothing asked of any service: no upload, no credentials
    real = export("tfjob")  # the export itself stages, then prints the same
    assert len(server.uploads) == 1 and server.uploads[0].uri in script and real == body
    asked = len(server.requests)
    remote = run_cli(
        ["export", "--format", "tfjob", "j1", "--config", "legacy.yaml", "--packages", "gs://bkt/trainer-0.1.tar.gz"],
        env=NO_CREDENTIALS,
    )  # fmt: skip
    assert remote.exit_code == 0, remote.stderr  # nothing local: offline without --dry-run too
    assert "gs://bkt/trainer-0.1.tar.gz" in remote.stdout and len(server.requests) == asked


def test_a_dry_run_prints_what_training_dry_run_prints(server: FakeCloudBuild) -> None:
    exported = export("customjob", "--build-image", "--builder", "cloud-build", "--dry-run")
    training = run_cli(
        ["training", "j1", "--config", "legacy.yaml", "--package-path", "trainer", "--target", "vertex",
         "--build-image", "--builder", "cloud-build", "--format", "json", "--staging-bucket", "gs://stage",
         "--dry-run"]
    )  # fmt: skip
    assert training.exit_code == 0, training.stderr
    assert exported == json.loads(training.stdout)
    assert set(exported) == {"job", "image", "candidates", "uploads"}  # the whole plan, as training prints it
    assert server.requests == [] and server.build_bodies == []


@pytest.mark.parametrize("kind", ["customjob", "tfjob"])
def test_a_local_builder_asks_for_no_staging_bucket_and_a_dry_run_builds_nothing(
    server: FakeCloudBuild, kind: str
) -> None:
    registry = f"127.0.0.1:{server.port}/p/t/trainer"
    plan = export(kind, "--build-image", "--builder", "buildah", "--output-image-uri", registry, "--dry-run",
                  bucket=False, env=NO_CREDENTIALS)  # fmt: skip
    assert plan["image"]["builder"] == "buildah" and plan["image"]["image"].startswith(registry + ":ctx-")
    assert plan["uploads"] == {}  # the package goes into the image: nothing staged, no bucket asked for
    assert "gs://" not in json.dumps(plan["job"])
    assert server.requests == []  # the registry is not even asked whether the image exists
