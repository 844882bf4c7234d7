"""Where Vertex AI offers what, and what a job takes from the project's quota: dated tables for the preflight
(docs/getting-jobs-to-start.md). Pure."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from mlsubmit.job.values import int64_value
from mlsubmit.job.vocab import as_dict

SOURCE = "https://cloud.google.com/vertex-ai/docs/general/locations"
CHECKED = "2026-11-25"
METRIC_PREFIX = "aiplatform.googleapis.com/custom_model_training_"

# Vertex AI's locations page (SOURCE: "Available locations" and the custom training accelerators by region), read
# 2026-11-25. Only excerpts could be read that day: the region list was confirmed (US, Canada and the older page's
# lists), no accelerator row could be, so a GPU missing from a row is a warning (``confirmed`` rows would refuse).
REGIONS = frozenset(
    {f"us-{r}" for r in ("central1", "east1", "east4", "east5", "south1", "west1", "west2", "west3", "west4")}
    | {"northamerica-northeast1", "northamerica-northeast2", "southamerica-east1", "southamerica-west1"}
    | {f"europe-{r}" for r in ("central2", "north1", "southwest1", "west1", "west2", "west3", "west4")}
    | {"europe-west6", "europe-west8", "europe-west9", "australia-southeast1", "me-west1"}
    | {f"asia-{r}" for r in ("east1", "east2", "northeast1", "northeast3", "south1", "southeast1")}
)

_COMMON = ("NVIDIA_TESLA_T4", "NVIDIA_L4")
_OLDER = ("NVIDIA_TESLA_V100", "NVIDIA_TESLA_P100")
_A100 = ("NVIDIA_TESLA_A100", "NVIDIA_A100_80GB")
_H100 = ("NVIDIA_H100_80GB", "NVIDIA_H100_MEGA_80GB")
_P4, _A100_40, _H100_80 = "NVIDIA_TESLA_P4", "NVIDIA_TESLA_A100", "NVIDIA_H100_80GB"
# region -> (accelerators for custom training, confirmed on the page?)
ACCELERATORS: dict[str, tuple[frozenset[str], bool]] = {
    region: (frozenset(gpus), False)
    for region, gpus in {
        "us-central1": (*_COMMON, *_OLDER, _P4, *_A100, *_H100, "NVIDIA_H200_141GB", "NVIDIA_B200"),
        "us-east1": (*_COMMON, *_OLDER, _A100_40, _H100_80),
        "us-east4": (*_COMMON, _P4, "NVIDIA_A100_80GB", *_H100),
        "us-west1": (*_COMMON, *_OLDER, _A100_40, _H100_80),
        "us-west4": (*_COMMON, _P4, _A100_40, _H100_80),
        "europe-west1": (*_COMMON, "NVIDIA_TESLA_P100"),
        "europe-west2": (*_COMMON, _P4),
        "europe-west4": (*_COMMON, *_OLDER, _P4, *_A100, *_H100),
        "asia-east1": (*_COMMON, *_OLDER),
        "asia-northeast1": (*_COMMON, _A100_40, _H100_80),
        "asia-southeast1": (*_COMMON, _P4, _A100_40, _H100_80),
    }.items()
}

# accelerator -> its quota metric's middle part (custom_model_training_<this>_gpus)
GPU_METRICS = {
    "NVIDIA_TESLA_T4": "nvidia_t4",
    "NVIDIA_TESLA_P4": "nvidia_p4",
    "NVIDIA_TESLA_P100": "nvidia_p100",
    "NVIDIA_TESLA_V100": "nvidia_v100",
    "NVIDIA_TESLA_A100": "nvidia_a100",
    "NVIDIA_A100_80GB": "nvidia_a100_80gb",
    "NVIDIA_L4": "nvidia_l4",
    "NVIDIA_H100_80GB": "nvidia_h100",
    "NVIDIA_H100_MEGA_80GB": "nvidia_h100_mega",
    "NVIDIA_H200_141GB": "nvidia_h200",
    "NVIDIA_B200": "nvidia_b200",
}
# vCPUs of accelerator-optimized machines (https://cloud.google.com/compute/docs/gpus, 2026-11-25): per GPU for
# the a2/a3-highgpu sizes, whole for the rest.
_VCPUS_PER_GPU = {"a2-highgpu": 12, "a2-ultragpu": 12, "a3-highgpu": 26}
_VCPUS = {
    "a2-megagpu-16g": 96,
    "a3-megagpu-8g": 208,
    "a3-ultragpu-8g": 224,
    "a4-highgpu-8g": 224,
    "a4x-highgpu-4g": 140,
}


def vcpus(machine: str) -> int | None:
    """vCPUs of a training machine (``n1-standard-8``: 8, ``a2-highgpu-2g``: 24); None when unknown."""
    kind, _, size = machine.rpartition("-")
    if kind in _VCPUS_PER_GPU:
        from mlsubmit.targets.vertex_tables import gpus_carried  # a GPU machine only: not on a dry run's path

        return _VCPUS_PER_GPU[kind] * (gpus_carried(machine) or 0) or None
    return _VCPUS.get(machine) or (int(size) if size.isdigit() else None)


def cpu_metric(machine: str) -> str:
    """The CPU quota metric a machine draws from (N1 and E2 share ``custom_model_training_cpus``)."""
    family = machine.split("-", 1)[0]
    return f"{METRIC_PREFIX}cpus" if family in ("n1", "e2") else f"{METRIC_PREFIX}{family}_cpus"


def count(value: Any, default: int) -> int:
    """A count a body holds (an int or a digit string), else ``default``."""
    n = int64_value(value)
    return default if n is None else n


def job_spec(body: Mapping[str, Any]) -> Mapping[str, Any]:
    """The CustomJobSpec of a CustomJob (``jobSpec``) or of a tuning job's trials (``trialJobSpec``)."""
    return as_dict(body.get("jobSpec") or body.get("trialJobSpec"))


