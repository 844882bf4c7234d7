"""The ml v1 ``projects.jobs`` collection of the fake: create (schema-checked), get, list, cancel, scripts."""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tests.fakes.filters import FilterError, compile_filter
from tests.fakes.lifecycle import Lifecycle
from tests.fakes.schema_check import bad_request, check_body
from tests.fakes.wire import ApiError, RecordedRequest, Response, int_param, page, rfc3339, snapshot

DEFAULT_STATES = ("QUEUED", "PREPARING", "RUNNING", "SUCCEEDED")
TERMINAL = frozenset({"SUCCEEDED", "FAILED", "CANCELLED"})
_JOB_ID = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,127}$")


@dataclass
class MlJob:
    """A stored job: the resource clients read and its scripted lifecycle."""

    project: str
    resource: dict[str, Any]
    lifecycle: Lifecycle


class MlJobs:
    """State of the ml v1 jobs collection. Not locked itself: the server serialises every call."""

    def __init__(self, clock: Callable[[], dt.datetime]):
        self.clock = clock
        self.jobs: dict[tuple[str, str], MlJob] = {}
        self.scripts: dict[str, tuple[list[str], str | None]] = {}
        self.default_states: list[str] = list(DEFAULT_STATES)
        self._etags = 0

    # -- scripting ---------------------------------------------------------------------------------------
    def script(self, job_id: str, states: list[str] | None, error_message: str | None) -> None:
        """Set the states ``job_id`` goes through (now if it exists, else when it is created)."""
        chosen = list(states or self.default_states)
        self.scripts[job_id] = (chosen, error_message)
        for (_, jid), job in self.jobs.items():
            if jid == job_id:
                job.lifecycle = Lifecycle(chosen, error_message)
                self._enter(job)

    def _enter(self, job: MlJob) -> None:
        state = job.lifecycle.current
        resource = job.resource
        resource["state"] = state
        now = rfc3339(self.clock())
        if state in ("PREPARING", "RUNNING") and "startTime" not in resource:
            resource["startTime"] = now
        if state in TERMINAL:
            resource.setdefault("startTime", now)
            resource.setdefault("endTime", now)  # a job ends once: a seeded endTime stands
            if state == "FAILED":
                resource["errorMessage"] = job.lifecycle.error_message or (
                    "The replica master 0 exited with a non-zero status of 1."
                )
            elif state == "CANCELLED":
                resource["errorMessage"] = job.lifecycle.error_message or "Job cancelled by the user."
        if state == "SUCCEEDED":
            resource.setdefault("trainingOutput", {"consumedMLUnits": 0.01})
        self._etags += 1
        resource["etag"] = base64.b64encode(hashlib.sha1(f"{self._etags}".encode()).digest()[:8]).decode()

    def add(self, project: str, resource: dict[str, Any]) -> dict[str, Any]:
        """Store ``resource`` as an existing job (no validation); returns the stored copy."""
        job_id = resource["jobId"]
        default = ([resource["state"]] if resource.get("state") else self.default_states, None)
        states, error = self.scripts.get(job_id, default)
        stored = snapshot(resource)
        stored.setdefault("createTime", rfc3339(self.clock()))
        job = MlJob(project, stored, Lifecycle(list(states), error))
        self.jobs[(project, job_id)] = job
        self._enter(job)
        return snapshot(job.resource)

    def find(self, job_id: str) -> MlJob | None:
        """The job with ``job_id`` in any project (job ids in tests are unique)."""
        return next((job for (_, jid), job in self.jobs.items() if jid == job_id), None)

    # -- REST handlers -----------------------------------------------------------------------------------
    def create(self, request: RecordedRequest, project: str) -> Response:
        """``POST /v1/projects/{p}/jobs``: validate like the service, then store the job in its first state."""
        body = request.json
        errors, job = check_body("ml.v1", "GoogleCloudMlV1__Job", body, "job")
        if errors:
            return Response(400, bad_request(errors))
        job_id = job.get("jobId")
        if not job_id:
            raise ApiError(400, "Field: job.job_id Error: A job ID must be specified.")
        if not _JOB_ID.match(job_id):
            raise ApiError(
                400,
                "Field: job.job_id Error: A name should start with a letter and contain only letters, numbers "
                "and underscores.",
            )
        if "trainingInput" not in job and "predictionInput" not in job:
            raise ApiError(400, "Field: job Error: Either training_input or prediction_input must be set.")
        if (project, job_id) in self.jobs:
            raise ApiError(
                409,
                "Field: job.job_id Error: A job with this id already exists.",
                "ALREADY_EXISTS",
                [
                    {
                        "@type": "type.googleapis.com/google.rpc.BadRequest",
                        "fieldViolations": [
                            {"field": "job.job_id", "description": "A job with this id already exists."}
                        ],
                    }
                ],
            )
        job.pop("state", None)
        return Response(200, self.add(project, job))

    def _get_job(self, project: str, job_id: str) -> MlJob:
        job = self.jobs.get((project, job_id))
        if job is None:
            raise ApiError(
                404, f"Field: name Error: The specified job projects/{project}/jobs/{job_id} was not found."
            )
        return job

    def get(self, request: RecordedRequest, project: str, job_id: str) -> Response:
        """``GET /v1/projects/{p}/jobs/{id}``: answer the current state, then move one step along the script."""
        job = self._get_job(project, job_id)
        answer = snapshot(job.resource)
        if job.lifecycle.advance() is not None:
            self._enter(job)
        return Response(200, answer)

    def list(self, request: RecordedRequest, project: str) -> Response:
        """``GET /v1/projects/{p}/jobs``: creation order, ``filter``, ``pageSize`` (default 20, max 100)."""
        try:
            matches = compile_filter(request.param("filter"))
        except FilterError as exc:
            raise ApiError(400, f"Invalid filter: {exc}") from exc
        jobs = [
            snapshot(j.resource) for (p, _), j in self.jobs.items() if p == project and matches(j.resource)
        ]
        size = int_param(request.param("pageSize"), "page_size")
        items, token = page(jobs, size, request.param("pageToken"), 20, 100)
        answer: dict[str, Any] = {"jobs": items} if items else {}
        if token:
            answer["nextPageToken"] = token
        return Response(200, answer)

    def cancel(self, request: RecordedRequest, project: str, job_id: str) -> Response:
        """``POST /v1/projects/{p}/jobs/{id}:cancel``: CANCELLING now, CANCELLED on the next read."""
        job = self._get_job(project, job_id)
        if job.lifecycle.current in TERMINAL:
            raise ApiError(
                400,
                f"Job {job_id} is already in a terminal state: {job.lifecycle.current}.",
                "FAILED_PRECONDITION",
            )
        if job.lifecycle.current != "CANCELLING":
            job.lifecycle.divert(["CANCELLING", "CANCELLED"])
            self._enter(job)
        return Response(200, {})
