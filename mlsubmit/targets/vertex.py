"""Pure translation of a validated ml v1 Job body (with its ``vertex:`` settings) into a Vertex AI ``CustomJob``.

Mapping (docs/vertex.md): the replicas become worker pools 0-3 (primary, workers, parameter
servers, evaluators; an empty ``{}`` keeps the positions, trailing empties are dropped) with the machines,
counts, accelerators and disks of :mod:`mlsubmit.targets.pools` (scale tiers expanded, legacy machine names
mapped to machines Vertex AI offers, K80 -> T4); Python package jobs get ``pythonPackageSpec`` on every pool with
a dated prebuilt executor image (:mod:`mlsubmit.targets.vertex_images`), custom containers get ``containerSpec
{imageUri, command, args}``; ``vertex.env`` goes to every pool's ``env``; reservations to each pool's
``machineSpec.reservationAffinity``; ``jobDir`` becomes ``baseOutputDirectory`` and still reaches the app as
``--job-dir``; ``scheduling`` becomes ``{timeout, strategy, maxWaitDuration (FLEX_START only),
restartJobOnWorkerRestart, disableRetries}``; serviceAccount, network, enableWebAccess, persistentResourceId,
tensorboard, experiment, experimentRun and enableDashboardAccess go to ``jobSpec``; the KMS key to
``encryptionSpec``. The job id becomes ``displayName`` and the label ``mlsubmit_job_id`` (lowercased, see
:func:`job_id_label`), which is how the Vertex client finds a job again.

Refused (InvalidJobError): everything :mod:`mlsubmit.targets.vertex_rules` refuses, priority, hyperparameters,
TPUs, ``useChiefInTfConfig: false`` (Vertex always says ``chief``), unknown fields. Warned: tier expansion, legacy
machine names, K80 GPUs, a primary that TF_CONFIG will call ``chief`` where the legacy service said ``master``,
disableRetries with restartJobOnWorkerRestart.

:func:`custom_job_spec` returns the ``jobSpec`` alone, for other translations that embed a CustomJobSpec
(a HyperparameterTuningJob's ``trialJobSpec``).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date
from typing import Any

from mlsubmit.job.hints import format_path
from mlsubmit.job.vertex_flags import JOB_SPEC_FIELDS
from mlsubmit.job.vocab import JOB_ID_LABEL, job_id_label, primary_task_name
from mlsubmit.targets.pools import (
    TI,
    Findings,
    Pool,
    app_args,
    as_dict,
    executor_image,
    expand_pools,
    refuse_image_override,
    refuse_unknown_fields,
    refuse_unsupported,
    vertex_block,
)
from mlsubmit.targets.trainer_image import builds_image, has_package, pool_run
from mlsubmit.targets.vertex_images import today
from mlsubmit.targets.vertex_rules import check_vertex

POOL_KEYS = {
    "master": "master",
    "worker": "worker",
    "parameter_server": "parameterServer",
    "evaluator": "evaluator",
}

MAX_LABELS = 64


def _tf_config_naming(ti: Mapping[str, Any], pools: list[Pool], found: Findings) -> None:
    """Vertex always names the primary ``chief`` in TF_CONFIG; the legacy service said ``master`` for custom
    containers (unless useChiefInTfConfig) and for runtimes before 2.1 (docs/vertex.md)."""
    if ti.get("useChiefInTfConfig") is False:
        found.refuse(
            f"{TI}.useChiefInTfConfig",
            "Vertex AI always names the primary `chief` in TF_CONFIG; remove useChiefInTfConfig: false and "
            "let the trainer accept `chief`",
        )
        return
    if len(pools) > 1 and primary_task_name(ti) == "master":
        found.warn(
            "on Vertex AI the primary replica appears as `chief` in TF_CONFIG (the legacy service said "
            "`master` for this job); make sure the trainer accepts `chief`"
        )


def _labels(job_body: Mapping[str, Any], found: Findings) -> dict[str, str]:
    job_id = str(job_body["jobId"])
    labels = {str(k): str(v) for k, v in as_dict(job_body.get("labels")).items()}
    if JOB_ID_LABEL in labels and labels[JOB_ID_LABEL] != job_id_label(job_id):
        found.refuse(
            f"$.labels.{JOB_ID_LABEL}",
            f"label {JOB_ID_LABEL} is reserved: mlsubmit sets it to the job id; remove it",
        )
    labels[JOB_ID_LABEL] = job_id_label(job_id)
    if len(labels) > MAX_LABELS:
        found.refuse(
            "$.labels", f"Vertex AI allows {MAX_LABELS} labels and mlsubmit adds {JOB_ID_LABEL}; remove one"
        )
    return labels


def _pool_spec(
    pool: Pool,
    ti: Mapping[str, Any],
    vertex: Mapping[str, Any],
    found: Findings,
    override: str | None,
    on: date,
    built_image: str | None,
) -> dict[str, Any]:
    machine: dict[str, Any] = {"machineType": pool.machine_type}
    if pool.accelerator:
        machine["acceleratorType"] = pool.accelerator[0]
        machine["acceleratorCount"] = pool.accelerator[1]
    affinity = as_dict(vertex.get("poolReservationAffinity")).get(POOL_KEYS[pool.role]) or vertex.get(
        "reservationAffinity"
    )
    if affinity:
        machine["reservationAffinity"] = dict(affinity)
    env = [{"name": str(k), "value": str(v)} for k, v in as_dict(vertex.get("env")).items()]
    spec: dict[str, Any] = {"machineSpec": machine, "replicaCount": str(pool.count)}
    if pool.disk:
        spec["diskSpec"] = dict(pool.disk)
    run = pool_run(pool.image, ti, vertex, built_image)
    if run.kind != "package":
        container: dict[str, Any] = {"imageUri": run.image}
        if pool.command is not None and run.kind == "container":
            container["command"] = pool.command  # a built image's entrypoint runs the module
        args = app_args(ti, pool.container_args)
        if args:
            container["args"] = args
        if env:
            container["env"] = env
        spec["containerSpec"] = container
    else:
        package: dict[str, Any] = {
            "executorImageUri": executor_image(
                ti, pool.gpus > 0, found, run.image or override, vertex=vertex, on=on
            ),
            "packageUris": list(ti.get("packageUris") or []),
            "pythonModule": ti.get("pythonModule"),
        }
        args = app_args(ti)
        if args:
            package["args"] = args
        if env:
            package["env"] = env
        spec["pythonPackageSpec"] = package
    return spec


def _scheduling(ti: Mapping[str, Any], found: Findings) -> dict[str, Any]:
    sched = as_dict(ti.get("scheduling"))
    out: dict[str, Any] = {}
    if sched.get("maxRunningTime"):
        out["timeout"] = sched["maxRunningTime"]
    if sched.get("strategy"):
        out["strategy"] = sched["strategy"]
    if sched.get("strategy") == "FLEX_START" and sched.get("maxWaitTime"):
        out["maxWaitDuration"] = sched["maxWaitTime"]
    for key in ("restartJobOnWorkerRestart", "disableRetries"):
        if key in sched:
            out[key] = bool(sched[key])
    if sched.get("disableRetries") and sched.get("restartJobOnWorkerRestart"):
        found.warn(
            "disableRetries turns restartJobOnWorkerRestart off on Vertex AI (aiplatform v1 Scheduling); "
            "drop one of --disable-retries / --restart-job-on-worker-restart"
        )
    return out


def custom_job_spec(
    job_body: Mapping[str, Any],
    found: Findings,
    *,
    executor_image_uri: str | None = None,
    on: date | None = None,
    tuning: bool = False,
    built_image: str | None = None,
    checked: bool = False,
) -> dict[str, Any]:
    """The Vertex AI ``CustomJobSpec`` of a validated job; refusals and warnings go to ``found``.

    Reusable by translations that embed a CustomJobSpec (``trialJobSpec`` of a tuning job): it runs every Vertex
    rule and translation step except labels, displayName and encryptionSpec, which belong to the outer resource.
    ``tuning=True``: ``trainingInput.hyperparameters`` is the caller's to translate, so it is not refused here.
    ``built_image``: the image ``--build-image`` made (``REPOSITORY@sha256:...``; a dry run passes its tag),
    which every pool of a package job runs (:mod:`mlsubmit.targets.trainer_image`).
    ``checked=True``: :func:`~mlsubmit.targets.vertex_rules.check_vertex` already ran on this very body (the
    plan's validation), so it does not run twice.
    """
    on = on or today()
    ti: dict[str, Any] = as_dict(job_body.get("trainingInput"))
    vertex = vertex_block(job_body)
    if executor_image_uri:  # the flag stands for vertex.executorImageUri
        vertex = {**vertex, "executorImageUri": executor_image_uri}
    if not checked:
        for path, message in check_vertex({**job_body, "vertex": vertex}, True, on=on):
            found.refuse(format_path(path), message)
    refuse_unknown_fields(ti, found, "Vertex AI")
    refuse_unsupported(ti, found, "Vertex AI", tuning=tuning)
    pools = expand_pools(ti, found)
    _tf_config_naming(ti, pools, found)
    refuse_image_override(pools, executor_image_uri, found)
    if builds_image(vertex) and has_package(ti) and not built_image:
        found.refuse(
            "$.vertex.buildImage",
            "buildImage: this command builds no image; use `mlsubmit training` or `mlsubmit export`, which build it",
        )
    specs: list[dict[str, Any]] = []
    for pool in pools:
        while len(specs) < pool.index:
            specs.append({})  # an empty pool keeps the positions of the later ones
        specs.append(_pool_spec(pool, ti, vertex, found, executor_image_uri, on, built_image))
    job_spec: dict[str, Any] = {"workerPoolSpecs": specs}
    scheduling = _scheduling(ti, found)
    if scheduling:
        job_spec["scheduling"] = scheduling
    if ti.get("jobDir"):
        job_spec["baseOutputDirectory"] = {"outputUriPrefix": ti["jobDir"]}
    for key in ("serviceAccount", "network"):
        if ti.get(key):
            job_spec[key] = ti[key]
    if ti.get("enableWebAccess"):
        job_spec["enableWebAccess"] = True
    for key in JOB_SPEC_FIELDS:
        if vertex.get(key):
            job_spec[key] = vertex[key]
    if vertex.get("enableDashboardAccess"):
        job_spec["enableDashboardAccess"] = True
    return job_spec


def to_custom_job(
    job_body: dict[str, Any],
    *,
    executor_image_uri: str | None = None,
    on: date | None = None,
    tuning: bool = False,
    built_image: str | None = None,
    checked: bool = False,
) -> tuple[dict[str, Any], list[str]]:
    """The Vertex AI CustomJob body for a validated ml v1 Job body, and the warnings to show the user.

    Raises InvalidJobError listing everything Vertex AI cannot express. The job id becomes ``displayName`` and
    the ``mlsubmit_job_id`` label; the region is not part of the body (it is the ``parent`` location). ``on`` is
    the day the executor images' end of availability is checked against (default: today). ``tuning=True``:
    the caller translates ``trainingInput.hyperparameters``; ``checked=True``: Vertex AI's rules already ran
    (see :func:`custom_job_spec`).
    """
    found = Findings()
    labels = _labels(job_body, found)
    job_spec = custom_job_spec(
        job_body,
        found,
        executor_image_uri=executor_image_uri,
        on=on,
        tuning=tuning,
        built_image=built_image,
        checked=checked,
    )
    body: dict[str, Any] = {"displayName": str(job_body["jobId"]), "labels": labels, "jobSpec": job_spec}
    kms = as_dict(as_dict(job_body.get("trainingInput")).get("encryptionConfig")).get("kmsKeyName")
    if kms:
        body["encryptionSpec"] = {"kmsKeyName": kms}
    found.raise_if_any()
    return body, found.warnings
