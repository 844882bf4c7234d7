"""Vertex AI's rules: its machines, its GPUs on the families they need, flex-start eligibility, regions."""

from __future__ import annotations

import json
from typing import Any

import pytest
from googleapiclient.discovery_cache import get_static_doc

from mlsubmit.job.jobfile import job_schema
from mlsubmit.job.rules import check_job
from mlsubmit.job.vocab import LEGACY_MACHINE_TYPES, RESERVATION_AFFINITIES, SCHEDULING_STRATEGIES, TIER_POOLS
from mlsubmit.targets.vertex_rules import check_vertex, vertex_rules
from mlsubmit.targets.vertex_tables import (
    FLEX_START_GPUS,
    GPU_MACHINES,
    TRAINING_MACHINES,
    VERTEX_LEGACY_MACHINES,
    VERTEX_TIER_POOLS,
    gpus_carried,
)
from tests.fakes.jobs import job


def aiplatform() -> dict[str, Any]:
    text = get_static_doc("aiplatform", "v1")
    assert text
    doc: dict[str, Any] = json.loads(text)
    return doc["schemas"]


def gpu_job(machine: str, gpu: str | None = None, count: int = 1, **ti: Any) -> dict[str, Any]:
    master: dict[str, Any] = {}
    if gpu:
        master["acceleratorConfig"] = {"type": gpu, "count": str(count)}
    return job(scaleTier="CUSTOM", masterType=machine, masterConfig=master, **ti)


def problems(body: dict[str, Any], **kwargs: Any) -> dict[str, str]:
    """dotted path -> the messages (joined) of every Vertex rule the body breaks."""
    out: dict[str, str] = {}
    for path, message in check_vertex(body, **kwargs):
        key = ".".join(map(str, path))
        out[key] = f"{out[key]} | {message}" if key in out else message
    return out


def test_accelerators_strategies_and_reservation_types_are_the_aiplatform_enums() -> None:
    schemas = aiplatform()
    enum = set(schemas["GoogleCloudAiplatformV1MachineSpec"]["properties"]["acceleratorType"]["enum"])
    assert set(GPU_MACHINES) <= enum
    assert set(SCHEDULING_STRATEGIES) <= set(
        schemas["GoogleCloudAiplatformV1Scheduling"]["properties"]["strategy"]["enum"]
    )
    kinds = schemas["GoogleCloudAiplatformV1ReservationAffinity"]["properties"]["reservationAffinityType"]
    assert set(RESERVATION_AFFINITIES.values()) <= set(kinds["enum"])
    ours = job_schema()["$defs"]["AcceleratorConfig"]["properties"]["type"]["enum"]
    assert {t for t in ours if t.startswith("NVIDIA_") and t != "NVIDIA_TESLA_K80"} == set(GPU_MACHINES)


@pytest.mark.parametrize(
    ("machine", "gpu", "count"),
    [
        ("n1-standard-8", "NVIDIA_TESLA_T4", 2),
        ("a2-highgpu-4g", "NVIDIA_TESLA_A100", 4),
        ("a2-ultragpu-1g", "NVIDIA_A100_80GB", 1),
        ("g2-standard-24", "NVIDIA_L4", 2),
        ("a3-highgpu-8g", "NVIDIA_H100_80GB", 8),
        ("a3-ultragpu-8g", "NVIDIA_H200_141GB", 8),
        ("a4-highgpu-8g", "NVIDIA_B200", 8),
        ("n1-standard-16", None, 1),
        ("n1-highcpu-16", None, 1),
    ],
)
def test_vertex_machines_with_the_gpus_they_carry_pass(machine: str, gpu: str | None, count: int) -> None:
    assert problems(gpu_job(machine, gpu, count)) == {}


@pytest.mark.parametrize(
    ("machine", "gpu", "count", "path", "words"),
    [
        ("n1-highcpu-8", None, 1, "trainingInput.masterType", "not a Vertex AI training machine"),
        ("n1-standard-2", None, 1, "trainingInput.masterType", "not a Vertex AI training machine"),
        ("n1-standard-8", "NVIDIA_TESLA_A100", 1, "trainingInput.masterConfig.acceleratorConfig.type", "a2-"),
        (
            "n1-standard-8",
            "NVIDIA_L4",
            1,
            "trainingInput.masterConfig.acceleratorConfig.type",
            "g2-standard-*",
        ),
        ("a2-highgpu-1g", "NVIDIA_H100_80GB", 1, "trainingInput.masterConfig.acceleratorConfig.type", "a3-"),
        ("a2-highgpu-4g", "NVIDIA_TESLA_A100", 2, "trainingInput.masterConfig.acceleratorConfig.count", "4"),
        (
            "n1-standard-8",
            "NVIDIA_TESLA_T4",
            3,
            "trainingInput.masterConfig.acceleratorConfig.count",
            "1, 2, 4",
        ),
        ("a3-highgpu-8g", None, 1, "trainingInput.masterType", "acceleratorConfig {type: NVIDIA_H100_80GB"),
    ],
)
def test_machines_and_gpus_vertex_would_refuse_are_refused_with_the_fix(
    machine: str, gpu: str | None, count: int, path: str, words: str
) -> None:
    found = problems(gpu_job(machine, gpu, count))
    assert path in found and words in found[path], found


