"""What an ml v1 job's replicas become on Vertex AI and Kubernetes: explicit pools and an image from the dated
tables (docs/vertex.md); every ``trainingInput`` field is translated or refused, never dropped."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from mlsubmit.errors import InvalidJobError, Problem
from mlsubmit.job.values import int64_value
from mlsubmit.job.vocab import LEGACY_TPU_MACHINE, MASTER, ROLE_BY_KEY, ROLES, T4, replica_counts, scale_tier
from mlsubmit.job.vocab import as_dict as as_dict  # the callers of pools read it here
from mlsubmit.targets.trainer_image import builds_image, has_package, is_prebuilt
from mlsubmit.targets.vertex_images import choose_executor_image, today
from mlsubmit.targets.vertex_tables import K80, K80_COUNTS, VERTEX_LEGACY_MACHINES, VERTEX_TIER_POOLS

TI = "$.trainingInput"


@dataclass(frozen=True)
class Pool:
    """One replica role of the job, expanded: explicit machine, count and accelerator, and what it runs."""

    role: str  # a vocab.Role key
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


def env_list(vertex: Mapping[str, Any]) -> list[dict[str, str]]:
    """``vertex.env`` as the ``[{name, value}]`` list every container takes."""
    return [{"name": str(k), "value": str(v)} for k, v in as_dict(vertex.get("env")).items()]


def refuse_unsupported(ti: Mapping[str, Any], found: Findings, target: str, *, tuning: bool = False) -> None:
    """Refuse what neither Vertex AI nor a TFJob can express: priority, TPUs, a study unless ``tuning``."""
    sched, hp = as_dict(ti.get("scheduling")), as_dict(ti.get("hyperparameters"))
    if "priority" in sched:
        found.refuse(
            f"{TI}.scheduling.priority", f"{target} has no per-job priority; remove scheduling.priority"
        )
    if hp and not tuning:
        found.refuse(
            f"{TI}.hyperparameters",
            f"hyperparameter tuning is not translated to {target} yet; remove trainingInput.hyperparameters "
            "(run trials as separate jobs)",
        )
    if tuning and not hp:
        found.refuse(TI, "a tuning job needs a hyperparameters block")
    if tuning and hp.get("resumePreviousJobId"):
        found.refuse(
            f"{TI}.hyperparameters.resumePreviousJobId",
            "Vertex AI has no equivalent of resumePreviousJobId (a study cannot continue another job's "
            "trials); remove it, or continue the study locally with `mlsubmit local tune --resume`",
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


def expand_pools(ti: Mapping[str, Any], found: Findings, target: str = "Vertex AI") -> list[Pool]:
    """The job's replica roles with explicit machines and counts (scale tiers expanded, legacy names mapped, a
    role's own acceleratorConfig first); other roles take the master's image, command and args unless set."""
    tier = scale_tier(ti)
    master_cfg = as_dict(ti.get("masterConfig"))
    pools: list[Pool] = []
    if preset := VERTEX_TIER_POOLS.get(tier):
        shown = "; ".join(
            f"{n} x {m}" + (f" + {a[1]} {a[0]}" if a else "") + f" ({role.replace('_', ' ')})"
            for role, (n, m, a) in preset.items()
        )
        found.warn(f"scaleTier {tier} expanded to explicit pools: {shown}")
    elif tier != "CUSTOM":
        return pools  # BASIC_TPU: refused by refuse_unsupported
    for key, count in replica_counts(ti).items():
        role = ROLE_BY_KEY[key]
        cfg = as_dict(ti.get(role.config_field))
        if preset:
            _n, machine, accelerator = preset[key]
        elif (written := str(ti.get(role.type_field) or "")) in VERTEX_LEGACY_MACHINES:
            machine, accelerator = VERTEX_LEGACY_MACHINES[written]
            extra = f" + {accelerator[1]} {accelerator[0]}" if accelerator else ""
            k80s = K80_COUNTS.get(written)
            retired = f" (its {k80s} NVIDIA_TESLA_K80 have reached end of support; T4s replace them)"
            found.warn(f"legacy machine type {written} runs as {machine}{extra}{retired if k80s else ''}")
        else:
            machine, accelerator = written, None
        if machine == LEGACY_TPU_MACHINE:
            found.refuse(
                f"{TI}.{role.type_field}",
                f"machine type cloud_tpu (a legacy TPU worker) has no {target} equivalent",
            )
        acc_cfg = as_dict(cfg.get("acceleratorConfig"))
        if acc_cfg.get("type"):
            accelerator = (str(acc_cfg["type"]), int64_value(acc_cfg.get("count")) or 0)
        if accelerator and accelerator[0].startswith("TPU_"):
            found.refuse(
                f"{TI}.{role.config_field}.acceleratorConfig.type",
                f"TPU accelerators ({accelerator[0]}) are not translated to {target}; use GPUs",
            )
        if accelerator and accelerator[0] == K80:
            accelerator = (T4, accelerator[1])
            found.warn(
                f"{role.config_field}: NVIDIA_TESLA_K80 has reached end of support on Google Cloud (aiplatform "
                "v1); it runs as NVIDIA_TESLA_T4 (set acceleratorConfig.type to choose another GPU)"
            )
        own = cfg.get("imageUri") or "containerCommand" in cfg or "containerArgs" in cfg
        source = cfg if role.key == MASTER.key or own else master_cfg
        command, cargs = (
            None if v is None else list(v)
            for v in (source.get("containerCommand"), source.get("containerArgs"))
        )
        disk_fields = ("bootDiskType", "bootDiskSizeGb")
        disk = {k: v for k, v in as_dict(cfg.get("diskConfig")).items() if k in disk_fields}
        image = cfg.get("imageUri") or master_cfg.get("imageUri")
        pools.append(Pool(role.key, role.pool, count, machine, accelerator, disk, image, command, cargs))
    return pools


def app_args(ti: Mapping[str, Any], container_args: list[str] | None = None) -> list[str]:
    """The app's arguments: containerArgs or ``args``, then ``--job-dir JOB_DIR`` as the service passed it."""
    args = list(container_args if container_args is not None else ti.get("args") or [])
    job_dir = ti.get("jobDir")
    given = any(a == "--job-dir" or str(a).startswith("--job-dir=") for a in args)
    if job_dir and not given:
        args += ["--job-dir", str(job_dir)]
    return args


