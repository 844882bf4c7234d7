"""Pure translation of a validated ml v1 Job body into a Vertex AI ``CustomJob`` body (issue 6).

Mapping (REFERENCE.md "Vertex AI CustomJob"): the replicas become worker pools 0-3 (primary, workers,
parameter servers, evaluators; an empty ``{}`` keeps the positions, trailing empties are dropped) with the
machines, counts, accelerators and disks of mlsubmit/replicas.py (scale tiers expanded, legacy machine names
mapped); Python package jobs get ``pythonPackageSpec`` on every pool with the prebuilt executor image of the
runtime (or ``--executor-image-uri``), custom containers get ``containerSpec {imageUri, command, args}``;
``jobDir`` becomes ``baseOutputDirectory`` and still reaches the app as ``--job-dir``; ``maxRunningTime``
becomes ``scheduling.timeout``; serviceAccount, network and enableWebAccess go to ``jobSpec``; the KMS key to
``encryptionSpec``. The job id becomes ``displayName`` and the label ``mlsubmit_job_id`` (lowercased, see
:func:`job_id_label`), which is how vertex_api finds a job again.

Refused (InvalidJobError): priority, maxWaitTime, hyperparameters, TPUs (BASIC_TPU, cloud_tpu, TPU_*),
``useChiefInTfConfig: false`` (Vertex always says ``chief``), runtimes without a prebuilt image, unknown fields.
Warned: tier expansion, legacy machine names, K80 GPUs, a primary that TF_CONFIG will call ``chief`` where the
legacy service said ``master``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mlsubmit.spec.vocab import JOB_ID_LABEL, job_id_label, primary_task_name
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
)

MAX_LABELS = 64


def _tf_config_naming(ti: Mapping[str, Any], pools: list[Pool], found: Findings) -> None:
    """Vertex always names the primary ``chief`` in TF_CONFIG; the legacy service said ``master`` for custom
    containers (unless useChiefInTfConfig) and for runtimes before 2.1 (REFERENCE.md "TF_CONFIG")."""
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


def _pool_spec(pool: Pool, ti: Mapping[str, Any], found: Findings, override: str | None) -> dict[str, Any]:
    machine: dict[str, Any] = {"machineType": pool.machine_type}
    if pool.accelerator:
        machine["acceleratorType"] = pool.accelerator[0]
        machine["acceleratorCount"] = pool.accelerator[1]
    spec: dict[str, Any] = {"machineSpec": machine, "replicaCount": str(pool.count)}
    if pool.disk:
        spec["diskSpec"] = dict(pool.disk)
    if pool.image:
        container: dict[str, Any] = {"imageUri": pool.image}
        if pool.command is not None:
            container["command"] = pool.command
        args = app_args(ti, pool.container_args)
        if args:
            container["args"] = args
        spec["containerSpec"] = container
    else:
        package: dict[str, Any] = {
            "executorImageUri": executor_image(ti, pool.gpus > 0, found, override),
            "packageUris": list(ti.get("packageUris") or []),
            "pythonModule": ti.get("pythonModule"),
        }
        args = app_args(ti)
        if args:
            package["args"] = args
        spec["pythonPackageSpec"] = package
    return spec


def to_custom_job(
    job_body: dict[str, Any], *, executor_image_uri: str | None = None
) -> tuple[dict[str, Any], list[str]]:
    """The Vertex AI CustomJob body for a validated ml v1 Job body, and the warnings to show the user.

    Raises InvalidJobError listing everything Vertex AI cannot express. The job id becomes ``displayName`` and
    the ``mlsubmit_job_id`` label; the region is not part of the body (it is the ``parent`` location).
    """
    ti: dict[str, Any] = as_dict(job_body.get("trainingInput"))
    found = Findings()
    refuse_unknown_fields(ti, found, "Vertex AI")
    refuse_unsupported(ti, found, "Vertex AI")
    labels = _labels(job_body, found)
    pools = expand_pools(ti, found)
    _tf_config_naming(ti, pools, found)
    refuse_image_override(pools, executor_image_uri, found)
    specs: list[dict[str, Any]] = []
    for pool in pools:
        while len(specs) < pool.index:
            specs.append({})  # an empty pool keeps the positions of the later ones
        specs.append(_pool_spec(pool, ti, found, executor_image_uri))
    job_spec: dict[str, Any] = {"workerPoolSpecs": specs}
    timeout = as_dict(ti.get("scheduling")).get("maxRunningTime")
    if timeout:
        job_spec["scheduling"] = {"timeout": timeout}
    if ti.get("jobDir"):
        job_spec["baseOutputDirectory"] = {"outputUriPrefix": ti["jobDir"]}
    for key in ("serviceAccount", "network"):
        if ti.get(key):
            job_spec[key] = ti[key]
    if ti.get("enableWebAccess"):
        job_spec["enableWebAccess"] = True
    body: dict[str, Any] = {"displayName": str(job_body["jobId"]), "labels": labels, "jobSpec": job_spec}
    kms = as_dict(ti.get("encryptionConfig")).get("kmsKeyName")
    if kms:
        body["encryptionSpec"] = {"kmsKeyName": kms}
    found.raise_if_any()
    return body, found.warnings