def test_legacy_names_and_tiers_map_only_to_machines_vertex_offers() -> None:
    for name, (machine, _acc) in VERTEX_LEGACY_MACHINES.items():
        assert machine in TRAINING_MACHINES, name
        assert problems(job(scaleTier="CUSTOM", masterType=name)) == {}, name
    for tier, roles in VERTEX_TIER_POOLS.items():
        assert all(m in TRAINING_MACHINES for _n, m, _a in roles.values()), tier
        assert problems(job(scaleTier=tier)) == {}, tier


def test_vertex_tiers_and_legacy_names_are_the_ml_v1_tables_on_vertex_machines() -> None:
    assert set(VERTEX_LEGACY_MACHINES) == set(LEGACY_MACHINE_TYPES)
    assert {t: {r: n for r, (n, _m, _a) in roles.items()} for t, roles in VERTEX_TIER_POOLS.items()} == {
        t: {r: n for r, (n, _m, _a) in roles.items()} for t, roles in TIER_POOLS.items()
    }
    assert VERTEX_LEGACY_MACHINES["complex_model_s"] == ("n1-standard-8", None)  # n1-highcpu starts at 16
    assert VERTEX_LEGACY_MACHINES["complex_model_l_gpu"] == ("n1-standard-32", ("NVIDIA_TESLA_T4", 4))
    assert VERTEX_LEGACY_MACHINES["complex_model_l_v100"] == ("n1-standard-32", ("NVIDIA_TESLA_V100", 8))
    assert VERTEX_TIER_POOLS["STANDARD_1"]["worker"] == (4, "n1-standard-8", None)


def test_gpu_counts_come_from_the_machine_name() -> None:
    assert [
        gpus_carried(m) for m in ("a2-megagpu-16g", "g2-standard-48", "a4x-highgpu-4g", "n1-standard-8")
    ] == [
        16,
        4,
        4,
        None,
    ]


def test_runtime_is_not_demanded_with_an_executor_image_or_a_framework() -> None:
    bare = job()
    del bare["trainingInput"]["runtimeVersion"]
    assert "trainingInput.runtimeVersion" in problems(bare)
    prebuilt = "europe-docker.pkg.dev/vertex-ai/training/pytorch-gpu.2-4.py310:latest"
    assert problems({**bare, "vertex": {"executorImageUri": prebuilt}}) == {}
    own = problems({**bare, "vertex": {"executorImageUri": "europe-docker.pkg.dev/p/r/trainer:1"}})
    assert "--build-image" in own["vertex.executorImageUri"]
    assert problems({**bare, "vertex": {"framework": "pytorch", "frameworkVersion": "2.4"}}) == {}
    both = {**job(), "vertex": {"framework": "pytorch"}}
    assert "vertex.framework" in problems(both)


def test_max_wait_time_is_kept_only_under_flex_start_with_the_true_reason() -> None:
    waiting = gpu_job("g2-standard-8", "NVIDIA_L4", 1, scheduling={"maxWaitTime": "3600s"})
    message = problems(waiting)["trainingInput.scheduling.maxWaitTime"]
    assert "FLEX_START" in message and "--scheduling-strategy flex-start" in message
    waiting["trainingInput"]["scheduling"]["strategy"] = "FLEX_START"
    assert problems(waiting) == {}


