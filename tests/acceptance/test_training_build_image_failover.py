"""`training --target vertex --build-image --package-path … --fallback-regions r2` (docs/containers.md,
docs/getting-jobs-to-start.md): one image per region's registry, built once each; no package staged that no body names; every
candidate's body in the dry run, equal to what the loopback Vertex AI receives, candidate by candidate."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import yaml

from tests.acceptance.test_training_build_image import images_of
from tests.fakes.api_server import VERTEX_CREATE
from tests.fakes.cli import run_cli
from tests.fakes.cloudbuild_api import FakeCloudBuild
from tests.fakes.trainers import LEGACY_CUSTOM

A, B = "us-central1", "us-east4"
QUOTA = (
    "The following quota metrics exceed quota limits: aiplatform.googleapis.com/custom_model_training_cpus"
)


def training(cloud_build: FakeCloudBuild, job: str = "j1") -> list[str]:
    """One image repository per region on the fake registry (``{region}`` in --output-image-uri)."""
    return ["training", job, "--config", "legacy.yaml", "--package-path", "trainer", "--staging-bucket",
            "gs://stage", "--target", "vertex", "--region", A, "--build-image", "--builder", "cloud-build",
            "--output-image-uri", f"127.0.0.1:{cloud_build.port}/p/{{region}}/trainer", "--fallback-regions", B]  # fmt: skip


def dry_run(args: list[str]) -> dict[str, Any]:
    result = run_cli([*args, "--dry-run", "--format", "json"])
    assert result.exit_code == 0, result.stderr
    plan: dict[str, Any] = json.loads(result.stdout)
    return plan


def pinned(body: dict[str, Any], builds: list[dict[str, Any]]) -> dict[str, Any]:
    """``body`` with each built image's content tag replaced by the digest its build pushed."""
    text = json.dumps(body)
    for build in builds:
        for image in build["results"]["images"]:
            repository = image["name"].rsplit(":", 1)[0]
            text = text.replace(json.dumps(image["name"]), json.dumps(f"{repository}@{image['digest']}"))
    return dict(json.loads(text))


def test_each_region_runs_its_own_registrys_image_built_once_and_the_dry_run_shows_every_body(
    cloud_build: FakeCloudBuild, legacy_project: Path
) -> None:
    plan = dry_run(training(cloud_build))
    assert [c["region"] for c in plan["candidates"]] == [A, B]
    assert plan["candidates"][0]["body"] == plan["job"]
    tags = {
        region: f"127.0.0.1:{cloud_build.port}/p/{region}/trainer:{plan['image']['contentTag']}"
        for region in (A, B)
    }
    assert [images_of(c["body"]) for c in plan["candidates"]] == [{tags[A]}, {tags[B]}]
    assert plan["image"]["images"] == [tags[A], tags[B]]
    assert plan["uploads"] == {}  # the package goes into the image: nothing is staged

    cloud_build.script_region(A, create_error=(429, QUOTA))
    cloud_build.script_region(B, ["JOB_STATE_QUEUED", "JOB_STATE_RUNNING"])
    result = run_cli([*training(cloud_build), "--format", "json"])
    assert result.exit_code == 0, result.stderr
    job = json.loads(result.stdout)
    assert [a["outcome"] for a in job["attempts"]] == ["quota", "running"]

    # one build per registry, each pushing its own region's name
    builds = cloud_build.stored_builds
    assert sorted(b["images"][0] for b in cloud_build.build_bodies) == sorted(tags.values())
    # nothing but the build contexts went to Cloud Storage: no sdist that no body names
    contexts = {b["source"]["storageSource"]["object"] for b in cloud_build.build_bodies}
    assert {u.name for u in cloud_build.uploads} == contexts
    # what each candidate was sent is what the dry run printed, the image pinned by digest
    sent = {r.path.split("/")[5]: r.json for r in cloud_build.requests_matching("POST", VERTEX_CREATE)}
    assert list(sent) == [A, B]
    for candidate in plan["candidates"]:
        assert sent[candidate["region"]] == pinned(candidate["body"], builds)
    assert all(re.search(r"@sha256:[0-9a-f]{64}$", image) for image in images_of(sent[B]))

    # unchanged code: both registries answer the content tag, nothing is built again
    again = run_cli(training(cloud_build, "j2"))
    assert again.exit_code == 0, again.stderr
    assert len(cloud_build.build_bodies) == 2


def test_one_output_image_uri_is_one_image_for_every_candidate(
    cloud_build: FakeCloudBuild, legacy_project: Path
) -> None:
    args = [a.replace("/{region}/", "/shared/") for a in training(cloud_build)]
    plan = dry_run(args)
    (image,) = {next(iter(images_of(c["body"]))) for c in plan["candidates"]}
    assert image == plan["image"]["image"] and "images" not in plan["image"]
    cloud_build.script_region(A, create_error=(429, QUOTA))
    cloud_build.script_region(B, ["JOB_STATE_RUNNING"])
    result = run_cli(args)
    assert result.exit_code == 0, result.stderr
    assert len(cloud_build.build_bodies) == 1


def test_a_build_image_failover_needs_no_staging_bucket_with_a_local_engine(legacy_project: Path) -> None:
    """The job's bucket binds no candidate when nothing is staged; Cloud Build alone needs one for its context."""
    args = ["training", "j1", "--config", "legacy.yaml", "--package-path", "trainer", "--target", "vertex",
            "--region", A, "--build-image", "--fallback-regions", B, "--project", "p"]  # fmt: skip
    plan = dry_run([*args, "--builder", "docker"])
    assert [c["region"] for c in plan["candidates"]] == [A, B]
    assert plan["image"]["images"] == [
        f"{region}-docker.pkg.dev/p/mlsubmit/trainer:{plan['image']['contentTag']}" for region in (A, B)
    ]
    refused = run_cli([*args, "--builder", "cloud-build", "--dry-run"])
    assert refused.exit_code == 2
    assert "--staging-bucket" in refused.stderr and "Traceback" not in refused.output


def test_the_text_dry_run_shows_the_same_plan_readably(
    cloud_build: FakeCloudBuild, legacy_project: Path
) -> None:
    result = run_cli([*training(cloud_build), "--dry-run"])
    assert result.exit_code == 0, result.stderr
    plan = yaml.safe_load(result.stdout)
    assert plan == dry_run(training(cloud_build))
    assert "*id0" not in result.stdout  # every body written out, no YAML alias to chase


def test_a_candidate_with_gpus_gets_the_gpu_base_every_candidate_runs(legacy_project: Path) -> None:
    """The candidates run one image: a GPU pool in any of them chooses the GPU base (it runs on CPUs too)."""
    (legacy_project / "gpu.yaml").write_text(
        LEGACY_CUSTOM + "vertex:\n  failover:\n    candidates:\n      - region: us-east4\n"
        "        masterType: n1-standard-8\n"
        "        masterConfig: {acceleratorConfig: {type: NVIDIA_TESLA_T4, count: 1}}\n"
    )
    args = ["training", "j1", "--config", "gpu.yaml", "--package-path", "trainer", "--target", "vertex",
            "--build-image", "--builder", "docker", "--project", "p"]  # fmt: skip
    plan = dry_run(args)
    assert plan["image"]["base"] == "tensorflow/tensorflow:2.11.0-gpu"
    assert len({c["body"]["jobSpec"]["workerPoolSpecs"][0]["containerSpec"]["imageUri"].rsplit(":")[-1]
                for c in plan["candidates"]}) == 1  # fmt: skip
