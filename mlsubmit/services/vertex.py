"""Vertex AI ``projects.locations.customJobs`` calls through an injected googleapiclient service.

``VertexJobs`` implements the JobsBackend protocol (``services.backends``) so `jobs describe/list/cancel/wait`
and `training --wait` treat Vertex jobs like ml ones:

* A job can be named by its numeric id (``1234567890``), its full resource name
  (``projects/P/locations/R/customJobs/1234567890``) or the mlsubmit job id it was submitted as (``my_job``),
  which is found through the ``mlsubmit_job_id`` label and confirmed by ``displayName``.
* Jobs are presented as the CustomJob resource plus ``jobId``, an ml-style ``state`` (the Vertex one stays in
  ``vertexState``) and ``errorMessage``. ``jobId`` is the mlsubmit job id for jobs mlsubmit created (they carry
  the label) and the numeric id for any other job, so it can always be passed back to `jobs describe`.
* States: QUEUED -> QUEUED, PENDING -> PREPARING, RUNNING and UPDATING -> RUNNING, SUCCEEDED, FAILED,
  CANCELLING, CANCELLED as named, EXPIRED and PARTIALLY_SUCCEEDED -> FAILED (the job did not do its work),
  PAUSED -> QUEUED (it waits), anything else -> STATE_UNSPECIFIED.

``create`` never makes two jobs. Vertex assigns ids, so the ml approach (retry, then resolve a 409) cannot work:
before the first attempt it refuses a job id that an existing job already carries (ids stay unique, as on ml),
and before every retry it looks for the job an earlier, unanswered attempt may have created, returning that
job instead of creating another.
"""

from __future__ import annotations

import re
from typing import Any

from mlsubmit.errors import ApiError, ServiceAnswerError, UsageError
from mlsubmit.services.answers import VERTEX_JOB_SHAPE, check_shape, excerpt, need_job, shorten
from mlsubmit.services.backends import CreateResult
from mlsubmit.services.compare import CUSTOM_JOB, TUNING_JOB, is_same_job
from mlsubmit.services.ml import Caller, api_error, list_pages
from mlsubmit.spec.vocab import JOB_ID_LABEL, job_id_label

STATES: dict[str, str] = {
    "JOB_STATE_QUEUED": "QUEUED",
    "JOB_STATE_PENDING": "PREPARING",
    "JOB_STATE_RUNNING": "RUNNING",
    "JOB_STATE_UPDATING": "RUNNING",
    "JOB_STATE_SUCCEEDED": "SUCCEEDED",
    "JOB_STATE_FAILED": "FAILED",
    "JOB_STATE_EXPIRED": "FAILED",
    "JOB_STATE_PARTIALLY_SUCCEEDED": "FAILED",
    "JOB_STATE_CANCELLING": "CANCELLING",
    "JOB_STATE_CANCELLED": "CANCELLED",
    "JOB_STATE_PAUSED": "QUEUED",
}
# ml state -> the Vertex state a filter on it means
VERTEX_STATES = {
    "QUEUED": "JOB_STATE_QUEUED",
    "PREPARING": "JOB_STATE_PENDING",
    "RUNNING": "JOB_STATE_RUNNING",
    "SUCCEEDED": "JOB_STATE_SUCCEEDED",
    "FAILED": "JOB_STATE_FAILED",
    "CANCELLING": "JOB_STATE_CANCELLING",
    "CANCELLED": "JOB_STATE_CANCELLED",
}
# A job's full resource name as the service gives it and as users may pass it (README "Security").
RESOURCE_NAME = re.compile(
    r"projects/[a-z0-9][a-z0-9.:-]{0,127}/locations/[a-z0-9-]{1,64}/(?:customJobs|hyperparameterTuningJobs)/[0-9]{1,30}"
)
_STATE_TERM = re.compile(r"\bstate\s*(!=|=)\s*\"?([A-Za-z_]+)\"?")
_JOB_ID_FIELD = re.compile(r"\bjob_?[iI]d\s*(?=!=|=|:)")
_CREATE_TIME_FIELD = re.compile(r"\bcreateTime\b")


def _labels(job: dict[str, Any]) -> dict[str, Any]:
    labels = job.get("labels")
    return labels if isinstance(labels, dict) else {}


def ml_state(vertex_state: str | None) -> str:
    """The ml-style state for a ``JOB_STATE_*`` value (module docstring table)."""
    return STATES.get(str(vertex_state or ""), "STATE_UNSPECIFIED")


def vertex_filter(ml_filter: str | None) -> str | None:
    """Let ml-style list filters work on Vertex: ``state=FAILED`` -> ``state="JOB_STATE_FAILED"``, ``jobId`` ->
    ``display_name``, ``createTime`` -> ``create_time``. Anything else is passed on as written (Vertex syntax)."""
    if not ml_filter:
        return None

    def state(m: re.Match[str]) -> str:
        value = m.group(2).upper()
        return f'state{m.group(1)}"{VERTEX_STATES.get(value, value)}"'

    text = _STATE_TERM.sub(state, ml_filter)
    text = _JOB_ID_FIELD.sub("display_name", text)
    return _CREATE_TIME_FIELD.sub("create_time", text)


