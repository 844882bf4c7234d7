"""Vertex AI custom and tuning jobs as a JobsBackend, named by id, resource name or mlsubmit job id. ``create``
never makes two jobs: a retry first looks for an unanswered attempt's job, and a newer duplicate is cancelled."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from mlsubmit.errors import ApiError, ServiceAnswerError, UsageError
from mlsubmit.job.vocab import JOB_ID_LABEL, job_id_label
from mlsubmit.services.answers import VERTEX_JOB_SHAPE, check_shape, excerpt, need_job, shorten
from mlsubmit.services.backends import TERMINAL_STATES, CreateResult
from mlsubmit.services.classifier import detail_types, is_quota
from mlsubmit.services.compare import CUSTOM_JOB, TUNING_JOB, is_same_job
from mlsubmit.services.ml import Caller, Collection, error_details, error_payload, id_taken

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
# ml state -> the Vertex state a filter on it means (the first one STATES maps to it)
VERTEX_STATES = {ml: vertex for vertex, ml in reversed(STATES.items())}
# A job's full resource name as the service gives it and as users may pass it (docs/security.md).
RESOURCE_NAME = re.compile(
    r"projects/[a-z0-9][a-z0-9.:-]{0,127}/locations/[a-z0-9-]{1,64}/(?:customJobs|hyperparameterTuningJobs)/[0-9]{1,30}"
)
_STATE_TERM = re.compile(r"\bstate\s*(!=|=)\s*\"?([A-Za-z_]+)\"?")
_JOB_ID_FIELD = re.compile(r"\bjob_?[iI]d\s*(?=!=|=|:)")
_CREATE_TIME_FIELD = re.compile(r"\bcreateTime\b")


def _number(job: dict[str, Any]) -> str:
    return str(job.get("name", "")).rsplit("/", 1)[-1]


def _numbers(jobs: list[dict[str, Any]]) -> str:
    return ", ".join(map(_number, jobs))


def _labels(job: dict[str, Any]) -> dict[str, Any]:
    labels = job.get("labels")
    return labels if isinstance(labels, dict) else {}


def ml_state(vertex_state: str | None) -> str:
    """The ml-style state for a ``JOB_STATE_*`` value (module docstring table)."""
    return STATES.get(str(vertex_state or ""), "STATE_UNSPECIFIED")


def is_live(job: dict[str, Any]) -> bool:
    """Whether a raw Vertex job is live: not ended, and not on its way out (CANCELLING)."""
    return ml_state(job.get("state")) not in {*TERMINAL_STATES, "CANCELLING"}


def age_key(job: dict[str, Any]) -> tuple[str, int]:
    """Oldest first: creation time, then the numeric id (Vertex assigns them in order within a region)."""
    number = _number(job)
    return str(job.get("createTime", "")), int(number) if number.isdigit() else 0


def vertex_filter(ml_filter: str | None) -> str | None:
    """ml-style filters on Vertex (``state=FAILED``, ``jobId``, ``createTime``); the rest passed on as is."""
    if not ml_filter:
        return None

    def state(m: re.Match[str]) -> str:
        value = m.group(2).upper()
        return f'state{m.group(1)}"{VERTEX_STATES.get(value, value)}"'

    text = _STATE_TERM.sub(state, ml_filter)
    text = _JOB_ID_FIELD.sub("display_name", text)
    return _CREATE_TIME_FIELD.sub("create_time", text)


def pick(found: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The job an mlsubmit job id names: the only one, else the live one, else the newest; None: 2+ live."""
    if len(found) <= 1:
        return found[0] if found else None
    live = [j for j in found if is_live(j)]
    if len(live) > 1:
        return None
    return live[0] if live else max(found, key=age_key)


# collection -> the discovery schema "is this the job we sent?" compares against
COLLECTION_SCHEMAS = {"customJobs": CUSTOM_JOB, "hyperparameterTuningJobs": TUNING_JOB}


