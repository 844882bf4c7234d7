"""What the ml v1 job's replicas become on today's engines, shared by vertex.py and tfjob.py (issue 6).

The legacy service chose machines itself for the predefined scale tiers, knew legacy machine names and ran a
runtime version; Vertex AI and Kubernetes want explicit replica pools and an image. This module makes those
choices from the tables below, and collects what the target cannot express as a refusal (InvalidJobError,
exit 2) or an explicit warning — nothing is silently dropped: every ``trainingInput`` field is translated or
refused (tests/unit/test_vertex.py checks this against the ml.v1 discovery schema).

Scale tiers (the closest Compute Engine equivalents; a warning names the expansion):

===========  ===========================================================================
BASIC        primary: 1 x n1-standard-4
BASIC_GPU    primary: 1 x n1-standard-8 + 1 NVIDIA_TESLA_T4 (the tier's K80 has reached end of life)
STANDARD_1   primary: 1 x n1-highcpu-8; 4 workers n1-highcpu-8; 3 parameter servers n1-standard-4
PREMIUM_1    primary: 1 x n1-highcpu-16; 19 workers n1-highcpu-16; 11 parameter servers n1-highmem-8
CUSTOM       the job's own machine types and counts (legacy names mapped as below)
BASIC_TPU    refused: legacy TPU jobs (a CPU master driving a TPU worker) have no equivalent
===========  ===========================================================================

Legacy machine names become Compute Engine types (GPUs included, a warning says so): standard n1-standard-4,
large_model n1-highmem-8, complex_model_s n1-highcpu-8, complex_model_m n1-highcpu-16, complex_model_l
n1-highcpu-32, standard_gpu n1-standard-8 + 1 T4, complex_model_m_gpu n1-standard-16 + 4 T4,
complex_model_l_gpu n1-standard-32 + 8 T4 (the legacy K80s are retired), standard_p100 n1-standard-8 + 1
P100, complex_model_m_p100 n1-standard-16 + 4 P100, standard_v100 n1-standard-8 + 1 V100, large_model_v100
n1-highmem-8 + 1 V100, complex_model_m_v100 n1-standard-16 + 4 V100, complex_model_l_v100 n1-standard-32 + 8
V100; cloud_tpu is refused.

Images for Python package jobs: the Vertex AI prebuilt training containers,
``REPO/vertex-ai/training/NAME:latest``, where REPO is ``europe-docker.pkg.dev`` for europe-* regions,
``asia-docker.pkg.dev`` for asia-* and australia-*, else ``us-docker.pkg.dev``, and NAME says ``tf-gpu``
instead of ``tf-cpu`` for each pool whose machine has GPUs:

=================  =================================  ==========================================
runtimeVersion     pythonVersion unset                pythonVersion 3.7
=================  =================================  ==========================================
1.15, 2.1 - 2.7    tf-cpu.X-Y (Python 3.7)            tf-cpu.X-Y
2.8, 2.9, 2.11     tf-cpu.2-Y.py310                   tf-cpu.2-Y
2.12 - 2.17        tf-cpu.2-Y.py310                   refused (no Python 3.7 image)
=================  =================================  ==========================================

Any other runtime (2.10, 1.14, ...) is refused with a hint to pass ``--executor-image-uri``, which replaces the
table for every pool. The images hold TensorFlow (and XGBoost); scikit-learn trainers should pass a
``sklearn-cpu`` image.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from mlsubmit.errors import InvalidJobError, Problem
from mlsubmit.spec.values import int64_value
from mlsubmit.spec.vocab import (
    K80_LEGACY,
    LEGACY_MACHINE_TYPES,
    LEGACY_TPU_MACHINE,
    MASTER,
    ROLES,
    TIER_POOLS,
    scale_tier,
)

TI = "$.trainingInput"

# The tables (roles, legacy machines, tier expansions) are mlsubmit.spec.vocab's; LEGACY_MACHINES keeps its name here.
LEGACY_MACHINES = LEGACY_MACHINE_TYPES

# runtimeVersion -> {python version -> image name with {kind} for cpu/gpu}; "" is the choice when unset.
_PY37_ONLY = {f"2.{minor}": {"3.7": f"tf-{{kind}}.2-{minor}"} for minor in range(1, 8)}
_BOTH = {f"2.{m}": {"3.10": f"tf-{{kind}}.2-{m}.py310", "3.7": f"tf-{{kind}}.2-{m}"} for m in (8, 9, 11)}
_PY310_ONLY = {f"2.{minor}": {"3.10": f"tf-{{kind}}.2-{minor}.py310"} for minor in range(12, 18)}
EXECUTOR_IMAGES: dict[str, dict[str, str]] = {
    "1.15": {"3.7": "tf-{kind}.1-15"},
    **_PY37_ONLY,
    **_BOTH,
    **_PY310_ONLY,
}


@dataclass(frozen=True)
class Pool:
    """One replica role of the job, expanded: explicit machine, count and accelerator, and what it runs."""

    role: str  # a vocab.Role key: master, worker, parameter_server, evaluator
    index: int  # Vertex worker pool position
    count: int
    machine_type: str
    accelerator: tuple[str, int] | None
    disk: dict[str, Any]
    image: str | None  # custom container image (the master's when the role has none of its own)
    command: list[str] | None
    container_args: list[str] | None

    @property
    def gpus(self) -> int:
        """GPUs per replica (0 for none)."""
        acc = self.accelerator
        return acc[1] if acc and acc[0].startswith("NVIDIA_") else 0


@dataclass
class Findings:
    """Problems (refusals) and warnings collected while translating, reported all at once."""

    problems: list[Problem] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def refuse(self, path: str, message: str) -> None:
        problem = Problem(message=message, path=path)
        if problem not in self.problems:
            self.problems.append(problem)

    def warn(self, message: str) -> None:
        if message not in self.warnings:
            self.warnings.append(message)

    def raise_if_any(self) -> None:
        if self.problems:
            raise InvalidJobError(self.problems)


def as_dict(value: Any) -> dict[str, Any]:
    """``value`` when it is a dict, else an empty one (optional sub-objects of the body)."""
    return value if isinstance(value, dict) else {}


def _int(value: Any) -> int:
    return int64_value(value) or 0


def refuse_unsupported(ti: Mapping[str, Any], found: Findings, target: str) -> None:
    """Refuse what neither Vertex AI nor a TFJob can express: priority, queue wait limits, tuning, TPUs."""
    sched = as_dict(ti.get("scheduling"))
    if "priority" in sched:
        found.refuse(
            f"{TI}.scheduling.priority", f"{target} has no per-job priority; remove scheduling.priority"
        )
    if "maxWaitTime" in sched:
        found.refuse(
            f"{TI}.scheduling.maxWaitTime",
            f"{target} has no limit on the time a job waits in the queue; remove scheduling.maxWaitTime",
        )
    if ti.get("hyperparameters"):
        found.refuse(
            f"{TI}.hyperparameters",
            f"hyperparameter tuning is not translated to {target} yet; remove trainingInput.hyperparameters "
            "(run trials as separate jobs)",
        )
    if str(ti.get("scaleTier") or "").upper() == "BASIC_TPU":
        found.refuse(
            f"{TI}.scaleTier",
            f"scaleTier BASIC_TPU has no {target} equivalent; use scaleTier CUSTOM with GPU machines",
        )
    for role in ROLES:
        if "tpuTfVersion" in as_dict(ti.get(role.config_field)):
            found.refuse(
                f"{TI}.{role.config_field}.tpuTfVersion",
                f"TPU jobs are not translated to {target}; remove it",
            )


def _machine(
    ti: Mapping[str, Any], type_key: str, found: Findings, target: str
) -> tuple[str, tuple[str, int] | None]:
    machine = str(ti.get(type_key) or "")
    if machine == LEGACY_TPU_MACHINE:
        found.refuse(
            f"{TI}.{type_key}", f"machine type cloud_tpu (a legacy TPU worker) has no {target} equivalent"
        )
        return machine, None
    if machine in LEGACY_MACHINE_TYPES:
        compute, acc = LEGACY_MACHINE_TYPES[machine]
        extra = f" + {acc[1]} {acc[0]}" if acc else ""
        retired = " (its K80 GPUs have reached end of life)" if machine in K80_LEGACY else ""
        found.warn(f"legacy machine type {machine} runs as {compute}{extra}{retired}")
        return compute, acc
    return machine, None


def expand_pools(ti: Mapping[str, Any], found: Findings, target: str = "Vertex AI") -> list[Pool]:
    """The job's replica roles with explicit machines and counts (scale tiers expanded, legacy names mapped).

    Accelerators: the role's ``acceleratorConfig`` wins over the one a legacy machine or tier implies. Images:
    workers, parameter servers and evaluators default to the master's image, and then also to its command and
    container args (they run the same program), unless they set a command or args of their own.
    """
    tier = scale_tier(ti)
    master_cfg = as_dict(ti.get("masterConfig"))
    master_image = master_cfg.get("imageUri")
    pools: list[Pool] = []
    preset = TIER_POOLS.get(tier)
    if preset:
        shown = "; ".join(
            f"{n} x {m}" + (f" + {a[1]} {a[0]}" if a else "") + f" ({role.replace('_', ' ')})"
            for role, (n, m, a) in preset.items()
        )
        found.warn(f"scaleTier {tier} expanded to explicit pools: {shown}")
    elif tier != "CUSTOM":
        return pools  # BASIC_TPU: refused by refuse_unsupported
    for spec in ROLES:
        role, index, count_key, type_key, config_key = (
            spec.key,
            spec.pool,
            spec.count_field,
            spec.type_field,
            spec.config_field,
        )
        cfg = as_dict(ti.get(config_key))
        if preset:
            if role not in preset:
                continue
            count, machine, implied = preset[role]
        else:
            count = 1 if count_key is None else _int(ti.get(count_key))
            if count <= 0:
                continue
            machine, implied = _machine(ti, type_key, found, target)
        accelerator = implied
        acc_cfg = as_dict(cfg.get("acceleratorConfig"))
        if acc_cfg.get("type"):
            accelerator = (str(acc_cfg["type"]), _int(acc_cfg.get("count")))
        if accelerator and accelerator[0].startswith("TPU_"):
            found.refuse(
                f"{TI}.{config_key}.acceleratorConfig.type",
                f"TPU accelerators ({accelerator[0]}) are not translated to {target}; use GPUs",
            )
        if accelerator and accelerator[0] == "NVIDIA_TESLA_K80":
            found.warn(
                "NVIDIA_TESLA_K80 GPUs have reached end of life on Google Cloud; choose NVIDIA_TESLA_T4"
            )
        own_image = cfg.get("imageUri")
        inherits = (
            role != MASTER.key and not own_image and not ("containerCommand" in cfg or "containerArgs" in cfg)
        )
        source = master_cfg if inherits else cfg
        command = source.get("containerCommand")
        cargs = source.get("containerArgs")
        pools.append(
            Pool(
                role=role,
                index=index,
                count=count,
                machine_type=machine,
                accelerator=accelerator,
                disk={
                    k: v
                    for k, v in as_dict(cfg.get("diskConfig")).items()
                    if k in ("bootDiskType", "bootDiskSizeGb")
                },
                image=own_image or master_image,
                command=list(command) if command is not None else None,
                container_args=list(cargs) if cargs is not None else None,
            )
        )
    return pools


def app_args(ti: Mapping[str, Any], container_args: list[str] | None = None) -> list[str]:
    """The app's arguments: containerArgs or ``args``, then ``--job-dir JOB_DIR`` as the service passed it."""
    args = list(container_args if container_args is not None else ti.get("args") or [])
    job_dir = ti.get("jobDir")
    given = any(a == "--job-dir" or str(a).startswith("--job-dir=") for a in args)
    if job_dir and not given:
        args += ["--job-dir", str(job_dir)]
    return args