def pools(body: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The non-empty worker pools of a CustomJob or tuning job body."""
    found = job_spec(body).get("workerPoolSpecs")
    return [p for p in (found if isinstance(found, list) else []) if isinstance(p, dict) and p]


def demand(body: Mapping[str, Any]) -> dict[str, int]:
    """Quota metric -> amount a CustomJob (or a tuning job's parallel trials) takes while it runs: ``..._cpus`` (N1
    and E2), ``..._<family>_cpus``, ``..._nvidia_<gpu>_gpus`` (the names the service quotes when it refuses a create
    with 429, seen 2026; family metrics beyond c2 unconfirmed)."""
    parallel = count(body.get("parallelTrialCount"), 1) if "trialJobSpec" in body else 1
    wanted: Counter[str] = Counter()
    for pool in pools(body):
        replicas = count(pool.get("replicaCount"), 1) * parallel
        spec = as_dict(pool.get("machineSpec"))
        machine = str(spec.get("machineType") or "")
        if cpus := vcpus(machine):
            wanted[cpu_metric(machine)] += replicas * cpus
        if gpu := GPU_METRICS.get(str(spec.get("acceleratorType") or "")):
            wanted[f"{METRIC_PREFIX}{gpu}_gpus"] += replicas * count(spec.get("acceleratorCount"), 1)
    return dict(wanted)


def offered(region: str, body: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """(status, name, message) lines: is the region, and each pool's accelerator, offered there?"""
    source = f"(table of {CHECKED}, {SOURCE})"
    if region not in REGIONS:
        return [("warning", f"region {region}", f"not among Vertex AI's training regions {source}")]
    lines = [("ok", f"region {region}", "Vertex AI trains there")]
    row = ACCELERATORS.get(region)
    gpus = {str(as_dict(p.get("machineSpec")).get("acceleratorType") or "") for p in pools(body)} - {""}
    for gpu in sorted(gpus):
        name = f"{gpu} in {region}"
        if row is None:
            lines.append(("unchecked", name, f"no row for {region} {source}"))
        elif gpu in row[0]:
            lines.append(("ok", name, f"offered {source}"))
        elif row[1]:
            lines.append(("refused", name, f"not offered there {source}; pick another region or accelerator"))
        else:
            lines.append(("warning", name, f"not in the row for {region}, which is unconfirmed {source}"))
    return lines


def images(body: Mapping[str, Any]) -> list[str]:
    """The custom container images of a job (``containerSpec.imageUri``), once each, in pool order."""
    uris = (as_dict(pool.get("containerSpec")).get("imageUri") for pool in pools(body))
    return list(dict.fromkeys(uri for uri in uris if isinstance(uri, str) and uri))