class VertexJobs(Collection):
    """The Vertex AI job calls of one project, region and collection (custom or hyperparameter tuning jobs)."""

    def __init__(
        self,
        service: Any,
        project: str,
        region: str,
        caller: Caller | None = None,
        collection: str = "customJobs",
    ) -> None:
        super().__init__(service, project, caller)
        self.collection = collection
        self.permission = f"aiplatform.{collection}"
        self.region = region
        self.parent = f"projects/{project}/locations/{region}"
        self._names: dict[str, str] = {}  # mlsubmit job id -> resource name, once found

    @property
    def _resource(self) -> Any:
        return getattr(self.service.projects().locations(), self.collection)()

    def view(self, job: dict[str, Any]) -> dict[str, Any]:
        """The job as `jobs` commands show it: jobId and an ml-style state first, then the CustomJob."""
        display = str(job.get("displayName") or "")
        ours = bool(display) and _labels(job).get(JOB_ID_LABEL) == job_id_label(display)
        shown_id = display if ours else _number(job)
        out: dict[str, Any] = {"jobId": shown_id, "state": ml_state(job.get("state"))}
        error = job.get("error")
        if message := (error.get("message") if isinstance(error, dict) else error):
            out["errorMessage"] = shorten(str(message))
        out.update({k: v for k, v in job.items() if k != "state"})
        out["vertexState"] = job.get("state", "JOB_STATE_UNSPECIFIED")
        return out

    def find(self, job_id: str) -> list[dict[str, Any]]:
        """The jobs submitted as mlsubmit job id ``job_id`` (label, then the exact displayName), newest first."""
        label = job_id_label(job_id)
        text = f'labels.{JOB_ID_LABEL}="{label}" AND display_name="{job_id}"'
        jobs = [j for j in self._list_raw(text, None) if j.get("displayName") == job_id]
        # listed here yet named elsewhere: not ours
        jobs = [
            j for j in jobs if _labels(j).get(JOB_ID_LABEL) == label and self._here(str(j.get("name") or ""))
        ]
        return sorted(jobs, key=lambda j: str(j.get("createTime", "")), reverse=True)

    def find_all(self, job_id: str) -> list[dict[str, Any]]:
        """The custom and tuning jobs submitted as ``job_id`` here (one id, one job in both), newest first."""
        others = [c for c in COLLECTION_SCHEMAS if c != self.collection]
        both = [self, *(VertexJobs(self.service, self.project, self.region, self.caller, c) for c in others)]
        found = [job for backend in both for job in backend.find(job_id)]
        return sorted(found, key=age_key, reverse=True)

    def _taken(self, job_id: str, job: dict[str, Any]) -> ApiError:
        return id_taken(
            job_id, self.parent, f" (Vertex AI job {job.get('name')} is {ml_state(job.get('state'))})"
        )

    def keep_oldest(self, job_id: str, job: dict[str, Any]) -> None:
        """After our create: when an older live job carries the same id, cancel ours and raise "taken"."""
        live = sorted((j for j in self.find_all(job_id) if is_live(j)), key=age_key)
        if not live or live[0].get("name") == job.get("name"):
            return
        name = str(job.get("name") or "")
        try:
            self.cancel(name)
        except ApiError as err:  # the "taken" error says what became of ours either way
            raise id_taken(
                job_id, self.parent, f"; cancelling our duplicate {name} failed ({err}), cancel it by hand"
            ) from None
        self.caller.notify(
            f"another command created {live[0].get('name')} as {job_id!r} first; cancelled {name}"
        )
        raise self._taken(job_id, live[0])

    def create(
        self,
        body: dict[str, Any],
        job_id: str,
        *,
        earlier: Callable[[dict[str, Any]], bool] | None = None,
    ) -> CreateResult:
        """Create ``body`` exactly once; the job's view. ``earlier(job)``: an existing job with this id is an
        earlier attempt of the same submission (failover); any other existing job means the id is taken."""
        for existing in self.find_all(job_id):
            if earlier is None or not earlier(existing):
                raise self._taken(job_id, existing)
        recovered: list[dict[str, Any]] = []

        def recover() -> dict[str, Any] | None:  # the previous attempt may still have created the job
            if not (earlier := self.find(job_id)):
                return None
            if not is_same_job(COLLECTION_SCHEMAS[self.collection], body, earlier[0]):
                raise ApiError(
                    f"a different Vertex AI job {earlier[0].get('name')} appeared with job id {job_id!r} "
                    "while we were creating ours; not creating another. Choose another JOB id.",
                    status=409,
                )
            recovered.append(earlier[0])
            return earlier[0]

        def on_status(status: int, err: Exception, _attempt: int) -> Any:
            if is_quota(status, error_details(err)[2], detail_types(error_payload(err))):
                raise err  # a quota limit below the request: another try would be answered the same
            return None

        what = f"creating Vertex AI job {job_id}"
        job = self._call("create", what, on_status=on_status, recover=recover, parent=self.parent, body=body)
        # A 200 with an HTML page (a proxy, a portal) or any other shape is no job: never "submitted".
        job = need_job(job, what, shape=VERTEX_JOB_SHAPE)
        if recovered:
            self.caller.notify(
                f"an earlier attempt created Vertex AI job {job.get('name')}; not creating another"
            )
        self._names[job_id] = self._name_here(job, job_id)
        self.keep_oldest(job_id, job)
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
            return f"{self.parent}/{self.collection}/{job_id}"
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
        chosen = pick(found)
        if chosen is None:
            raise ApiError(
                f"several Vertex AI jobs were submitted as {job_id!r} (ids {_numbers(found)}); pass the numeric id."
            )
        self._names[job_id] = str(chosen["name"])  # find keeps only names of this collection and region
        return self._names[job_id]

    def _here(self, name: str) -> bool:
        """``name`` names a job of this collection in this project (or its number) and region."""
        if not RESOURCE_NAME.fullmatch(name):
            return False
        _, project, _, region, collection, _ = name.split("/")
        same_project = project == self.project or (project.isdigit() and not self.project.isdigit())
        return same_project and region == self.region and collection == self.collection

    def _name_here(self, job: dict[str, Any], job_id: str) -> str:
        """The name of ``job`` if it names a job here; one elsewhere is never read, watched or cancelled."""
        name = str(job.get("name") or "")
        if self._here(name):
            return name
        raise ServiceAnswerError(
            f"creating Vertex AI job {job_id}: the service answered with the job {excerpt(name)}, not one in "
            f"{self.parent}/{self.collection}; not taking it for ours (it is neither watched nor cancelled). "
            f"Whether ours was created, check with `mlsubmit jobs describe {job_id} --target vertex --region "
            f"{self.region}`."
        )

    def get(self, job_id: str) -> dict[str, Any]:
        """Read a job (retried: reads are safe) and present it ml-style."""
        name = self.resource_name(job_id)
        what = f"reading job {job_id}"
        job = self._call("get", what, f"job {job_id!r} not found ({name}).", name=name)
        return self.view(need_job(job, what, shape=VERTEX_JOB_SHAPE))

    def _list_raw(self, filter_: str | None, limit: int | None) -> list[dict[str, Any]]:
        return list(
            self._pages(self.collection, "listing Vertex AI jobs", limit, parent=self.parent, filter=filter_)
        )

    def list(self, filter_: str | None = None, limit: int | None = None) -> list[dict[str, Any]]:
        """Jobs of the region, ml-style (``filter_`` may use ml spellings, see :func:`vertex_filter`)."""
        found = self._list_raw(vertex_filter(filter_), limit)
        return [self.view(check_shape(j, VERTEX_JOB_SHAPE, "listing Vertex AI jobs")) for j in found]

    def cancel(self, job_id: str) -> None:
        """Ask Vertex AI to cancel the job (idempotent on the service side, so retried)."""
        name = self.resource_name(job_id)
        self._call(
            "cancel", f"cancelling job {job_id}", f"job {job_id!r} not found ({name}).", name=name, body={}
        )