def refuse_image_override(pools: list[Pool], override: str | None, found: Findings) -> None:
    """``--executor-image-uri`` means nothing to a custom container job: say so rather than ignore it."""
    if override and pools and pools[0].image:
        found.refuse(
            f"{TI}.masterConfig.imageUri",
            "--executor-image-uri applies to Python package jobs, but this job runs a custom container; "
            "drop the flag",
        )


def image_repository(region: str | None) -> str:
    """The Artifact Registry host nearest the job's region (every prebuilt image is in all three)."""
    region = region or ""
    if region.startswith("europe-"):
        return "europe-docker.pkg.dev"
    if region.startswith(("asia-", "australia-")):
        return "asia-docker.pkg.dev"
    return "us-docker.pkg.dev"


def executor_image(ti: Mapping[str, Any], gpu: bool, found: Findings, override: str | None = None) -> str:
    """The prebuilt image for ``runtimeVersion`` + ``pythonVersion`` (module docstring table), or ``override``."""
    if override:
        return override
    runtime = str(ti.get("runtimeVersion") or "")
    python = str(ti.get("pythonVersion") or "")
    variants = EXECUTOR_IMAGES.get(runtime)
    hint = "pass --executor-image-uri with a prebuilt or custom training image"
    if variants is None:
        known = ", ".join(EXECUTOR_IMAGES)
        found.refuse(
            f"{TI}.runtimeVersion",
            f"runtimeVersion {runtime!r} has no Vertex AI prebuilt image (known: {known}); {hint}",
        )
        return ""
    if python in ("", "3.10"):
        name = variants.get("3.10") or variants["3.7"]
    elif python in variants:
        name = variants[python]
    else:
        found.refuse(
            f"{TI}.pythonVersion",
            f"runtimeVersion {runtime} has no Vertex AI image for Python {python}; remove pythonVersion "
            f"or {hint}",
        )
        return ""
    kind = "gpu" if gpu else "cpu"
    return f"{image_repository(ti.get('region'))}/vertex-ai/training/{name.format(kind=kind)}:latest"


