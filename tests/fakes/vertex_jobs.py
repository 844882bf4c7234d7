"""The aiplatform v1 ``projects.locations.customJobs`` and ``hyperparameterTuningJobs`` collections of the fake."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tests.fakes.filters import FilterError, compile_filter
from tests.fakes.lifecycle import Lifecycle
from tests.fakes.schema_check import bad_request, check_body
from tests.fakes.wire import ApiError, RecordedRequest, Response, int_param, page, rfc3339, snapshot

DEFAULT_STATES = ("JOB_STATE_QUEUED", "JOB_STATE_PENDING", "JOB_STATE_RUNNING", "JOB_STATE_SUCCEEDED")
TERMINAL = frozenset({"JOB_STATE_SUCCEEDED", "JOB_STATE_FAILED", "JOB_STATE_CANCELLED", "JOB_STATE_EXPIRED"})
FIRST_ID = 1234567890123456001


@dataclass
class CustomJob:
    """A stored custom job: the resource clients read and its scripted lifecycle."""

    parent: str
    resource: dict[str, Any]
    lifecycle: Lifecycle


def _required(field: str) -> ApiError:
    return ApiError(400, f"List of found errors:\t1.Field: {field}; Message: Required field is not set.\t")


def _check_pools(spec: dict[str, Any]) -> None:
    pools = spec.get("workerPoolSpecs") or []
    if not pools:
        raise _required("custom_job.job_spec.worker_pool_specs")
    for index, pool in enumerate(pools):
        if index > 0 and not pool:
            continue  # `{}` keeps the positions of later pools
        where = f"custom_job.job_spec.worker_pool_specs[{index}]"
        if not (pool.get("machineSpec") or {}).get("machineType"):
            raise _required(f"{where}.machine_spec.machine_type")
        if ("containerSpec" in pool) == ("pythonPackageSpec" in pool):
            raise ApiError(
                400, f"{where}: exactly one of container_spec and python_package_spec must be set."
            )


# collection -> (schema of its resource, the field name errors use); both collections behave alike.
COLLECTIONS = {
    "customJobs": ("GoogleCloudAiplatformV1CustomJob", "custom_job", "CustomJob"),
    "hyperparameterTuningJobs": (
        "GoogleCloudAiplatformV1HyperparameterTuningJob",
        "hyperparameter_tuning_job",
        "HyperparameterTuningJob",
    ),
}


def _check_tuning(job: dict[str, Any]) -> None:
    study = job.get("studySpec") or {}
    if not study.get("metrics"):
        raise _required("hyperparameter_tuning_job.study_spec.metrics")
    if not study.get("parameters"):
        raise _required("hyperparameter_tuning_job.study_spec.parameters")
    if not job.get("maxTrialCount"):
        raise _required("hyperparameter_tuning_job.max_trial_count")
    if not job.get("parallelTrialCount"):
        raise _required("hyperparameter_tuning_job.parallel_trial_count")
    if not job.get("trialJobSpec"):
        raise _required("hyperparameter_tuning_job.trial_job_spec")
    _check_pools(job["trialJobSpec"])


class VertexJobs:
    """State of the customJobs (or hyperparameterTuningJobs) collection. Not locked itself: the server
    serialises every call."""

    def __init__(self, clock: Callable[[], dt.datetime], collection: str = "customJobs"):
        self.clock = clock
        self.collection = collection
        self.schema, self.field, self.kind = COLLECTIONS[collection]
        self.jobs: dict[str, CustomJob] = {}
        self.scripts: dict[str, tuple[list[str], str | None]] = {}
        self.region_scripts: dict[str, tuple[list[str], str | None]] = {}  # region -> its jobs' lifecycle
        self.default_states: list[str] = list(DEFAULT_STATES)
        # Tuning jobs get ids of their own range, so a numeric id names one job across both collections.
        self._next_id = FIRST_ID if collection == "customJobs" else FIRST_ID + 500_000

    def script(self, key: str, states: list[str] | None, error_message: str | None) -> None:
        """Script the job whose id or displayName is ``key`` (now if it exists, and for jobs created later)."""
        chosen = list(states or self.default_states)
        self.scripts[key] = (chosen, error_message)
        for job_id, job in self.jobs.items():
            if key in (job_id, job.resource.get("displayName")):
                job.lifecycle = Lifecycle(chosen, error_message)
                self._enter(job)

    def _enter(self, job: CustomJob) -> None:
        state = job.lifecycle.current
        resource = job.resource
        now = rfc3339(self.clock())
        resource["state"] = state
        resource["updateTime"] = now
        if state == "JOB_STATE_RUNNING":
            resource.setdefault("startTime", now)
        if state in TERMINAL:
            resource.setdefault("endTime", now)  # a job ends once: a seeded endTime stands
            if state == "JOB_STATE_FAILED":
                message = (
                    job.lifecycle.error_message or "The replica workerpool0-0 exited with a non-zero status."
                )
                resource["error"] = {"code": 3, "message": message}
            elif state == "JOB_STATE_CANCELLED":
                resource["error"] = {"code": 1, "message": job.lifecycle.error_message or "CANCELED"}

    def add(self, parent: str, resource: dict[str, Any]) -> dict[str, Any]:
        """Store ``resource`` as a job of ``parent`` (``projects/P/locations/R``) with a new id; returns it."""
        job_id = str(self._next_id)
        self._next_id += 1
        stored = snapshot(resource)
        stored["name"] = f"{parent}/{self.collection}/{job_id}"
        stored["createTime"] = rfc3339(self.clock())
        default = ([resource["state"]] if resource.get("state") else self.default_states, None)
        default = self.region_scripts.get(parent.rsplit("/", 1)[-1], default)
        states, error = self.scripts.get(resource.get("displayName", ""), default)
        job = CustomJob(parent, stored, Lifecycle(list(states), error))
        self.jobs[job_id] = job
        self._enter(job)
        return snapshot(stored)

    def find(self, job_id: str) -> CustomJob | None:
        """The job with numeric id ``job_id``, if any."""
        return self.jobs.get(job_id)

    def create(self, request: RecordedRequest, parent: str) -> Response:
        """``POST /v1/{parent}/customJobs``: schema-checked; displayName and a primary pool required (tuning
        jobs: also metrics, parameters, trial counts and a trialJobSpec)."""
        errors, job = check_body("aiplatform.v1", self.schema, request.json, self.field)
        if errors:
            return Response(400, bad_request(errors))
        if not job.get("displayName"):
            raise _required(f"{self.field}.display_name")
        if self.collection == "hyperparameterTuningJobs":
            _check_tuning(job)
        else:
            if not job.get("jobSpec"):
                raise _required("custom_job.job_spec")
            _check_pools(job["jobSpec"])
        job.pop("state", None)
        return Response(200, self.add(parent, job))

    def _get_job(self, parent: str, job_id: str) -> CustomJob:
        job = self.jobs.get(job_id)
        if job is None or job.parent != parent:
            raise ApiError(404, f'The {self.kind} "{parent}/{self.collection}/{job_id}" does not exist.')
        return job

    def get(self, request: RecordedRequest, parent: str, job_id: str) -> Response:
        """``GET /v1/{name}``: answer the current state, then move one step along the script."""
        job = self._get_job(parent, job_id)
        answer = snapshot(job.resource)
        if job.lifecycle.advance() is not None:
            self._enter(job)
        return Response(200, answer)

    def list(self, request: RecordedRequest, parent: str) -> Response:
        """``GET /v1/{parent}/customJobs``: creation order, ``filter`` (labels.k="v", display_name="x", ...)."""
        try:
            matches = compile_filter(request.param("filter"))
        except FilterError as exc:
            raise ApiError(400, f"Invalid filter: {exc}") from exc
        jobs = [
            snapshot(j.resource) for j in self.jobs.values() if j.parent == parent and matches(j.resource)
        ]
        size = int_param(request.param("pageSize"), "page_size")
        items, token = page(jobs, size, request.param("pageToken"), 100, 1000)
        answer: dict[str, Any] = {self.collection: items} if items else {}
        if token:
            answer["nextPageToken"] = token
        return Response(200, answer)

    def cancel(self, request: RecordedRequest, parent: str, job_id: str) -> Response:
        """``POST /v1/{name}:cancel``: JOB_STATE_CANCELLING now, JOB_STATE_CANCELLED on the next read."""
        job = self._get_job(parent, job_id)
        if job.lifecycle.current in TERMINAL:
            raise ApiError(
                400,
                f"Cannot cancel {self.kind} {job.resource['name']} in state {job.lifecycle.current}.",
                "FAILED_PRECONDITION",
            )
        if job.lifecycle.current != "JOB_STATE_CANCELLING":
            job.lifecycle.divert(["JOB_STATE_CANCELLING", "JOB_STATE_CANCELLED"])
            self._enter(job)
        return Response(200, {})
