"""`mlsubmit training --target vertex` against the loopback aiplatform API (bodies checked against the aiplatform
v1 schema by the fake): Vertex's scheduling, reservations, env, persistent resource, TensorBoard, experiments;
each refusal exits 2 with its message and creates nothing; the executor image date check on a fixed day."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path
from typing import Any

import pytest

from mlsubmit.targets import vertex_images
from tests.fakes.api_server import FakeGoogleApis
from tests.fakes.lifecycle_support import point_cli_at, run_cli

REGION = "us-central1"
PACKAGE = ["--packages", "gs://bkt/pkgs/trainer-0.1.tar.gz", "--module-name", "trainer.task"]
L4_CONFIG = """\
trainingInput:
  scaleTier: CUSTOM
  masterType: g2-standard-8
  masterConfig: {acceleratorConfig: {type: NVIDIA_L4, count: 1}}
  workerType: g2-standard-8
  workerCount: 2
  workerConfig: {acceleratorConfig: {type: NVIDIA_L4, count: 1}}
  scheduling: {maxWaitTime: 7200s, maxRunningTime: 86400s}
"""
TENSORBOARD = f"projects/p/locations/{REGION}/tensorboards/42"
EXPERIMENT = f"projects/p/locations/{REGION}/metadataStores/default/contexts/exp"


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch, fake_apis: FakeGoogleApis) -> None:
    point_cli_at(monkeypatch, fake_apis)


def train(*args: str, config: str | None = None, tmp: Path | None = None) -> Any:
    argv = ["training", "my_job", "--target", "vertex", "--region", REGION, *PACKAGE]
    if config is not None:
        assert tmp is not None
        path = tmp / "config.yaml"
        path.write_text(config, encoding="utf-8")
        argv += ["--config", str(path)]
    return run_cli([*argv, *args])


def created(server: FakeGoogleApis) -> dict[str, Any]:
    (body,) = server.custom_job_bodies
    (stored,) = server.custom_jobs.values()  # stored only after the fake's aiplatform v1 schema check
    assert stored["displayName"] == body["displayName"] == "my_job"
    return body


def test_flex_start_job_keeps_max_wait_time_as_max_wait_duration(
    fake_apis: FakeGoogleApis, tmp_path: Path
) -> None:
    result = train(
        "--runtime-version", "2.15", "--scheduling-strategy", "flex-start", config=L4_CONFIG, tmp=tmp_path
    )
    assert result.exit_code == 0, result.stderr
    body = created(fake_apis)
    assert body["jobSpec"]["scheduling"] == {
        "timeout": "86400s",
        "strategy": "FLEX_START",
        "maxWaitDuration": "7200s",
    }
    pools = body["jobSpec"]["workerPoolSpecs"]
    assert [p["machineSpec"]["acceleratorType"] for p in pools] == ["NVIDIA_L4", "NVIDIA_L4"]


def test_max_wait_time_without_flex_start_is_refused_with_the_way_to_keep_it(
    fake_apis: FakeGoogleApis, tmp_path: Path
) -> None:
    result = train("--runtime-version", "2.15", config=L4_CONFIG, tmp=tmp_path)
    assert result.exit_code == 2
    assert "config.yaml:8: $.trainingInput.scheduling.maxWaitTime" in result.stderr
    assert "--scheduling-strategy flex-start" in result.stderr
    assert fake_apis.custom_job_bodies == []


def test_spot_job_with_restart_disable_retries_warning(fake_apis: FakeGoogleApis) -> None:
    result = train(
        "--runtime-version", "2.15", "--scheduling-strategy", "spot",
        "--restart-job-on-worker-restart", "--disable-retries",
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert created(fake_apis)["jobSpec"]["scheduling"] == {
        "strategy": "SPOT",
        "restartJobOnWorkerRestart": True,
        "disableRetries": True,
    }
    assert "WARNING: disableRetries turns restartJobOnWorkerRestart off" in result.stderr


def test_reservations_env_persistent_resource_tensorboard_and_experiment(fake_apis: FakeGoogleApis) -> None:
    result = train(
        "--runtime-version", "2.15", "--job-dir", "gs://bkt/out", "--service-account", "sa@p.iam.gserviceaccount.com",
        "--reservation", "projects/p/zones/us-central1-a/reservations/r1",
        "--env", "WANDB_MODE=offline", "--env", "OPTS=a=1,b=2",
        "--persistent-resource-id", "shared-pool", "--tensorboard", TENSORBOARD,
        "--experiment", EXPERIMENT, "--experiment-run", EXPERIMENT + "-run1", "--enable-dashboard-access",
        "--network", "projects/123/global/networks/vpc",
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    spec = created(fake_apis)["jobSpec"]
    (pool,) = spec["workerPoolSpecs"]
    assert pool["machineSpec"]["reservationAffinity"] == {
        "reservationAffinityType": "SPECIFIC_RESERVATION",
        "key": "compute.googleapis.com/reservation-name",
        "values": ["projects/p/zones/us-central1-a/reservations/r1"],
    }
    assert pool["pythonPackageSpec"]["env"] == [
        {"name": "WANDB_MODE", "value": "offline"},
        {"name": "OPTS", "value": "a=1,b=2"},
    ]
    assert spec["persistentResourceId"] == "shared-pool"
    assert spec["tensorboard"] == TENSORBOARD
    assert (spec["experiment"], spec["experimentRun"]) == (EXPERIMENT, EXPERIMENT + "-run1")
    assert spec["enableDashboardAccess"] is True and spec["network"] == "projects/123/global/networks/vpc"


def test_vertex_block_in_the_config(fake_apis: FakeGoogleApis, tmp_path: Path) -> None:
    config = (
        "trainingInput: {scaleTier: CUSTOM, masterType: n1-standard-8, workerType: n1-standard-8, workerCount: 1}\n"
        "vertex:\n  framework: pytorch\n  frameworkVersion: '2.4'\n  env: {A: '1'}\n"
        "  reservationAffinity: {reservationAffinityType: ANY_RESERVATION}\n"
        "  poolReservationAffinity: {worker: {reservationAffinityType: NO_RESERVATION}}\n"
    )
    result = train(config=config, tmp=tmp_path)
    assert result.exit_code == 0, result.stderr
    pools = created(fake_apis)["jobSpec"]["workerPoolSpecs"]
    assert [p["machineSpec"]["reservationAffinity"]["reservationAffinityType"] for p in pools] == [
        "ANY_RESERVATION",
        "NO_RESERVATION",
    ]
    assert pools[0]["pythonPackageSpec"]["executorImageUri"].endswith("/pytorch-cpu.2-4.py310:latest")


@pytest.mark.parametrize(
    ("args", "where", "words"),
    [
        (
            ["--kms-key", "projects/p/locations/europe-west4/keyRings/r/cryptoKeys/k"],
            "--kms-key",
            "Vertex AI needs a key in the job's region",
        ),
        (
            ["--scale-tier", "custom", "--master-machine-type", "n1-standard-8", "--master-accelerator",
             "type=nvidia-tesla-a100,count=1"],
            "--master-accelerator",
            "NVIDIA_TESLA_A100 runs on a2-highgpu-* or a2-megagpu-* machines",
        ),
        (["--scale-tier", "custom", "--master-machine-type", "n1-highcpu-8"], "--master-machine-type", "n1-highcpu"),
        (["--scheduling-strategy", "flex-start"], "--scheduling-strategy", "FLEX_START"),
        (["--tensorboard", TENSORBOARD], "$.vertex.tensorboard", "service account"),
    ],
)  # fmt: skip
def test_refusals_exit_2_name_the_flag_and_create_nothing(
    fake_apis: FakeGoogleApis, args: list[str], where: str, words: str
) -> None:
    result = train("--runtime-version", "2.15", *args)
    assert result.exit_code == 2, result.stderr
    assert where in result.stderr and words in result.stderr, result.stderr
    assert result.stderr.startswith("ERROR: ")
    assert fake_apis.custom_job_bodies == []


def test_k80_runs_as_t4_with_a_warning(fake_apis: FakeGoogleApis) -> None:
    result = train(
        "--runtime-version", "2.15", "--scale-tier", "custom", "--master-machine-type", "n1-standard-8",
        "--master-accelerator", "type=nvidia-tesla-k80,count=1",
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    machine = created(fake_apis)["jobSpec"]["workerPoolSpecs"][0]["machineSpec"]
    assert machine["acceleratorType"] == "NVIDIA_TESLA_T4"
    assert "WARNING: masterConfig: NVIDIA_TESLA_K80 has reached end of support" in result.stderr


def test_h100_on_a3_is_accepted_for_vertex_and_refused_for_ml(fake_apis: FakeGoogleApis) -> None:
    gpu = ["--scale-tier", "custom", "--master-machine-type", "a3-highgpu-8g", "--master-accelerator",
           "type=nvidia-h100-80gb,count=8", "--runtime-version", "2.15"]  # fmt: skip
    assert train(*gpu).exit_code == 0
    ml = run_cli(["training", "ml_job", "--region", REGION, *PACKAGE, *gpu, "--dry-run"])
    assert ml.exit_code == 2 and "use --target vertex" in ml.stderr


class TestOnTheDayOfWriting:
    """The image table checked on 2026-11-24: every TensorFlow training image has reached its end."""

    @pytest.fixture(autouse=True)
    def _today(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setattr(vertex_images, "CLOCK", lambda: date(2026, 11, 24))

    def test_a_runtime_past_its_end_of_availability_is_refused_with_the_choices(
        self, fake_apis: FakeGoogleApis
    ) -> None:
        result = train("--runtime-version", "2.11")
        assert result.exit_code == 2
        assert "--runtime-version: $.trainingInput.runtimeVersion" in result.stderr
        assert "end of availability on 2024-11-30" in result.stderr
        assert "--framework/--framework-version" in result.stderr and "--executor-image-uri" in result.stderr
        assert fake_apis.custom_job_bodies == []

    def test_a_framework_still_served_is_accepted(self, fake_apis: FakeGoogleApis) -> None:
        result = train("--framework", "pytorch", "--framework-version", "2.4")
        assert result.exit_code == 0, result.stderr
        spec = created(fake_apis)["jobSpec"]["workerPoolSpecs"][0]["pythonPackageSpec"]
        assert spec["executorImageUri"] == "us-docker.pkg.dev/vertex-ai/training/pytorch-cpu.2-4.py310:latest"

    def test_an_explicit_executor_image_needs_no_runtime(self, fake_apis: FakeGoogleApis) -> None:
        image = "us-docker.pkg.dev/vertex-ai/training/pytorch-cpu.2-4.py310:latest"
        result = train("--executor-image-uri", image)
        assert result.exit_code == 0, result.stderr
        spec = created(fake_apis)["jobSpec"]["workerPoolSpecs"][0]["pythonPackageSpec"]
        assert spec["executorImageUri"] == image

    def test_an_executor_image_of_ones_own_is_refused_with_the_way_out(
        self, fake_apis: FakeGoogleApis
    ) -> None:
        result = train("--executor-image-uri", "us-docker.pkg.dev/p/r/trainer:1")
        assert result.exit_code == 2
        assert "--build-image" in result.stderr and "prebuilt" in result.stderr
        assert fake_apis.custom_job_bodies == [] and fake_apis.uploads == []


def test_export_tfjob_keeps_max_wait_time_and_env(tmp_path: Path) -> None:
    config = tmp_path / "c.yaml"
    config.write_text("trainingInput: {scheduling: {maxWaitTime: 3600s}}\n", encoding="utf-8")
    result = run_cli(
        ["export", "--format", "tfjob", "my_job", "--config", str(config), "--region", REGION, *PACKAGE,
         "--runtime-version", "2.15", "--env", "A=1", "--output", "json"]
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    manifest = json.loads(result.stdout)
    assert manifest["spec"]["runPolicy"]["schedulingPolicy"] == {"scheduleTimeoutSeconds": 3600}
    (replica,) = manifest["spec"]["tfReplicaSpecs"].values()
    assert replica["template"]["spec"]["containers"][0]["env"] == [{"name": "A", "value": "1"}]
    assert "gang scheduler" in result.stderr


def test_validate_uses_vertexs_rules_for_a_vertex_block(tmp_path: Path) -> None:
    config = tmp_path / "c.yaml"
    config.write_text(
        "trainingInput:\n  scaleTier: CUSTOM\n  masterType: n1-standard-8\n"
        "  masterConfig: {acceleratorConfig: {type: NVIDIA_L4, count: 1}}\nvertex: {env: {A: '1'}}\n",
        encoding="utf-8",
    )
    result = run_cli(["validate", str(config)])
    assert result.exit_code == 2
    assert (
        "c.yaml:4: $.trainingInput.masterConfig.acceleratorConfig.type: NVIDIA_L4 runs on g2-standard-*"
        in (result.stderr)
    )
    ml = run_cli(["validate", "--target", "ml", str(config)])
    assert ml.exit_code == 2 and "use --target vertex" in ml.stderr
