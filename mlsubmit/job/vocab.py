"""The one copy of the words several domains share: replica roles, targets and choices, scale tiers and legacy
machines, Cloud Storage URLs, the project lookup and the job-id label (values that reach URLs:
:mod:`mlsubmit.job.values`). Pure: no I/O."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mlsubmit.errors import UsageError
from mlsubmit.job.values import int64_value


@dataclass(frozen=True)
class Role:
    """One replica role of an ml v1 job, in every spelling mlsubmit needs. ``task``: the TF_CONFIG name (the
    primary's is decided per job by :func:`primary_task_name`); ``pool``: the Vertex AI worker pool position."""

    key: str  # "master" | "worker" | "parameter_server" | "evaluator"
    type_field: str
    count_field: str | None  # None for the master: always exactly one
    config_field: str
    flag: str  # flag spelling of the role: --{flag}-machine-type, --{flag}-image-uri, ...
    task: str
    plural: str  # for messages: "the {plural}"
    pool: int
    has_type_flag: bool = True

    @property
    def type_flag(self) -> str | None:
        """``--worker-machine-type``; None for evaluators (file only)."""
        return f"--{self.flag}-machine-type" if self.has_type_flag else None


MASTER = Role("master", "masterType", None, "masterConfig", "master", "chief", "master", 0)
WORKER = Role("worker", "workerType", "workerCount", "workerConfig", "worker", "worker", "workers", 1)
PARAMETER_SERVER = Role(
    "parameter_server",
    "parameterServerType",
    "parameterServerCount",
    "parameterServerConfig",
    "parameter-server",
    "ps",
    "parameter servers",
    2,
)
EVALUATOR = Role(
    "evaluator", "evaluatorType", "evaluatorCount", "evaluatorConfig", "evaluator", "evaluator", "evaluators", 3,
    has_type_flag=False,
)  # fmt: skip
ROLES: tuple[Role, ...] = (MASTER, WORKER, PARAMETER_SERVER, EVALUATOR)
ROLE_BY_KEY: dict[str, Role] = {r.key: r for r in ROLES}
COUNT_FIELDS: tuple[str, ...] = tuple(r.count_field for r in ROLES if r.count_field)
PRIMARY_TASKS = ("chief", "master")


def runtime_tuple(version: Any) -> tuple[int, int] | None:
    """``"2.11"`` -> (2, 11); None when ``version`` is not MAJOR.MINOR."""
    m = re.fullmatch(r"([0-9]{1,4})\.([0-9]{1,4})", version) if isinstance(version, str) else None
    return (int(m.group(1)), int(m.group(2))) if m else None


def primary_task_name(training_input: Mapping[str, Any]) -> str:
    """``"master"`` for custom containers (unless ``useChiefInTfConfig``) and runtimes before 2.1, else
    ``"chief"``: the ml v1 service's TF_CONFIG name of the primary ("TF_CONFIG" in
    https://cloud.google.com/ai-platform/training/docs/distributed-training-details; ``useChiefInTfConfig`` in
    https://cloud.google.com/ai-platform/training/docs/reference/rest/v1/projects.jobs#TrainingInput)."""
    if as_dict(training_input.get("masterConfig")).get("imageUri"):
        return "chief" if training_input.get("useChiefInTfConfig") is True else "master"
    runtime = runtime_tuple(training_input.get("runtimeVersion"))
    return "master" if runtime is not None and runtime < (2, 1) else "chief"


# Where a job goes and how it is built. Each list is written here once: the click choices (cli/options.py,
# cli/job_options.py) are these tuples, and tests/unit/job/test_vocab.py holds job.schema.json's enums equal to them.

# --target values: ml = AI Platform Training (ml v1), vertex = Vertex AI (docs/vertex.md), kubernetes = a TFJob on
# a cluster (docs/kubernetes.md). ml stays the default so that gcloud's command lines mean what they meant.
TARGETS = ("ml", "vertex", "kubernetes")
DEFAULT_TARGET = "ml"
TARGET_ENV = "MLSUBMIT_TARGET"  # the default target a user or CI sets once
# AI Platform Training stopped running jobs on this day (https://cloud.google.com/ai-platform/training/docs).
ML_SHUT_DOWN = "2025-01-31"
ML_NOTICE = (
    f"NOTICE: --target ml is AI Platform Training, which stopped running jobs on {ML_SHUT_DOWN}; --target vertex "
    f"runs the same job on Vertex AI. Set {TARGET_ENV}=vertex to make that the default ({TARGET_ENV}=ml keeps "
    "ml and silences this notice)."
)
# What `export --format` prints: a Vertex AI CustomJob or HyperparameterTuningJob body, or a Kubeflow TFJob.
EXPORT_FORMATS = ("customjob", "hptuningjob", "tfjob")
# Frameworks of Vertex AI's prebuilt training images (vertex.framework, --framework), spelled as Vertex AI does
# (https://cloud.google.com/vertex-ai/docs/training/pre-built-containers).
FRAMEWORKS = ("tensorflow", "pytorch", "scikit-learn", "xgboost")
# aiplatform v1 Scheduling.strategy (revision 20261106; ON_DEMAND and LOW_COST are deprecated there).
# --scheduling-strategy takes them in flag spelling: standard, spot, flex-start.
SCHEDULING_STRATEGIES = ("STANDARD", "SPOT", "FLEX_START")
# aiplatform v1 ReservationAffinity.reservationAffinityType (revision 20261106), by the --reservation-affinity
# value that asks for it.
RESERVATION_AFFINITIES = {kind: f"{kind.upper()}_RESERVATION" for kind in ("any", "no", "specific")}
# Local engines that build and run images, and --builder's choices (auto: the first engine that answers, else
# Cloud Build; docs/containers.md).
ENGINES = ("docker", "podman", "buildah")
BUILDERS = ("auto", "cloud-build", *ENGINES)
# --staging-layout: shared content-addressed packages, or one folder per job as gcloud stages them.
STAGING_LAYOUTS = ("shared", "gcloud")


def as_dict(value: Any) -> dict[str, Any]:
    """``value`` when it is a dict, else an empty one (optional sub-objects of a body)."""
    return value if isinstance(value, dict) else {}


def flag_spelling(value: str) -> str:
    """``FLEX_START`` -> ``flex-start``: an API enum value as a flag takes it (and gcloud lists it)."""
    return value.lower().replace("_", "-")


def enum_spelling(value: str) -> str:
    """``flex-start`` / ``FLEX_START`` / ``Flex-Start`` -> ``FLEX_START``: a flag's value as the API spells it."""
    return value.strip().upper().replace("-", "_")


Accelerator = tuple[str, int]  # (type, count per replica)
T4, P100, V100 = "NVIDIA_TESLA_T4", "NVIDIA_TESLA_P100", "NVIDIA_TESLA_V100"
# Legacy AI Platform machine name -> (closest Compute Engine type, the GPUs it implied). The K80s of the *_gpu
# types are retired, so they map to T4s. cloud_tpu (a TPU worker) has no equivalent and is listed apart.
LEGACY_MACHINE_TYPES: dict[str, tuple[str, Accelerator | None]] = {
    "standard": ("n1-standard-4", None),
    "large_model": ("n1-highmem-8", None),
    "complex_model_s": ("n1-highcpu-8", None),
    "complex_model_m": ("n1-highcpu-16", None),
    "complex_model_l": ("n1-highcpu-32", None),
    "standard_gpu": ("n1-standard-8", (T4, 1)),
    "complex_model_m_gpu": ("n1-standard-16", (T4, 4)),
    "complex_model_l_gpu": ("n1-standard-32", (T4, 8)),
    "standard_p100": ("n1-standard-8", (P100, 1)),
    "complex_model_m_p100": ("n1-standard-16", (P100, 4)),
    "standard_v100": ("n1-standard-8", (V100, 1)),
    "large_model_v100": ("n1-highmem-8", (V100, 1)),
    "complex_model_m_v100": ("n1-standard-16", (V100, 4)),
    "complex_model_l_v100": ("n1-standard-32", (V100, 8)),
}
LEGACY_TPU_MACHINE = "cloud_tpu"
LEGACY_MACHINES = frozenset({*LEGACY_MACHINE_TYPES, LEGACY_TPU_MACHINE})
COMPUTE_MACHINE = re.compile(r"[a-z][a-z0-9]*-[a-z0-9-]+")  # n1-standard-4; match whole values (fullmatch)


SCALE_TIERS = ("BASIC", "STANDARD_1", "PREMIUM_1", "BASIC_GPU", "BASIC_TPU", "CUSTOM")
# Predefined tier -> role key -> (replicas, Compute Engine machine, accelerator). The counts are the service's
# (https://cloud.google.com/ai-platform/training/docs/machine-types#scale_tiers); the machines are the closest
# Compute Engine types. CUSTOM takes the job's own fields; BASIC_TPU has no equivalent off the legacy service.
TIER_POOLS: dict[str, dict[str, tuple[int, str, Accelerator | None]]] = {
    "BASIC": {"master": (1, "n1-standard-4", None)},
    "BASIC_GPU": {"master": (1, "n1-standard-8", (T4, 1))},
    "STANDARD_1": {
        "master": (1, "n1-highcpu-8", None),
        "worker": (4, "n1-highcpu-8", None),
        "parameter_server": (3, "n1-standard-4", None),
    },
    "PREMIUM_1": {
        "master": (1, "n1-highcpu-16", None),
        "worker": (19, "n1-highcpu-16", None),
        "parameter_server": (11, "n1-highmem-8", None),
    },
}


def scale_tier(training_input: Mapping[str, Any]) -> str:
    """The job's tier in enum spelling; BASIC when unset (the service's default)."""
    tier = training_input.get("scaleTier")
    return tier.upper() if isinstance(tier, str) and tier else "BASIC"


def replica_counts(training_input: Mapping[str, Any]) -> dict[str, int]:
    """Replicas per role key after the scale tier is expanded (STANDARD_1: master 1, worker 4, ps 3); CUSTOM reads
    ``*Count``, BASIC_TPU runs its master; roles with no replicas are left out."""
    tier = scale_tier(training_input)
    if tier in TIER_POOLS:
        return {role: count for role, (count, _m, _a) in TIER_POOLS[tier].items()}
    counts = {r.key: int64_value(training_input.get(r.count_field)) or 0 for r in ROLES if r.count_field}
    return {MASTER.key: 1, **{key: n for key, n in counts.items() if n > 0 and tier == "CUSTOM"}}


GCS_SCHEME = "gs://"
# Bucket names: https://cloud.google.com/storage/docs/buckets#naming (dots allowed up to 222 characters).
_BUCKET = re.compile(r"[a-z0-9][a-z0-9._-]{1,220}[a-z0-9]")
_IPV4 = re.compile(r"[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+")


def bucket_problem(bucket: str) -> str | None:
    """Why a Cloud Storage bucket name is invalid, or None."""
    if not _BUCKET.fullmatch(bucket) or ".." in bucket:
        return (
            f"bucket name {bucket!r} is invalid: use 3-63 lowercase letters, digits, '-', '_' or '.', "
            "starting and ending with a letter or digit"
        )
    if "." not in bucket and len(bucket) > 63:
        return f"bucket name {bucket!r} is longer than 63 characters"
    if bucket.startswith("goog") or "google" in bucket or _IPV4.fullmatch(bucket):
        return f"bucket name {bucket!r} is not allowed (no 'goog' prefix, 'google' or IP address)"
    return None


def gcs_url_problem(url: str, what: str) -> str | None:
    """Why ``url`` is not a usable ``gs://BUCKET[/PATH]`` (``what`` names it in the message), or None."""
    if not url.startswith(GCS_SCHEME):
        return f"{what} must be a Cloud Storage URL gs://BUCKET/PATH, not {url!r}"
    bucket = url[len(GCS_SCHEME) :].split("/", 1)[0]
    if not bucket:
        return f"{what} {url!r} has no bucket name"
    if any(c in url for c in "\r\n\0"):
        return f"{what} {url!r} contains a line break or NUL character"
    return bucket_problem(bucket)


def split_gcs_uri(uri: str) -> tuple[str, str]:
    """Split `gs://BUCKET/OBJECT` into (BUCKET, OBJECT); OBJECT may be empty. UsageError when it is not one."""
    shown = uri if uri.isprintable() and len(uri) <= 300 else repr(uri[:80])  # one line, whatever was given
    if not uri.startswith(GCS_SCHEME):
        raise UsageError(f"{shown} is not a Cloud Storage URL; expected gs://BUCKET/PATH")
    bucket, _, name = uri[len(GCS_SCHEME) :].partition("/")
    if problem := gcs_url_problem(uri, "Cloud Storage URL"):
        invalid = f"bucket name {bucket!r} is invalid"
        raise UsageError(f"{shown}: {problem.replace(invalid, f'{bucket!r} is not a valid bucket name')}")
    return bucket, name


def staging_prefix(staging_bucket: str | None, job_id: str, job_dir: str | None) -> str | None:
    """The folder packages are staged under: `gs://BUCKET/JOB/`, else `JOB_DIR/packages/`, else None (both
    given: the bucket wins, as in gcloud's jobs_prep.GetStagingLocation)."""
    if staging_bucket:
        bucket, name = split_gcs_uri(staging_bucket)
        if name.strip("/"):
            raise UsageError(
                f"--staging-bucket {staging_bucket}: give a bucket only (gs://{bucket}); "
                "to stage under a folder, use --job-dir instead"
            )
        return f"{GCS_SCHEME}{bucket}/{job_id}/"
    if job_dir:
        bucket, name = split_gcs_uri(job_dir)
        folder = name.strip("/")
        return f"{GCS_SCHEME}{bucket}/{folder + '/' if folder else ''}packages/"
    return None


def is_gcs(package: str | Path) -> bool:
    """Whether a --packages entry is already in Cloud Storage."""
    return isinstance(package, str) and package.startswith(GCS_SCHEME)


def project_from_flags(flag: str | None, env: Mapping[str, str]) -> str | None:
    """--project, else CLOUDSDK_CORE_PROJECT, else GOOGLE_CLOUD_PROJECT; None when none is set (ADC is asked later)."""
    return flag or env.get("CLOUDSDK_CORE_PROJECT") or env.get("GOOGLE_CLOUD_PROJECT") or None


JOB_ID_LABEL = "mlsubmit_job_id"  # underscore, not '-': list filters parse `labels.mlsubmit_job_id` plainly


def job_id_label(job_id: str) -> str:
    """The label value naming a job id: lowercased (Vertex labels are lowercase), at most 63 characters, long ids
    with a hash of the exact id. Two ids may share a label, so lookups also compare ``displayName``."""
    value = job_id.lower()
    if len(value) <= 63:
        return value
    import hashlib  # only for an id too long for a label value

    return f"{value[:54]}-{hashlib.sha256(job_id.encode()).hexdigest()[:8]}"


# Accelerator types: ml v1 AcceleratorConfig.type (ml.v1.json), and those only Vertex AI has (aiplatform v1
# MachineSpec.acceleratorType, read 2026-11-24); the ml v1 rules refuse the latter for --target ml.
ML_V1_ACCELERATORS: tuple[str, ...] = (
    *("NVIDIA_TESLA_K80", "NVIDIA_TESLA_P100", "NVIDIA_TESLA_V100", "NVIDIA_TESLA_P4", "NVIDIA_TESLA_T4"),
    *("NVIDIA_TESLA_A100", "TPU_V2", "TPU_V3", "TPU_V2_POD", "TPU_V3_POD", "TPU_V4_POD"),
)
VERTEX_ONLY_ACCELERATORS: tuple[str, ...] = (
    *("NVIDIA_A100_80GB", "NVIDIA_L4", "NVIDIA_H100_80GB", "NVIDIA_H100_MEGA_80GB", "NVIDIA_H200_141GB"),
    *("NVIDIA_B200", "NVIDIA_GB200", "NVIDIA_RTX_PRO_6000"),
)
