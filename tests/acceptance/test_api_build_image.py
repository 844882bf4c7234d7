"""``mlsubmit.api.submit`` with ``build_image`` (docs/containers.md): the image `training --build-image` built is
found again (no second build, nothing uploaded), and the job the API creates runs it pinned by the same digest,
with the body the CLI sent."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mlsubmit import api
from tests.acceptance.test_training_build_image import REGION, submit  # the same command line
from tests.fakes.cloudbuild_api import FakeCloudBuild


def flags(fake: FakeCloudBuild) -> dict[str, Any]:
    """The flags of ``test_training_build_image.submit``, as the API takes them."""
    return {
        "package_path": "trainer",
        "staging_bucket": "gs://stage",
        "target": "vertex",
        "region": REGION,
        "build_image": True,
        "builder": "cloud-build",
        "output_image_uri": f"127.0.0.1:{fake.port}/p/mlsubmit/trainer",
    }


def test_the_api_runs_the_image_the_cli_built(cloud_build: FakeCloudBuild, legacy_project: Path) -> None:
    server = cloud_build  # the fakes and the trainer of tests/acceptance/conftest.py, as the CLI's tests use
    first = submit(server, "j1")
    assert first.exit_code == 0, first.stderr
    uploaded = server.uploaded_bytes
    planned = api.plan("j2", "legacy.yaml", flags(server))
    assert planned.image is not None
    assert planned.image["image"].startswith(
        f"127.0.0.1:{server.port}/p/mlsubmit/trainer:ctx-"
    )  # content tag

    handle = api.submit("j2", "legacy.yaml", flags(server))
    assert len(server.build_bodies) == 1 and server.uploaded_bytes == uploaded  # found, not rebuilt
    cli_body, api_body = server.custom_job_bodies
    same_job = {"displayName": "j1", "labels": cli_body["labels"]}
    assert {**api_body, **same_job} == cli_body
    assert handle.status().job_id == "j2"