@pytest.mark.parametrize(
    ("ti", "path", "words"),
    [
        ({"masterType": "n1-standard-8"}, "trainingInput.scheduling.strategy", "no GPU"),
        (
            {
                "masterType": "n1-standard-8",
                "masterConfig": {"acceleratorConfig": {"type": "NVIDIA_TESLA_T4", "count": 1}},
            },
            "trainingInput.scheduling.strategy",
            "NVIDIA_TESLA_T4",
        ),
        (
            {
                "masterType": "g2-standard-8",
                "masterConfig": {"acceleratorConfig": {"type": "NVIDIA_L4", "count": 1}},
                "workerType": "g2-standard-24",
                "workerCount": "2",
                "workerConfig": {"acceleratorConfig": {"type": "NVIDIA_L4", "count": 2}},
            },
            "trainingInput.scheduling.strategy",
            "same machine type",
        ),
        (
            {
                "masterType": "g2-standard-8",
                "masterConfig": {"acceleratorConfig": {"type": "NVIDIA_L4", "count": 1}},
                "scheduling": {"strategy": "FLEX_START", "maxRunningTime": "700000s"},
            },
            "trainingInput.scheduling.maxRunningTime",
            "7 days",
        ),
    ],
)
def test_flex_start_eligibility_is_checked_locally(ti: dict[str, Any], path: str, words: str) -> None:
    ti.setdefault("scheduling", {"strategy": "FLEX_START"})
    found = problems(job(scaleTier="CUSTOM", **ti))
    assert path in found and words in found[path], found


def test_flex_start_gpus_are_the_documented_ones() -> None:
    assert {g.split("_")[1] if "TESLA" not in g else "A100" for g in FLEX_START_GPUS} == {
        "L4",
        "A100",
        "H100",
        "H200",
        "B200",
    }


def test_kms_key_tensorboard_and_experiment_must_be_in_the_jobs_region() -> None:
    body = job(
        encryptionConfig={"kmsKeyName": "projects/p/locations/europe-west4/keyRings/r/cryptoKeys/k"},
        serviceAccount="sa@p.iam.gserviceaccount.com",
        jobDir="gs://bkt/out",
    )
    body["vertex"] = {
        "tensorboard": "projects/p/locations/us-east1/tensorboards/1",
        "experiment": "projects/p/locations/us-central1/metadataStores/default/contexts/exp",
    }
    found = problems(body)
    assert "europe-west4" in found["trainingInput.encryptionConfig.kmsKeyName"]
    assert "--kms-location us-central1" in found["trainingInput.encryptionConfig.kmsKeyName"]
    assert "us-east1" in found["vertex.tensorboard"]
    assert "vertex.experiment" not in found


@pytest.mark.parametrize(
    ("vertex", "path", "words"),
    [
        (
            {"reservationAffinity": {"reservationAffinityType": "SPECIFIC_RESERVATION"}},
            "vertex.reservationAffinity",
            "key and values",
        ),
        (
            {
                "poolReservationAffinity": {
                    "worker": {"reservationAffinityType": "ANY_RESERVATION", "values": ["r"]}
                }
            },
            "vertex.poolReservationAffinity.worker",
            "no key or values",
        ),
        ({"env": {"TF_CONFIG": "{}"}}, "vertex.env.TF_CONFIG", "set by Vertex AI"),
        ({"env": {f"V{i}": "x" for i in range(101)}}, "vertex.env", "at most 100"),
        (
            {"experimentRun": "projects/p/locations/us-central1/metadataStores/default/contexts/e-r"},
            "vertex.experimentRun",
            "needs vertex.experiment",
        ),
        (
            {"tensorboard": "projects/p/locations/us-central1/tensorboards/1"},
            "vertex.tensorboard",
            "service account",
        ),
    ],
)
def test_vertex_settings_vertex_would_refuse(vertex: dict[str, Any], path: str, words: str) -> None:
    found = problems({**job(), "vertex": vertex})
    assert path in found and words in found[path], found


def test_the_shared_rules_call_the_target_hook_instead_of_ml_v1s() -> None:
    l4 = gpu_job("g2-standard-8", "NVIDIA_L4", 1, scheduling={"strategy": "SPOT"})
    l4["vertex"] = {"persistentResourceId": "pool-1"}
    as_ml = {path: message for path, message in check_job(l4)}
    assert ("trainingInput", "masterConfig", "acceleratorConfig", "type") in as_ml
    assert ("trainingInput", "scheduling", "strategy") in as_ml
    assert ("vertex",) in as_ml
    assert check_job(l4, target_rules=vertex_rules()) == []
    image_only = {
        **job(),
        "vertex": {"executorImageUri": "us-docker.pkg.dev/vertex-ai/training/xgboost-cpu.1-7.py310:latest"},
    }
    del image_only["trainingInput"]["runtimeVersion"]
    assert check_job(image_only, target_rules=vertex_rules()) == []
    py310 = job(pythonVersion="3.10")
    assert check_job(py310, target_rules=vertex_rules()) == []
    assert check_job(py310)  # ml v1 knows no Python 3.10
