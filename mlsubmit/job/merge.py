"""Pure merge of config file < given flags into one ml v1 Job body, as gcloud's jobs.py BuildTrainingJob
(docs/gcloud.md): a flag replaces its trainingInput field, image/accelerator flags a leaf of ``*Config``, JOB
beats jobId, args after -- the file's; on purpose, the file's region, packageUris and enableWebAccess stay."""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from mlsubmit.job.vocab import (
    COUNT_FIELDS,
    MASTER,
    PARAMETER_SERVER,
    RESERVATION_AFFINITIES,
    WORKER,
    enum_spelling,
    flag_spelling,
)

TI = "trainingInput"

# flag (click parameter name) -> top-level trainingInput field it replaces.
TOP_LEVEL_FLAGS: dict[str, str] = {
    "module_name": "pythonModule",
    "job_dir": "jobDir",
    "scale_tier": "scaleTier",
    "runtime_version": "runtimeVersion",
    "python_version": "pythonVersion",
    "service_account": "serviceAccount",
    "enable_web_access": "enableWebAccess",
    "master_machine_type": "masterType",
    "worker_count": "workerCount",
    "worker_machine_type": "workerType",
    "parameter_server_count": "parameterServerCount",
    "parameter_server_machine_type": "parameterServerType",
    "use_chief_in_tf_config": "useChiefInTfConfig",
}


def region_of(given: Mapping[str, Any], ti: Mapping[str, Any], env: Mapping[str, str]) -> tuple[str, str]:
    """The job's region and where it comes from: --region, else the file (gcloud ignores it), else
    CLOUDSDK_COMPUTE_REGION; ``("", "")`` when none says."""
    if given.get("region"):
        return str(given["region"]), "--region"
    if ti.get("region"):
        return str(ti["region"]), "file"
    if env.get("CLOUDSDK_COMPUTE_REGION"):
        return env["CLOUDSDK_COMPUTE_REGION"], "CLOUDSDK_COMPUTE_REGION"
    return "", ""


@dataclass(frozen=True)
class Accelerator:
    """A parsed ``--*-accelerator type=T,count=N`` value (type already in enum spelling)."""

    type: str
    count: int


@dataclass(frozen=True)
class TrainingFlags:
    """What the user gave on the command line; flags left at their default are simply absent."""

    job_id: str
    given: Mapping[str, Any] = field(default_factory=dict)
    user_args: Sequence[str] | None = None  # None: no `--` on the command line


@dataclass
class MergedJob:
    """The merged Job body and, per JSON path, where each value came from (for error messages)."""

    body: dict[str, Any]
    origin: dict[str, str] = field(default_factory=dict)  # "$.trainingInput.region" -> "--region"

    def origin_of(self, path: str) -> str | None:
        """The flag or environment variable a value came from, None when it came from the file."""
        while path not in self.origin:  # $.trainingInput.packageUris[1], then its list, then trainingInput
            cut = path.rfind("[") if path.endswith("]") else path.rfind(".")
            if cut <= 0:
                return None
            path = path[:cut]
        return self.origin[path]


def kms_key_name(given: Mapping[str, Any], project: str | None) -> str | None:
    """Build ``projects/P/locations/L/keyRings/R/cryptoKeys/K`` from --kms-key and its parts, like gcloud."""
    key = str(given.get("kms_key") or "")
    if not key or key.startswith("projects/"):
        return key or None
    kms_project = given.get("kms_project") or project or "-"
    location, keyring = (given.get(f"kms_{part}") or "-" for part in ("location", "keyring"))
    return f"projects/{kms_project}/locations/{location}/keyRings/{keyring}/cryptoKeys/{key}"