class _Answered:
    """Stands in for a request whose answer we already have (the job an earlier attempt created)."""

    def __init__(self, job: dict[str, Any]) -> None:
        self.job = job

    def execute(self, num_retries: int = 0) -> dict[str, Any]:
        return self.job


# collection -> the discovery schema "is this the job we sent?" compares against
COLLECTION_SCHEMAS = {
    "customJobs": CUSTOM_JOB,
    "hyperparameterTuningJobs": TUNING_JOB,
}


class VertexJobs:
    """The Vertex AI custom job calls mlsubmit makes, in one project and region.

    Another job collection of the same API (e.g. ``hyperparameterTuningJobs``) reuses the create-once and
    find-by-label logic by overriding the class attributes: ``COLLECTION`` (the Resource method of
    ``projects().locations()``), ``ITEMS`` (the list answer's key), ``SCHEMA`` (the discovery schema the
    comparison uses) and ``PERMISSION`` (the IAM prefix named in errors).
    """

    COLLECTION = "customJobs"
    ITEMS = "customJobs"
    SCHEMA = CUSTOM_JOB
    PERMISSION = "aiplatform.customJobs"

    def __init__(
        self,
        service: Any,
        project: str,
        region: str,
        caller: Caller | None = None,
        collection: str = "customJobs",  # or "hyperparameterTuningJobs": the same calls, another collection
    ) -> None:
        self.service = service
        if collection != self.COLLECTION:  # another collection of the same API: the same calls, other names
            self.COLLECTION = self.ITEMS = collection
            self.SCHEMA = COLLECTION_SCHEMAS[collection]
            self.PERMISSION = f"aiplatform.{collection}"
        self.collection = collection
        self.project = project
        self.region = region
        self.caller = caller or Caller()
        self.parent = f"projects/{project}/locations/{region}"
        self._names: dict[str, str] = {}  # mlsubmit job id -> resource name, once found

    @property
    def _jobs(self) -> Any:
        return getattr(self.service.projects().locations(), self.COLLECTION)()

    def view(self, job: dict[str, Any]) -> dict[str, Any]:
        """The job as `jobs` commands show it: jobId and an ml-style state first, then the CustomJob."""
        number = str(job.get("name", "")).rsplit("/", 1)[-1]
        display = str(job.get("displayName") or "")
        ours = _labels(job).get(JOB_ID_LABEL) == job_id_label(display) if display else False
        out: dict[str, Any] = {"jobId": display if ours else number, "state": ml_state(job.get("state"))}
        error = job.get("error")
        message = error.get("message") if isinstance(error, dict) else error
        if message:
            out["errorMessage"] = shorten(str(message))
        out.update({k: v for k, v in job.items() if k != "state"})
        out["vertexState"] = job.get("state", "JOB_STATE_UNSPECIFIED")
        return out

    def find(self, job_id: str) -> list[dict[str, Any]]:
        """The jobs submitted as mlsubmit job id ``job_id`` (label, then the exact displayName), newest first."""
        label = job_id_label(job_id)
        text = f'labels.{JOB_ID_LABEL}="{label}" AND display_name="{job_id}"'
        jobs = [
            j
            for j in self._list_raw(text, None)
            if j.get("displayName") == job_id and _labels(j).get(JOB_ID_LABEL) == label
        ]
        return sorted(jobs, key=lambda j: str(j.get("createTime", "")), reverse=True)

    def create(self, body: dict[str, Any], job_id: str) -> CreateResult:
        """Create the CustomJob ``body`` (from vertex.to_custom_job) exactly once; returns the job's view."""
        from googleapiclient.errors import HttpError

        existing = self.find(job_id)
        if existing:
            raise ApiError(
                f"job id {job_id!r} is already used by Vertex AI job {existing[0].get('name')} "
                f"({ml_state(existing[0].get('state'))}); choose another JOB id.",
                status=409,
            )
        attempts = 0
        recovered: list[dict[str, Any]] = []

        def make_request() -> Any:
            nonlocal attempts
            attempts += 1
            if attempts > 1:
                # The previous attempt failed or went unanswered: it may still have created the job.
                earlier = self.find(job_id)
                if earlier:
                    if not is_same_job(self.SCHEMA, body, earlier[0], api="aiplatform"):
                        raise ApiError(
                            f"a different Vertex AI job {earlier[0].get('name')} appeared with job id {job_id!r} "
                            "while we were creating ours; not creating another. Choose another JOB id.",
                            status=409,
                        )
                    recovered.append(earlier[0])
                    return _Answered(earlier[0])
            return self._jobs.create(parent=self.parent, body=body)

        try:
            job: dict[str, Any] = self.caller.execute(make_request, f"creating Vertex AI job {job_id}")
        except HttpError as err:
            raise api_error(
                err, f"creating Vertex AI job {job_id}", self.project, f"{self.PERMISSION}.create"
            ) from None
        # A 200 with an HTML page (a proxy, a portal) or any other shape is no job: never "submitted".
        job = need_job(job, f"creating Vertex AI job {job_id}", shape=VERTEX_JOB_SHAPE)
        if recovered:
            self.caller.notify(
                f"an earlier attempt created Vertex AI job {job.get('name')}; not creating another"
            )
        name = str(job.get("name") or "")
        if not RESOURCE_NAME.fullmatch(name):
            raise ServiceAnswerError(
                f"creating Vertex AI job {job_id}: the answer names the job {excerpt(name)}, not "
                "projects/P/locations/R/customJobs/N."
            )
        self._names[job_id] = name
        return CreateResult(job=self.view(job), recovered=bool(recovered))

    def resource_name(self, job_id: str) -> str:
        """The full resource name for a numeric id, a resource name or an mlsubmit job id."""
        if job_id.startswith("projects/"):
            if not RESOURCE_NAME.fullmatch(job_id):
                raise UsageError(
                    f"job {job_id[:80]!r} is not a Vertex AI job name: pass projects/P/locations/R/customJobs/N, "
                    "the numeric id or the mlsubmit job id."
                )
            return job_id
        if job_id.isdigit():
            return f"{self.parent}/{self.COLLECTION}/{job_id}"
        if job_id in self._names:
            return self._names[job_id]
        found = self.find(job_id)
        if not found:
            raise ApiError(
                f"job {job_id!r} not found in {self.parent}: no Vertex AI job carries label "
                f"{JOB_ID_LABEL}={job_id_label(job_id)} with that display name. Pass the numeric id for jobs "
                "mlsubmit did not create.",
                status=404,
            )
        if len(found) > 1:
            ids = ", ".join(str(j.get("name", "")).rsplit("/", 1)[-1] for j in found)
            raise ApiError(
                f"several Vertex AI jobs were submitted as {job_id!r} (ids {ids}); pass the numeric id."
            )
        name = str(found[0].get("name") or "")
        if not RESOURCE_NAME.fullmatch(name):
            raise ServiceAnswerError(
                f"finding job {job_id}: the service named it {excerpt(name)}, not "
                "projects/P/locations/R/customJobs/N; not using that name in a request."
            )
        self._names[job_id] = name
        return name

    def get(self, job_id: str) -> dict[str, Any]:
        """Read a job (retried: reads are safe) and present it ml-style."""
        from googleapiclient.errors import HttpError

        name = self.resource_name(job_id)
        try:
            job: dict[str, Any] = self.caller.execute(
                lambda: self._jobs.get(name=name), f"reading job {job_id}"
            )
        except HttpError as err:
            if (getattr(getattr(err, "resp", None), "status", None)) == 404:
                raise ApiError(f"job {job_id!r} not found ({name}).", status=404) from None
            raise api_error(err, f"reading job {job_id}", self.project, f"{self.PERMISSION}.get") from None
        return self.view(need_job(job, f"reading job {job_id}", shape=VERTEX_JOB_SHAPE))

    def _list_raw(self, filter_: str | None, limit: int | None, page_size: int = 100) -> list[dict[str, Any]]:
        return list_pages(
            self.caller,
            self._jobs.list,
            {"parent": self.parent, "filter": filter_},
            items=self.ITEMS,
            what="listing Vertex AI jobs",
            project=self.project,
            permission=f"{self.PERMISSION}.list",
            limit=limit,
            page_size=page_size,
        )

    def list(self, filter_: str | None = None, limit: int | None = None) -> list[dict[str, Any]]:
        """Jobs of the region, ml-style (``filter_`` may use ml spellings, see :func:`vertex_filter`)."""
        found = self._list_raw(vertex_filter(filter_), limit)
        return [self.view(check_shape(j, VERTEX_JOB_SHAPE, "listing Vertex AI jobs")) for j in found]

    def cancel(self, job_id: str) -> None:
        """Ask Vertex AI to cancel the job (idempotent on the service side, so retried)."""
        from googleapiclient.errors import HttpError

        name = self.resource_name(job_id)
        try:
            self.caller.execute(lambda: self._jobs.cancel(name=name, body={}), f"cancelling job {job_id}")
        except HttpError as err:
            status = getattr(getattr(err, "resp", None), "status", None)
            if status == 404:
                raise ApiError(f"job {job_id!r} not found ({name}).", status=404) from None
            raise api_error(
                err, f"cancelling job {job_id}", self.project, f"{self.PERMISSION}.cancel"
            ) from None
