"""The same config and flags run on Vertex AI (CustomJob) and Kubernetes (TFJob).

`mlsubmit export` prints the CustomJob body; VertexJobs creates it on the loopback aiplatform server, which
checks it against the aiplatform.v1 discovery schema. The TFJob of the same config is checked against the
Kubeflow CRD's openAPIV3Schema (where ../shared/specs holds it), Kubernetes naming and a YAML round trip.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import Result

from mlsubmit.services.ml import Caller
from mlsubmit.services.vertex import VertexJobs
from tests.fakes.api_server import VERTEX_CREATE, FakeGoogleApis
from tests.fakes.cli import run_cli
from tests.fakes.clients import production_service
from tests.fakes.jobs import assert_valid_tfjob

CUSTOM_CONFIG = """\
trainingInput:
  scaleTier: CUSTOM
  masterType: n1-standard-8
  masterConfig:
    acceleratorConfig: {type: NVIDIA_TESLA_T4, count: 2}
    diskConfig: {bootDiskType: pd-ssd, bootDiskSizeGb: 200}
  workerType: n1-standard-4
  workerCount: 3
  workerConfig:
    acceleratorConfig: {type: NVIDIA_TESLA_T4, count: 1}
    diskConfig: {bootDiskType: pd-standard, bootDiskSizeGb: 100}
  parameterServerType: n1-highmem-8
  parameterServerCount: 2
  runtimeVersion: "2.11"
  region: us-central1
  scheduling: {maxRunningTime: 7200s}