TUNING = "hyperparameterTuningJobs"


class VertexAnyJobs:
    """Custom and tuning jobs of a region as one JobsBackend (``--target vertex``): ids looked up in both."""

    def __init__(self, service: Any, project: str, region: str, caller: Caller | None = None) -> None:
        self.project = project
        self.region = region
        self.custom = VertexJobs(service, project, region, caller)
        self.tuning = VertexJobs(service, project, region, caller, collection=TUNING)

    def _of(self, name: str) -> VertexJobs:  # a resource name says its collection
        return self.tuning if name.startswith("projects/") and f"/{TUNING}/" in name else self.custom

    def _by_label(self, job_id: str) -> str | None:
        """The resource name an mlsubmit job id names across both collections (None: a numeric id)."""
        if job_id.isdigit():
            return None
        found = self.custom.find_all(job_id)
        chosen = pick(found)
        if chosen is None and found:
            raise ApiError(
                f"several live Vertex AI jobs carry job id {job_id!r} (ids {_numbers(found)}); pass the numeric id."
            )
        return str(chosen["name"]) if chosen else None  # find keeps only names of this region

    def create(self, body: dict[str, Any], job_id: str) -> CreateResult:
        """Create ``body`` in its collection: a tuning job has a ``trialJobSpec``, a custom job a ``jobSpec``."""
        return (self.tuning if "trialJobSpec" in body else self.custom).create(body, job_id)

    def get(self, job_id: str) -> dict[str, Any]:
        """The job (either kind), with ``jobId`` and an ml-style ``state``."""
        if name := job_id if job_id.startswith("projects/") else self._by_label(job_id):
            return self._of(name).get(name)
        misses: list[ApiError] = []
        for backend in (self.custom, self.tuning):
            try:
                return backend.get(job_id)
            except ApiError as err:
                if err.status != 404:
                    raise
                misses.append(err)
        raise misses[0] from None  # the custom-job message says how jobs are found

    def list(self, filter_: str | None = None, limit: int | None = None) -> list[dict[str, Any]]:
        """Jobs of both kinds, newest first."""
        found = self.custom.list(filter_, limit) + self.tuning.list(filter_, limit)
        found.sort(key=lambda j: str(j.get("createTime", "")), reverse=True)
        return found[:limit] if limit else found

    def cancel(self, job_id: str) -> None:
        """Cancel the job, whichever kind it is."""
        name = str(self.get(job_id).get("name") or job_id)
        self._of(name).cancel(name)