HANDLED_FIELDS = frozenset(
    {
        "scaleTier",
        "masterType",
        "workerType",
        "parameterServerType",
        "evaluatorType",
        "workerCount",
        "parameterServerCount",
        "evaluatorCount",
        "masterConfig",
        "workerConfig",
        "parameterServerConfig",
        "evaluatorConfig",
        "packageUris",
        "pythonModule",
        "args",
        "jobDir",
        "region",
        "runtimeVersion",
        "pythonVersion",
        "scheduling",
        "serviceAccount",
        "network",
        "enableWebAccess",
        "encryptionConfig",
        "useChiefInTfConfig",
        "hyperparameters",
    }
)


HANDLED_REPLICA_FIELDS = frozenset(
    {"acceleratorConfig", "containerArgs", "containerCommand", "diskConfig", "imageUri", "tpuTfVersion"}
)
HANDLED_SCHEDULING_FIELDS = frozenset({"maxRunningTime", "maxWaitTime", "priority"})


def refuse_unknown_fields(ti: Mapping[str, Any], found: Findings, target: str) -> None:
    """A field this module does not know would otherwise vanish: refuse it instead."""
    nested = {role.config_field: HANDLED_REPLICA_FIELDS for role in ROLES}
    nested["scheduling"] = HANDLED_SCHEDULING_FIELDS
    for key, value in ti.items():
        if key not in HANDLED_FIELDS:
            found.refuse(
                f"{TI}.{key}", f"mlsubmit cannot translate trainingInput.{key} to {target} yet; remove it"
            )
        elif key in nested:
            for inner in as_dict(value):
                if inner not in nested[key]:
                    found.refuse(
                        f"{TI}.{key}.{inner}",
                        f"mlsubmit cannot translate trainingInput.{key}.{inner} to {target} yet; remove it",
                    )
