"""The Vertex AI flags of `training` / `export`, merged into the job body like every other flag (docs/vertex.md):
scheduling flags set leaves of ``trainingInput.scheduling``, the others leaves of ``vertex:``; ``--env`` adds to the
file's ``vertex.env``; ``--network`` replaces ``trainingInput.network``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mlsubmit.job.vocab import RESERVATION_AFFINITIES, enum_spelling

# aiplatform v1 ReservationAffinity.key for a specific reservation (revision 20261106).
RESERVATION_NAME_KEY = "compute.googleapis.com/reservation-name"
# flag (click parameter name) -> (field inside trainingInput.scheduling, how to turn the value into it)
SCHEDULING_FLAGS = {
    "scheduling_strategy": "strategy",
    "restart_job_on_worker_restart": "restartJobOnWorkerRestart",
    "disable_retries": "disableRetries",
}
# flag (click parameter name) -> the field of the ``vertex:`` block it sets (docs/vertex.md).
VERTEX_FLAGS = {
    "executor_image_uri": "executorImageUri",
    "build_image": "buildImage",
    "framework": "framework",
    "framework_version": "frameworkVersion",
    "persistent_resource_id": "persistentResourceId",
    "tensorboard": "tensorboard",
    "experiment": "experiment",
    "experiment_run": "experimentRun",
    "enable_dashboard_access": "enableDashboardAccess",
}
# Fields of the ``vertex:`` block the CustomJob's ``jobSpec`` takes as they are (aiplatform v1 CustomJobSpec): a
# new flag of this kind is a row above, a name here and its field in job.schema.json (docs/architecture.md).
JOB_SPEC_FIELDS = ("persistentResourceId", "tensorboard", "experiment", "experimentRun")


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def merge_vertex_flags(body: dict[str, Any], given: Mapping[str, Any], origin: dict[str, str]) -> None:
    """Put the Vertex AI flags the user gave into ``body`` (in place), recording where each value came from."""
    ti: dict[str, Any] = body.setdefault("trainingInput", {})
    if given.get("network"):
        ti["network"] = given["network"]
        origin["$.trainingInput.network"] = "--network"
    for name, key in SCHEDULING_FLAGS.items():
        if given.get(name) is None:
            continue
        value = given[name]
        if name == "scheduling_strategy":
            value = enum_spelling(str(value))
        ti.setdefault("scheduling", {})[key] = value
        origin[f"$.trainingInput.scheduling.{key}"] = _flag(name)
    vertex_given = {k: v for k, v in given.items() if v is not None and v != ()}
    wanted = [n for n in (*VERTEX_FLAGS, "env", "reservation", "reservation_affinity") if n in vertex_given]
    if not wanted:
        return
    vertex: dict[str, Any] = body.setdefault("vertex", {})
    for name, key in VERTEX_FLAGS.items():
        if name in vertex_given:
            vertex[key] = vertex_given[name]
            origin[f"$.vertex.{key}"] = _flag(name)
    if "env" in vertex_given:
        env: dict[str, Any] = vertex.setdefault("env", {})
        for key, value in vertex_given["env"]:
            env[key] = value
            origin[f"$.vertex.env.{key}"] = "--env"
    if "reservation" in vertex_given or "reservation_affinity" in vertex_given:
        kind = str(vertex_given.get("reservation_affinity") or "specific").lower()
        affinity: dict[str, Any] = {"reservationAffinityType": RESERVATION_AFFINITIES[kind]}
        if vertex_given.get("reservation"):
            affinity["key"] = RESERVATION_NAME_KEY
            affinity["values"] = [vertex_given["reservation"]]
        vertex["reservationAffinity"] = affinity
        origin["$.vertex.reservationAffinity"] = "--reservation/--reservation-affinity"
