"""Vertex AI's tables: training machine types, which GPU rides on which machine, legacy names and tiers (ml v1's,
:mod:`mlsubmit.job.vocab`, adjusted to what Vertex AI offers). Each table is dated with the page it was read from
(docs/vertex.md shows them); enums come from the aiplatform v1 discovery document (revision 20261106)."""

from __future__ import annotations

import re

from mlsubmit.job.vocab import LEGACY_MACHINE_TYPES, TIER_POOLS, Accelerator

# --- Machine types for custom training -----------------------------------------------------------------
# Written 2026-11-24 from https://cloud.google.com/vertex-ai/docs/training/configure-compute ("Configure
# compute resources for custom training", machine types table). Only excerpts of that page could be read that
# day, so sizes are as the page listed them when last read in full; re-check rare sizes against it. Certain
# (and what the rules rely on most): n1-highcpu starts at 16 vCPUs and n1-standard at 4 there, so n1-highcpu-8
# and n1-standard-2 are not training machines.
_SIZES: dict[str, tuple[int, ...]] = {
    "e2-standard": (4, 8, 16, 32),
    "e2-highmem": (2, 4, 8, 16),
    "e2-highcpu": (16, 32),
    "n2-standard": (4, 8, 16, 32, 48, 64, 80),
    "n2-highmem": (2, 4, 8, 16, 32, 48, 64, 80),
    "n2-highcpu": (16, 32, 48, 64, 80),
    "n1-standard": (4, 8, 16, 32, 64, 96),
    "n1-highmem": (2, 4, 8, 16, 32, 64, 96),
    "n1-highcpu": (16, 32, 64, 96),
    "c2-standard": (4, 8, 16, 30, 60),
    "g2-standard": (4, 8, 12, 16, 24, 32, 48, 96),
    "g4-standard": (48, 96, 192, 384),
}
_GPU_SIZES: dict[str, tuple[int, ...]] = {  # accelerator-optimized: FAMILY-{GPUs}g
    "a2-highgpu": (1, 2, 4, 8),
    "a2-megagpu": (16,),
    "a2-ultragpu": (1, 2, 4, 8),
    "a3-highgpu": (1, 2, 4, 8),
    "a3-megagpu": (8,),
    "a3-ultragpu": (8,),
    "a4-highgpu": (8,),
    "a4x-highgpu": (4,),
}
TRAINING_MACHINES: frozenset[str] = frozenset(
    [f"{family}-{size}" for family, sizes in _SIZES.items() for size in sizes]
    + [f"{family}-{size}g" for family, sizes in _GPU_SIZES.items() for size in sizes]
    + ["m1-ultramem-40", "m1-ultramem-80", "m1-ultramem-160", "m1-megamem-96"]
)

# --- Which machines each GPU rides on, and how many GPUs a machine carries ------------------------------
# Accelerator names: aiplatform v1 discovery document, MachineSpec.acceleratorType (revision 20261106).
# Pairs written 2026-11-24 from https://cloud.google.com/vertex-ai/docs/training/configure-compute ("GPUs")
# and https://cloud.google.com/compute/docs/gpus (accelerator-optimized machine families); GB200 on a4x-highgpu-4g
# confirmed that day on https://cloud.google.com/vertex-ai/docs/training/training-clusters/compute-resources.
GPU_MACHINES: dict[str, tuple[str, ...]] = {
    "NVIDIA_TESLA_T4": ("n1-",),
    "NVIDIA_TESLA_P4": ("n1-",),
    "NVIDIA_TESLA_P100": ("n1-",),
    "NVIDIA_TESLA_V100": ("n1-",),
    "NVIDIA_TESLA_A100": ("a2-highgpu-", "a2-megagpu-"),
    "NVIDIA_A100_80GB": ("a2-ultragpu-",),
    "NVIDIA_L4": ("g2-standard-",),
    "NVIDIA_H100_80GB": ("a3-highgpu-",),
    "NVIDIA_H100_MEGA_80GB": ("a3-megagpu-",),
    "NVIDIA_H200_141GB": ("a3-ultragpu-",),
    "NVIDIA_B200": ("a4-highgpu-",),
    "NVIDIA_GB200": ("a4x-highgpu-",),
    "NVIDIA_RTX_PRO_6000": ("g4-standard-",),
}
# Friendly spellings people use (the issue and Vertex's pages say "H200"); flags accept them too.
GPU_ALIASES = {"NVIDIA_H200": "NVIDIA_H200_141GB", "NVIDIA_H100": "NVIDIA_H100_80GB"}
# GPUs per N1 machine (https://cloud.google.com/compute/docs/gpus, N1 general-purpose; written 2026-11-24).
N1_GPU_COUNTS: dict[str, tuple[int, ...]] = {
    "NVIDIA_TESLA_T4": (1, 2, 4),
    "NVIDIA_TESLA_P4": (1, 2, 4),
    "NVIDIA_TESLA_P100": (1, 2, 4),
    "NVIDIA_TESLA_V100": (1, 2, 4, 8),
}
# G2 (L4) and G4 (RTX PRO 6000) machines carry a fixed number of GPUs by size (same pages, written 2026-11-24).
_FIXED_BY_SIZE = {
    "g2-standard": {4: 1, 8: 1, 12: 1, 16: 1, 24: 2, 32: 1, 48: 4, 96: 8},
    "g4-standard": {48: 1, 96: 2, 192: 4, 384: 8},
}
_GPU_SUFFIX = re.compile(r"a[0-9x]+-[a-z]+gpu-([0-9]+)g")