def program(
    pool: Pool, ti: Mapping[str, Any], vertex: Mapping[str, Any], built_image: str | None
) -> tuple[bool, str, list[str] | None, list[str]]:
    """What a pool runs (:mod:`~mlsubmit.targets.trainer_image`): whether a package, in which image
    ('' for the runtime's or framework's dated choice), the container's command and the app's arguments."""
    package = has_package(ti)
    if package and builds_image(vertex) and built_image:  # the built image's entrypoint runs the module
        return False, built_image, None, app_args(ti, pool.container_args)
    # another image with a package is refused by image_problem; kept as a container so the translation goes on
    if pool.image and not (package and is_prebuilt(pool.image)):
        return False, pool.image, pool.command, app_args(ti, pool.container_args)
    return True, pool.image or "", None, app_args(ti)


def refuse_image_flags(
    ti: Mapping[str, Any],
    vertex: Mapping[str, Any],
    pools: list[Pool],
    override: str | None,
    built_image: str | None,
    found: Findings,
) -> None:
    """Refuse ``--executor-image-uri`` on a container job and ``buildImage`` where nothing is built."""
    if override and pools and pools[0].image:
        found.refuse(
            f"{TI}.masterConfig.imageUri",
            "--executor-image-uri applies to Python package jobs, but this job runs a custom container; "
            "drop the flag",
        )
    if builds_image(vertex) and has_package(ti) and not built_image:
        found.refuse(
            "$.vertex.buildImage",
            "buildImage: this command builds no image; use `mlsubmit training` or `mlsubmit export`, which build it",
        )


def executor_image(
    ti: Mapping[str, Any],
    gpu: bool,
    found: Findings,
    override: str | None = None,
    *,
    vertex: Mapping[str, Any],
    on: date | None = None,
    dated: bool = True,
) -> str:
    """The executor image of a Python package pool (docs/vertex.md: executor images), dated.
    ``dated=False`` (a cluster, not Vertex AI): an image past its end of availability is named with a warning."""
    choice = choose_executor_image(ti, vertex, gpu, on or today(), override)
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


# Every field of ml v1 TrainingInput, ReplicaConfig and Scheduling (plus the aiplatform v1 Scheduling fields a
# config may set for Vertex AI) that the translations handle; any other is refused, never dropped.
HANDLED_FIELDS = frozenset(
    {f for r in ROLES for f in (r.type_field, r.config_field, r.count_field) if f}
    | {"scaleTier", "packageUris", "pythonModule", "args", "jobDir", "region", "runtimeVersion"}
    | {"pythonVersion", "scheduling", "serviceAccount", "network", "enableWebAccess", "encryptionConfig"}
    | {"useChiefInTfConfig", "hyperparameters"}
)
HANDLED_REPLICA_FIELDS = frozenset(
    {"acceleratorConfig", "containerArgs", "containerCommand", "diskConfig", "imageUri", "tpuTfVersion"}
)
HANDLED_SCHEDULING_FIELDS = frozenset(
    {"maxRunningTime", "maxWaitTime", "priority", "strategy", "restartJobOnWorkerRestart", "disableRetries"}
)


def refuse_unknown_fields(ti: Mapping[str, Any], found: Findings, target: str) -> None:
    """A field this module does not know would otherwise vanish: refuse it instead."""
    nested = {role.config_field: HANDLED_REPLICA_FIELDS for role in ROLES}
    nested["scheduling"] = HANDLED_SCHEDULING_FIELDS
    for key, value in ti.items():
        allowed = nested.get(key, ())
        inner = [f"{key}.{k}" for k in as_dict(value) if allowed and k not in allowed]
        for name in inner if key in HANDLED_FIELDS else [key]:
            found.refuse(
                f"{TI}.{name}", f"mlsubmit cannot translate trainingInput.{name} to {target} yet; remove it"
            )
