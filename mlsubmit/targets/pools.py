"""What the ml v1 job's replicas become on today's engines, shared by vertex.py and tfjob.py.

The legacy service chose machines itself for the predefined scale tiers, knew legacy machine names and ran a
runtime version; Vertex AI and Kubernetes want explicit replica pools and an image. This module makes those
choices from the dated tables of :mod:`mlsubmit.targets.vertex_tables` (tiers, legacy names) and
:mod:`mlsubmit.targets.vertex_images` (prebuilt executor images), and collects what the target cannot express
as a refusal (InvalidJobError, exit 2) or an explicit warning — nothing is silently dropped: every
``trainingInput`` field is translated or refused (tests/unit/targets/test_vertex.py checks this against the
ml.v1 discovery schema). docs/vertex.md shows the tables.

K80 GPUs (end of support, aiplatform v1 enum description) become T4s with a warning, whether they come from a
legacy machine name, a tier or an explicit ``acceleratorConfig``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from mlsubmit.errors import InvalidJobError, Problem
from mlsubmit.job.values import int64_value
from mlsubmit.job.vocab import LEGACY_TPU_MACHINE, MASTER, ROLES, T4, scale_tier
from mlsubmit.targets.vertex_images import choose_executor_image, today
from mlsubmit.targets.vertex_tables import K80, K80_COUNTS, VERTEX_LEGACY_MACHINES, VERTEX_TIER_POOLS

TI = "$.trainingInput"


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


def refuse_unsupported(ti: Mapping[str, Any], found: Findings, target: str, *, tuning: bool = False) -> None:
    """Refuse what neither Vertex AI nor a TFJob can express: priority, tuning (unless ``tuning``: the caller
    translates ``hyperparameters`` itself), TPUs."""
    sched = as_dict(ti.get("scheduling"))
    if "priority" in sched:
        found.refuse(
            f"{TI}.scheduling.priority", f"{target} has no per-job priority; remove scheduling.priority"
        )
    if ti.get("hyperparameters") and not tuning:
        found.refuse(
            f"{TI}.hyperparameters",
            f"hyperparameter tuning is not translated to {target} yet; remove trainingInput.hyperparameters "
            "(run trials as separate jobs)",
        )
    if scale_tier(ti) == "BASIC_TPU":
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
    if machine in VERTEX_LEGACY_MACHINES:
        compute, acc = VERTEX_LEGACY_MACHINES[machine]
        extra = f" + {acc[1]} {acc[0]}" if acc else ""
        k80s = K80_COUNTS.get(machine)
        retired = (
            f" (its {k80s} NVIDIA_TESLA_K80 have reached end of support; T4s replace them)" if k80s else ""
        )
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
    preset = VERTEX_TIER_POOLS.get(tier)
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
        if accelerator and accelerator[0] == K80:
            accelerator = (T4, accelerator[1])
            found.warn(
                f"{config_key}: NVIDIA_TESLA_K80 has reached end of support on Google Cloud (aiplatform v1); "
                f"it runs as NVIDIA_TESLA_T4 (set acceleratorConfig.type to choose another GPU)"
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


def vertex_block(job_body: Mapping[str, Any]) -> dict[str, Any]:
    """The job's ``vertex:`` settings (docs/vertex.md); empty when it has none."""
    return as_dict(job_body.get("vertex"))


def executor_image(
    ti: Mapping[str, Any],
    gpu: bool,
    found: Findings,
    override: str | None = None,
    *,
    vertex: Mapping[str, Any] | None = None,
    on: date | None = None,
    dated: bool = True,
) -> str:
    """The executor image of a Python package pool (docs/vertex.md: executor images), dated.
    ``dated=False`` (a cluster, not Vertex AI): an image past its end of availability is named with a warning."""
    choice = choose_executor_image(ti, vertex or {}, gpu, on or today(), override)
    if choice.problem and choice.uri and not dated:
        found.warn(
            f"{choice.problem[1].split(': Vertex AI no longer runs it')[0]}; Vertex AI no longer runs it, a "
            "cluster still can while the registry serves it: pass --build-image to build the trainer on a "
            "public image instead"
        )
    elif choice.problem:
        found.refuse(*choice.problem)
    if choice.warning:
        found.warn(choice.warning)
    return choice.uri


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
# ml v1 Scheduling, plus the aiplatform v1 Scheduling fields a config may set for Vertex AI.
HANDLED_SCHEDULING_FIELDS = frozenset(
    {"maxRunningTime", "maxWaitTime", "priority", "strategy", "restartJobOnWorkerRestart", "disableRetries"}
)


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