def merge(
    file_job: Mapping[str, Any] | None,
    flags: TrainingFlags,
    *,
    env: Mapping[str, str],
    package_uris: Sequence[str] | None = None,
    project: str | None = None,
) -> MergedJob:
    """Merge a config file with the flags the user gave; pure and total (an object of the wrong type that a flag
    writes into is replaced). ``package_uris``: the flags' (None keeps the file's ``packageUris``)."""
    body: dict[str, Any] = copy.deepcopy(dict(file_job)) if isinstance(file_job, Mapping) else {}
    origin: dict[str, str] = {}
    given = flags.given

    def put(path: tuple[str, ...], value: Any, source: str) -> None:
        node = body
        for key in path[:-1]:
            node = _object_at(node, key)
        node[path[-1]] = value
        origin["$." + ".".join(path)] = source

    put(("jobId",), flags.job_id, "JOB argument")
    if "labels" in given:
        put(("labels",), dict(given["labels"]), "--labels")
    ti = _object_at(body, TI)
    for flag_name, field_name in TOP_LEVEL_FLAGS.items():
        if (value := given.get(flag_name)) is not None:
            put(
                (TI, field_name),
                str(value) if field_name in COUNT_FIELDS else value,
                "--" + flag_spelling(flag_name),
            )
    region, source = region_of(given, ti, env)
    if source != "file" and region:
        put((TI, "region"), region, source)
    if package_uris is not None:
        put((TI, "packageUris"), list(package_uris), "--packages/--package-path")
    if flags.user_args is not None:
        put((TI, "args"), list(flags.user_args), "arguments after --")
    for role in (MASTER, WORKER, PARAMETER_SERVER):  # image and accelerator flags edit a *Config leaf by leaf
        image, accel = given.get(f"{role.key}_image_uri"), given.get(f"{role.key}_accelerator")
        config = role.config_field
        if image is not None:
            put((TI, config, "imageUri"), image, f"--{role.flag}-image-uri")
        if isinstance(accel, Accelerator):
            acc = {"type": accel.type, "count": str(accel.count)}
            acc = {**_object_at(_object_at(ti, config), "acceleratorConfig"), **acc}
            put((TI, config, "acceleratorConfig"), acc, f"--{role.flag}-accelerator")
    if kms := kms_key_name(given, project):
        put((TI, "encryptionConfig", "kmsKeyName"), kms, "--kms-key")
    # The Vertex AI flags (docs/vertex.md): --network replaces trainingInput.network, the scheduling flags set leaves
    # of trainingInput.scheduling, the others leaves of vertex:, --env adds to the file's vertex.env.
    if given.get("network"):
        put((TI, "network"), given["network"], "--network")
    vertex_given = {k: v for k, v in given.items() if v is not None and v != ()}
    for name, path in VERTEX_FLAGS.items():
        if name in vertex_given:
            value = enum_spelling(str(given[name])) if name == "scheduling_strategy" else given[name]
            put(path, value, "--" + flag_spelling(name))
    for key, value in vertex_given.get("env", ()):
        put(("vertex", "env", key), value, "--env")
    if "reservation" in vertex_given or "reservation_affinity" in vertex_given:
        kind = str(vertex_given.get("reservation_affinity") or "specific").lower()
        affinity: dict[str, Any] = {"reservationAffinityType": RESERVATION_AFFINITIES[kind]}
        if vertex_given.get("reservation"):
            affinity.update(key=RESERVATION_NAME_KEY, values=[vertex_given["reservation"]])
        put(("vertex", "reservationAffinity"), affinity, "--reservation/--reservation-affinity")
    return MergedJob(body=body, origin=origin)


def _object_at(parent: dict[str, Any], key: str) -> dict[str, Any]:
    """``parent[key]``, made an empty object first when missing or not an object."""
    value = parent.get(key)
    if not isinstance(value, dict):
        value = parent[key] = {}
    return value


# aiplatform v1 ReservationAffinity.key for a specific reservation (revision 20261106).
RESERVATION_NAME_KEY = "compute.googleapis.com/reservation-name"
# flag (click parameter name) -> the leaf of trainingInput.scheduling or of the ``vertex:`` block it sets
# (docs/vertex.md).
VERTEX_FLAGS: dict[str, tuple[str, ...]] = {
    "scheduling_strategy": (TI, "scheduling", "strategy"),
    "restart_job_on_worker_restart": (TI, "scheduling", "restartJobOnWorkerRestart"),
    "disable_retries": (TI, "scheduling", "disableRetries"),
    "executor_image_uri": ("vertex", "executorImageUri"),
    "build_image": ("vertex", "buildImage"),
    "framework": ("vertex", "framework"),
    "framework_version": ("vertex", "frameworkVersion"),
    "persistent_resource_id": ("vertex", "persistentResourceId"),
    "tensorboard": ("vertex", "tensorboard"),
    "experiment": ("vertex", "experiment"),
    "experiment_run": ("vertex", "experimentRun"),
    "enable_dashboard_access": ("vertex", "enableDashboardAccess"),
}
# Fields of the ``vertex:`` block the CustomJob's ``jobSpec`` takes as they are (aiplatform v1 CustomJobSpec): a
# new flag of this kind is a row above, a name here and its field in job.schema.json (docs/architecture.md).
JOB_SPEC_FIELDS = ("persistentResourceId", "tensorboard", "experiment", "experimentRun")