"""
PACKAGE_FLAGS = [
    "--packages",
    "gs://bkt/pkgs/trainer-0.1.tar.gz",
    "--module-name",
    "trainer.task",
    "--job-dir",
    "gs://bkt/out/run1",
]
USER_ARGS = ["--", "--epochs", "3", "--lr=0.01"]
APP_ARGS = ["--epochs", "3", "--lr=0.01", "--job-dir", "gs://bkt/out/run1"]
GPU_IMAGE = "us-docker.pkg.dev/vertex-ai/training/tf-gpu.2-11.py310:latest"


def export(*args: str, config: Path | None = None) -> Result:
    argv = ["export", *(["--config", str(config)] if config is not None else []), *args]
    return run_cli(argv)


@pytest.fixture
def custom_config(tmp_path: Path) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(CUSTOM_CONFIG, encoding="utf-8")
    return path


def vertex(server: FakeGoogleApis) -> VertexJobs:
    service = production_service("aiplatform", server.url)
    return VertexJobs(service, "myproj", "us-central1", Caller(sleep=lambda _s: None))


def exported_custom_job(config: Path, *extra: str) -> dict[str, Any]:
    result = export(
        "--format",
        "customjob",
        "train_1",
        *PACKAGE_FLAGS,
        "--output",
        "json",
        *extra,
        *USER_ARGS,
        config=config,
    )
    assert result.exit_code == 0, result.output
    body: dict[str, Any] = json.loads(result.stdout)
    return body


def test_custom_job_with_master_workers_and_ps_runs_on_vertex(
    fake_apis: FakeGoogleApis, custom_config: Path
) -> None:
    body = exported_custom_job(custom_config)
    shown = vertex(fake_apis).create(body, "train_1").job
    assert shown["jobId"] == "train_1" and shown["state"] == "QUEUED"
    (job,) = fake_apis.custom_jobs.values()  # stored only after the server's schema check
    assert job["displayName"] == "train_1" and job["labels"] == {"mlsubmit_job_id": "train_1"}
    pools = job["jobSpec"]["workerPoolSpecs"]
    assert [(p["machineSpec"]["machineType"], p["replicaCount"]) for p in pools] == [
        ("n1-standard-8", "1"),
        ("n1-standard-4", "3"),
        ("n1-highmem-8", "2"),
    ]
    assert [
        (p["machineSpec"].get("acceleratorType"), p["machineSpec"].get("acceleratorCount")) for p in pools
    ] == [("NVIDIA_TESLA_T4", 2), ("NVIDIA_TESLA_T4", 1), (None, None)]
    assert [p.get("diskSpec") for p in pools] == [
        {"bootDiskType": "pd-ssd", "bootDiskSizeGb": 200},
        {"bootDiskType": "pd-standard", "bootDiskSizeGb": 100},
        None,
    ]
    for pool in pools:
        spec = pool["pythonPackageSpec"]
        assert spec["packageUris"] == ["gs://bkt/pkgs/trainer-0.1.tar.gz"]
        assert spec["pythonModule"] == "trainer.task"
        assert spec["args"] == APP_ARGS
    assert [p["pythonPackageSpec"]["executorImageUri"] for p in pools] == [
        GPU_IMAGE,
        GPU_IMAGE,
        GPU_IMAGE.replace("tf-gpu", "tf-cpu"),
    ]
    assert job["jobSpec"]["baseOutputDirectory"] == {"outputUriPrefix": "gs://bkt/out/run1"}
    assert job["jobSpec"]["scheduling"] == {"timeout": "7200s"}


def test_container_job_maps_to_container_spec(fake_apis: FakeGoogleApis, tmp_path: Path) -> None:
    result = export(
        "--format",
        "customjob",
        "box_1",
        "--region",
        "us-central1",
        "--scale-tier",
        "custom",
        "--master-machine-type",
        "n1-standard-4",
        "--master-image-uri",
        "gcr.io/p/trainer:7",
        "--worker-machine-type",
        "n1-standard-4",
        "--worker-count",
        "2",
        "--use-chief-in-tf-config",
        "true",
        "--job-dir",
        "gs://bkt/out",
        "--output",
        "json",
        "--",
        "--steps",
        "100",
    )
    assert result.exit_code == 0, result.output
    vertex(fake_apis).create(json.loads(result.stdout), "box_1")
    (job,) = fake_apis.custom_jobs.values()
    pools = job["jobSpec"]["workerPoolSpecs"]
    expected = {"imageUri": "gcr.io/p/trainer:7", "args": ["--steps", "100", "--job-dir", "gs://bkt/out"]}
    assert [p["containerSpec"] for p in pools] == [expected, expected]
    assert all("pythonPackageSpec" not in p for p in pools)
    assert [p["replicaCount"] for p in pools] == ["1", "2"]


def test_a_retried_create_after_a_lost_answer_yields_one_job(
    fake_apis: FakeGoogleApis, custom_config: Path
) -> None:
    fake_apis.inject("POST", VERTEX_CREATE, 503, after=True)  # the job is created, the answer is lost
    shown = vertex(fake_apis).create(exported_custom_job(custom_config), "train_1").job
    assert len(fake_apis.custom_jobs) == 1
    assert shown["name"] == next(iter(fake_apis.custom_jobs.values()))["name"]


def test_tfjob_of_the_same_config_is_a_valid_manifest(custom_config: Path) -> None:
    result = export(
        "--format",
        "tfjob",
        "train_1",
        *PACKAGE_FLAGS,
        "--namespace",
        "team-a",
        *USER_ARGS,
        config=custom_config,
    )
    assert result.exit_code == 0, result.output
    manifest = yaml.safe_load(result.stdout)
    assert_valid_tfjob(manifest)
    assert manifest["metadata"] == {
        "name": "train-1",
        "annotations": {"mlsubmit/job-id": "train_1"},
        "namespace": "team-a",
    }
    specs = manifest["spec"]["tfReplicaSpecs"]
    assert {t: s["replicas"] for t, s in specs.items()} == {"Chief": 1, "Worker": 3, "PS": 2}
    containers = {t: s["template"]["spec"]["containers"] for t, s in specs.items()}
    assert all(
        len(c) == 1 and c[0]["name"] == "tensorflow" and c[0]["args"] == APP_ARGS for c in containers.values()
    )
    assert containers["Chief"][0]["resources"] == {"limits": {"nvidia.com/gpu": 2}}
    assert containers["Worker"][0]["resources"] == {"limits": {"nvidia.com/gpu": 1}}
    assert manifest["spec"]["runPolicy"] == {"activeDeadlineSeconds": 7200}
    assert "WARNING: machine types" in result.stderr  # what Kubernetes cannot say is said on stderr


def test_tfjob_of_a_container_job_is_a_valid_manifest(tmp_path: Path) -> None:
    result = export(
        "--format",
        "tfjob",
        "box_1",
        "--region",
        "us-central1",
        "--scale-tier",
        "custom",
        "--master-machine-type",
        "n1-standard-4",
        "--master-image-uri",
        "gcr.io/p/trainer:7",
        "--parameter-server-machine-type",
        "n1-standard-4",
        "--parameter-server-count",
        "1",
        "--worker-machine-type",
        "n1-standard-4",
        "--worker-count",
        "2",
        "--",
        "--steps",
        "100",
    )
    assert result.exit_code == 0, result.output
    manifest = yaml.safe_load(result.stdout)
    assert_valid_tfjob(manifest)
    assert {t: s["replicas"] for t, s in manifest["spec"]["tfReplicaSpecs"].items()} == {
        "Master": 1,
        "Worker": 2,
        "PS": 1,
    }


def test_export_refuses_what_the_target_cannot_express(custom_config: Path, tmp_path: Path) -> None:
    config = tmp_path / "tpu.yaml"
    config.write_text(
        textwrap.dedent("""\
        trainingInput:
          scaleTier: BASIC_TPU
          runtimeVersion: "2.11"
          region: us-central1
          scheduling: {priority: 10}
        """),
        encoding="utf-8",
    )
    for kind in ("customjob", "tfjob"):
        result = export("--format", kind, "tpu_job", *PACKAGE_FLAGS, config=config)
        assert result.exit_code == 2
        assert "$.trainingInput.scaleTier" in result.stderr
        assert "$.trainingInput.scheduling.priority" in result.stderr
        assert result.stdout == ""


def test_export_of_a_local_package_needs_a_staging_location(tmp_path: Path) -> None:
    pkg = tmp_path / "trainer"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("", encoding="utf-8")
    result = export(
        "--format",
        "customjob",
        "j1",
        "--region",
        "us-central1",
        "--runtime-version",
        "2.11",
        "--package-path",
        str(pkg),
        "--module-name",
        "trainer.task",
    )
    assert result.exit_code == 2
    assert "--staging-bucket" in result.stderr and result.stdout == ""


def test_export_help_names_every_format() -> None:
    result = export("--help")
    assert result.exit_code == 0, result.output
    usage = " ".join(result.stdout.split())  # click wraps the help text
    assert "customjob|hptuningjob|tfjob" in usage and "HyperparameterTuningJob" in usage
