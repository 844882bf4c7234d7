"""Parity with `gcloud ai custom-jobs create` where it can express the same job: the CustomJob body gcloud 528
sends (CLOUDSDK_API_ENDPOINT_OVERRIDES_AIPLATFORM pointed at the loopback server) equals mlsubmit's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.fakes.api_server import FakeGoogleApis
from tests.fakes.gcloud_oracle import requires_gcloud, run_gcloud
from tests.fakes.lifecycle_support import point_cli_at, run_cli

pytestmark = [requires_gcloud, pytest.mark.gcloud]

REGION = "us-central1"
EXEC = "us-docker.pkg.dev/vertex-ai/training/tf-gpu.2-17.py310:latest"  # Vertex takes only prebuilt ones
PACKAGE = "gs://bkt/pkgs/trainer-0.1.tar.gz"


def mlsubmit_body(monkeypatch: pytest.MonkeyPatch, server: FakeGoogleApis, *args: str) -> dict[str, Any]:
    point_cli_at(monkeypatch, server)
    # --no-preflight: the bodies are compared here; the image names real registries (the preflight's own tests
    # use a registry on loopback)
    result = run_cli(
        ["training", "my_job", "--target", "vertex", "--region", REGION, "--no-preflight", *args]
    )
    assert result.exit_code == 0, result.stderr
    (body,) = server.custom_job_bodies
    return body


def gcloud_body(server: FakeGoogleApis, tmp_path: Path, *args: str) -> dict[str, Any]:
    run = run_gcloud(
        ["ai", "custom-jobs", "create", f"--region={REGION}", "--display-name=my_job",
         "--labels=mlsubmit_job_id=my_job", *args],
        server,
        cwd=tmp_path,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    (body,) = run.custom_job_bodies
    return body


def test_package_job_with_gpu_primary_and_workers(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    with FakeGoogleApis() as server:
        theirs = gcloud_body(
            server,
            tmp_path,
            "--worker-pool-spec=machine-type=n1-standard-8,replica-count=1,accelerator-type=NVIDIA_TESLA_T4,"
            f"accelerator-count=1,executor-image-uri={EXEC},python-module=trainer.task",
            f"--worker-pool-spec=machine-type=n1-standard-4,replica-count=2,executor-image-uri={EXEC},"
            "python-module=trainer.task",
            f"--python-package-uris={PACKAGE}",
            "--args=--epochs=3",
        )
    with FakeGoogleApis() as server:
        ours = mlsubmit_body(
            monkeypatch, server,
            "--scale-tier", "custom", "--master-machine-type", "n1-standard-8",
            "--master-accelerator", "type=nvidia-tesla-t4,count=1",
            "--worker-count", "2", "--worker-machine-type", "n1-standard-4",
            "--executor-image-uri", EXEC, "--packages", PACKAGE, "--module-name", "trainer.task",
            "--", "--epochs=3",
        )  # fmt: skip
    assert ours == theirs


def test_container_job_with_spot_env_timeout_and_output_dir(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    container = {
        "imageUri": "gcr.io/p/img:1",
        "args": ["--lr", "0.1", "--job-dir", "gs://bkt/out"],
        "env": [{"name": "WANDB_MODE", "value": "offline"}],
    }
    spec = {
        "workerPoolSpecs": [
            {"machineSpec": {"machineType": "n1-standard-4"}, "replicaCount": 1, "containerSpec": container}
        ],
        "scheduling": {"timeout": "3600s", "strategy": "SPOT"},
        "baseOutputDirectory": {"outputUriPrefix": "gs://bkt/out"},
        "serviceAccount": "sa@p.iam.gserviceaccount.com",
    }
    config = tmp_path / "spec.yaml"
    config.write_text(yaml.safe_dump(spec), encoding="utf-8")
    with FakeGoogleApis() as server:
        theirs = gcloud_body(server, tmp_path, f"--config={config}")
    job = tmp_path / "job.yaml"
    job.write_text("trainingInput: {scheduling: {maxRunningTime: 3600s}}\n", encoding="utf-8")
    with FakeGoogleApis() as server:
        ours = mlsubmit_body(
            monkeypatch, server,
            "--config", str(job), "--master-image-uri", "gcr.io/p/img:1", "--scheduling-strategy", "spot",
            "--env", "WANDB_MODE=offline", "--job-dir", "gs://bkt/out",
            "--service-account", "sa@p.iam.gserviceaccount.com", "--", "--lr", "0.1",
        )  # fmt: skip
    assert ours == theirs
