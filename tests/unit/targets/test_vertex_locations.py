"""What a Vertex AI job takes from quota and whether its region offers it (docs/getting-jobs-to-start.md)."""

from __future__ import annotations

from typing import Any

import pytest

from mlsubmit.preflight import needs_of
from mlsubmit.targets.vertex_locations import (
    ACCELERATORS,
    REGIONS,
    cpu_metric,
    demand,
    images,
    offered,
    vcpus,
)

P = "aiplatform.googleapis.com/custom_model_training_"


def pool(
    machine: str, gpu: str | None = None, count: int = 1, replicas: str = "1", **more: Any
) -> dict[str, Any]:
    spec: dict[str, Any] = {"machineType": machine}
    if gpu:
        spec.update(acceleratorType=gpu, acceleratorCount=count)
    return {"machineSpec": spec, "replicaCount": replicas, **more}


@pytest.mark.parametrize(
    ("machine", "cpus"),
    [
        ("n1-standard-8", 8),
        ("a2-highgpu-2g", 24),
        ("a3-highgpu-8g", 208),
        ("a3-megagpu-8g", 208),
        ("g2-standard-12", 12),
        ("odd", None),
    ],
)
def test_vcpus(machine: str, cpus: int | None) -> None:
    assert vcpus(machine) == cpus


def test_cpu_metric_by_family() -> None:
    assert cpu_metric("n1-standard-4") == cpu_metric("e2-standard-4") == f"{P}cpus"
    assert cpu_metric("c2-standard-8") == f"{P}c2_cpus"


def test_demand_sums_pools_and_replicas() -> None:
    body = {
        "jobSpec": {
            "workerPoolSpecs": [
                pool("n1-standard-8", "NVIDIA_TESLA_T4", 2),
                {},
                pool("n1-standard-4", "NVIDIA_TESLA_T4", 1, "3"),
            ]
        }
    }
    assert demand(body) == {f"{P}cpus": 8 + 12, f"{P}nvidia_t4_gpus": 2 + 3}


def test_demand_of_a_tuning_job_counts_its_parallel_trials() -> None:
    body = {
        "parallelTrialCount": 3,
        "trialJobSpec": {"workerPoolSpecs": [pool("g2-standard-8", "NVIDIA_L4", 1)]},
    }
    assert demand(body) == {f"{P}g2_cpus": 24, f"{P}nvidia_l4_gpus": 3}


def test_offered_region_and_accelerators() -> None:
    body = {
        "jobSpec": {
            "workerPoolSpecs": [
                pool("n1-standard-8", "NVIDIA_TESLA_T4"),
                pool("a2-highgpu-1g", "NVIDIA_TESLA_A100"),
            ]
        }
    }
    assert [s for s, _, _ in offered("us-central1", body)] == ["ok", "ok", "ok"]
    assert [s for s, _, _ in offered("europe-west1", body)] == ["ok", "warning", "ok"]
    assert [s for s, _, _ in offered("australia-southeast1", body)] == ["ok", "unchecked", "unchecked"]
    assert offered("mars-north1", body)[0][0] == "warning"
    assert all(region in REGIONS for region in ACCELERATORS)


def test_needs_of_a_body() -> None:
    body = {
        "jobSpec": {
            "workerPoolSpecs": [
                pool("n1-standard-4", containerSpec={"imageUri": "r/i:1"}),
                pool("n1-standard-4", containerSpec={"imageUri": "r/i:1"}),
            ],
            "baseOutputDirectory": {"outputUriPrefix": "gs://out/run"},
            "serviceAccount": "sa@p.iam.gserviceaccount.com",
        },
        "encryptionSpec": {"kmsKeyName": "projects/p/locations/us-central1/keyRings/r/cryptoKeys/k"},
    }
    needs = needs_of(body, ["gs://stage/mlsubmit/packages/x/t.tar.gz"])
    assert [(u.bucket, u.role, u.caller_writes) for u in needs.buckets] == [
        ("stage", "staging", True),
        ("out", "job dir", False),
    ]
    assert needs.service_account == "sa@p.iam.gserviceaccount.com" and needs.kms_key.endswith("/k")  # type: ignore[union-attr]
    assert needs.images == ("r/i:1",) == tuple(images(body))
    assert needs.quota == {f"{P}cpus": 8}
    # an image --build-image makes after the preflight is not looked up (it may not exist yet)
    assert needs_of(body, built=["r/i:1"]).images == ()


def test_spot_and_flex_start_quota_is_not_judged() -> None:
    body = {"jobSpec": {"workerPoolSpecs": [pool("n1-standard-4")], "scheduling": {"strategy": "SPOT"}}}
    assert needs_of(body).quota == {}
