"""Pure translation of a validated ml v1 Job body (with its ``vertex:`` settings) into a Vertex AI ``CustomJob``
(docs/vertex.md). What Vertex AI cannot express is refused (InvalidJobError), every reason at once."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date
from typing import Any

from mlsubmit.job.hints import format_path
from mlsubmit.job.merge import JOB_SPEC_FIELDS
from mlsubmit.job.rules import MAX_LABELS
from mlsubmit.job.vocab import JOB_ID_LABEL, ROLE_BY_KEY, job_id_label, primary_task_name
from mlsubmit.targets import pools
from mlsubmit.targets.pools import Findings, Pool, as_dict
from mlsubmit.targets.vertex_images import today
from mlsubmit.targets.vertex_rules import check_vertex


def _tf_config_naming(ti: Mapping[str, Any], expanded: list[Pool], found: Findings) -> None:
    """Vertex always names the primary ``chief`` in TF_CONFIG; the legacy service said ``master`` for custom
    containers (unless useChiefInTfConfig) and for runtimes before 2.1 (docs/vertex.md)."""
    if ti.get("useChiefInTfConfig") is False:
        found.refuse(
            f"{pools.TI}.useChiefInTfConfig",
            "Vertex AI always names the primary `chief` in TF_CONFIG; remove useChiefInTfConfig: false and "
            "let the trainer accept `chief`",
        )
    elif len(expanded) > 1 and primary_task_name(ti) == "master":
        found.warn(
            "on Vertex AI the primary replica appears as `chief` in TF_CONFIG (the legacy service said "
            "`master` for this job); make sure the trainer accepts `chief`"
        )


def _labels(job_body: Mapping[str, Any], found: Findings) -> dict[str, str]:
    ours = job_id_label(str(job_body["jobId"]))
    labels = {str(k): str(v) for k, v in as_dict(job_body.get("labels")).items()}
    if labels.get(JOB_ID_LABEL, ours) != ours:
        found.refuse(
            f"$.labels.{JOB_ID_LABEL}",
            f"label {JOB_ID_LABEL} is reserved: mlsubmit sets it to the job id; remove it",
        )
    labels[JOB_ID_LABEL] = ours
    if len(labels) > MAX_LABELS:
        found.refuse(
            "$.labels", f"Vertex AI allows {MAX_LABELS} labels and mlsubmit adds {JOB_ID_LABEL}; remove one"
        )
    return labels


def _pool_spec(
    pool: Pool, ti: Mapping[str, Any], vertex: Mapping[str, Any], found: Findings, on: date, built: str | None
) -> dict[str, Any]:
    machine: dict[str, Any] = {"machineType": pool.machine_type}
    if pool.accelerator:
        machine["acceleratorType"], machine["acceleratorCount"] = pool.accelerator
    name = ROLE_BY_KEY[pool.role].config_field.removesuffix("Config")  # parameterServer
    pool_affinity = as_dict(vertex.get("poolReservationAffinity")).get(name)
    if affinity := pool_affinity or vertex.get("reservationAffinity"):
        machine["reservationAffinity"] = dict(affinity)
    spec: dict[str, Any] = {"machineSpec": machine, "replicaCount": str(pool.count)}
    if pool.disk:
        spec["diskSpec"] = dict(pool.disk)
    package, image, command, args = pools.program(pool, ti, vertex, built)
    out: dict[str, Any] = {"imageUri": image, **({} if command is None else {"command": command})}
    key = "containerSpec"
    if package:
        image = pools.executor_image(ti, pool.gpus > 0, found, image or None, vertex=vertex, on=on)
        key, out = "pythonPackageSpec", {"executorImageUri": image}
        out.update(packageUris=list(ti.get("packageUris") or []), pythonModule=ti.get("pythonModule"))
    if args:
        out["args"] = args
    if env := pools.env_list(vertex):
        out["env"] = env
    spec[key] = out
    return spec


def _scheduling(ti: Mapping[str, Any], found: Findings) -> dict[str, Any]:
    sched = as_dict(ti.get("scheduling"))
    renamed = (("maxRunningTime", "timeout"), ("strategy", "strategy"))
    out: dict[str, Any] = {new: sched[old] for old, new in renamed if sched.get(old)}
    if sched.get("strategy") == "FLEX_START" and sched.get("maxWaitTime"):
        out["maxWaitDuration"] = sched["maxWaitTime"]
    out.update({k: bool(sched[k]) for k in ("restartJobOnWorkerRestart", "disableRetries") if k in sched})
    if sched.get("disableRetries") and sched.get("restartJobOnWorkerRestart"):
        found.warn(
            "disableRetries turns restartJobOnWorkerRestart off on Vertex AI (aiplatform v1 Scheduling); "
            "drop one of --disable-retries / --restart-job-on-worker-restart"
        )
    return out


def to_custom_job(
    job_body: dict[str, Any],
    *,
    executor_image_uri: str | None = None,
    on: date | None = None,
    tuning: bool = False,
    built_image: str | None = None,
    checked: bool = False,
) -> tuple[dict[str, Any], list[str]]:
    """The Vertex AI CustomJob body of a validated job and its warnings (InvalidJobError: what Vertex AI cannot
    express). ``on``: the day images are dated against; ``tuning``: the caller translates ``hyperparameters``;
    ``built_image``: what ``--build-image`` made; ``checked``: Vertex AI's rules already ran on this body."""
    on = on or today()
    found = Findings()
    ti: dict[str, Any] = as_dict(job_body.get("trainingInput"))
    vertex = as_dict(job_body.get("vertex"))
    if executor_image_uri:  # the flag stands for vertex.executorImageUri
        vertex = {**vertex, "executorImageUri": executor_image_uri}
    labels = _labels(job_body, found)
    if not checked:
        for path, message in check_vertex({**job_body, "vertex": vertex}, True, on=on):
            found.refuse(format_path(path), message)
    pools.refuse_unknown_fields(ti, found, "Vertex AI")
    pools.refuse_unsupported(ti, found, "Vertex AI", tuning=tuning)
    expanded = pools.expand_pools(ti, found)
    _tf_config_naming(ti, expanded, found)
    pools.refuse_image_flags(ti, vertex, expanded, executor_image_uri, built_image, found)
    specs: list[dict[str, Any]] = []
    for pool in expanded:
        specs += [{}] * (pool.index - len(specs))  # an empty pool keeps the positions of the later ones
        specs.append(_pool_spec(pool, ti, vertex, found, on, built_image))
    job_spec: dict[str, Any] = {"workerPoolSpecs": specs}
    if scheduling := _scheduling(ti, found):
        job_spec["scheduling"] = scheduling
    if ti.get("jobDir"):
        job_spec["baseOutputDirectory"] = {"outputUriPrefix": ti["jobDir"]}
    job_spec.update({k: ti[k] for k in ("serviceAccount", "network") if ti.get(k)})
    if ti.get("enableWebAccess"):
        job_spec["enableWebAccess"] = True
    job_spec.update({k: vertex[k] for k in JOB_SPEC_FIELDS if vertex.get(k)})
    if vertex.get("enableDashboardAccess"):
        job_spec["enableDashboardAccess"] = True
    body: dict[str, Any] = {"displayName": str(job_body["jobId"]), "labels": labels, "jobSpec": job_spec}
    if kms := as_dict(ti.get("encryptionConfig")).get("kmsKeyName"):
        body["encryptionSpec"] = {"kmsKeyName": kms}
    found.raise_if_any()
    return body, found.warnings