# Dynamic Workload Scheduler (scheduling.strategy FLEX_START): GPUs it serves, and the longest timeout.
# Confirmed 2026-11-24 on https://cloud.google.com/vertex-ai/docs/training/schedule-jobs-dws
# ("Requirements": L4, A100, H100, H200 or B200 GPUs; timeout of 7 days or less; one machine configuration
# for all worker pools).
FLEX_START_GPUS = frozenset(
    {"NVIDIA_L4", "NVIDIA_TESLA_A100", "NVIDIA_A100_80GB", "NVIDIA_H100_80GB", "NVIDIA_H100_MEGA_80GB"}
    | {"NVIDIA_H200_141GB", "NVIDIA_B200"}
)
FLEX_START_MAX_TIMEOUT_S = 7 * 24 * 3600

# --- Legacy AI Platform names on Vertex AI ----------------------------------------------------------------
K80 = "NVIDIA_TESLA_K80"
# The ml v1 tables (mlsubmit.job.vocab: LEGACY_MACHINE_TYPES, TIER_POOLS) with the changes Vertex AI needs,
# because it offers only TRAINING_MACHINES and N1_GPU_COUNTS: n1-highcpu starts at 16 vCPUs there, so the
# 8-vCPU highcpu machines (complex_model_s, STANDARD_1) keep their 8 vCPUs as n1-standard-8; an N1 machine takes
# at most 4 T4s, so complex_model_l_gpu's 8 (ex-K80) GPUs become 4 (the warning says so: each T4 is faster than
# a K80). K80s (end of support, aiplatform v1 enum description) become T4s.
_VERTEX_MACHINE = {"n1-highcpu-8": "n1-standard-8"}


def _on_vertex(machine: str, accelerator: Accelerator | None) -> tuple[str, Accelerator | None]:
    machine = _VERTEX_MACHINE.get(machine, machine)
    if accelerator and machine.startswith("n1-") and accelerator[0] in N1_GPU_COUNTS:
        accelerator = (accelerator[0], min(accelerator[1], max(N1_GPU_COUNTS[accelerator[0]])))
    return machine, accelerator


# legacy name -> (Vertex training machine, implied accelerator or None)
VERTEX_LEGACY_MACHINES: dict[str, tuple[str, Accelerator | None]] = {
    name: _on_vertex(machine, acc) for name, (machine, acc) in LEGACY_MACHINE_TYPES.items()
}
# legacy *_gpu name -> how many K80s it had (the ml v1 table's GPU count: one T4 per K80 there)
K80_COUNTS = {
    name: acc[1] for name, (_m, acc) in LEGACY_MACHINE_TYPES.items() if name.endswith("_gpu") and acc
}
# tier -> role key -> (count, Vertex training machine, accelerator or None)
VERTEX_TIER_POOLS: dict[str, dict[str, tuple[int, str, Accelerator | None]]] = {
    tier: {role: (count, *_on_vertex(machine, acc)) for role, (count, machine, acc) in roles.items()}
    for tier, roles in TIER_POOLS.items()
}


def gpus_carried(machine: str) -> int | None:
    """How many GPUs a GPU-family machine comes with (a2-highgpu-4g: 4; g2-standard-24: 2); None for others."""
    if m := _GPU_SUFFIX.fullmatch(machine):
        return int(m.group(1))
    family, _, size = machine.rpartition("-")
    if family in _FIXED_BY_SIZE and size.isdigit():
        return _FIXED_BY_SIZE[family].get(int(size))
    return None
