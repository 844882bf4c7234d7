"""Vertex AI custom and tuning jobs as a JobsBackend, named by id, resource name or mlsubmit job id. ``create``
never makes two jobs: a retry first looks for an unanswered attempt's job, and a newer duplicate is cancelled."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from mlsubmit.errors import ApiError, ServiceAnswerError, UsageError
from mlsubmit.job.vocab import JOB_ID_LABEL, job_id_label
from mlsubmit.services.answers import VERTEX_JOB_SHAPE, check_shape, excerpt, need_job, shorten
from mlsubmit.services.backends import TERMINAL_STATES, CreateResult
from mlsubmit.services.classifier import detail_types, is_quota
from mlsubmit.services.compare import CUSTOM_JOB, TUNING_JOB, is_same_job
from mlsubmit.services.ml import Answered, Caller, error_details, error_payload, id_taken, iter_pages

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
    number = str(job.get("name", "")).rsplit("/", 1)[-1]
    return str(job.get("createTime", "")), int(number) if number.isdigit() else 0


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


def pick(found: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The job an mlsubmit job id names among the jobs carrying it: the only one, else the one still live (a
    duplicate that lost a race, or a failover attempt, has ended), else the newest; None when several are live."""
    if len(found) <= 1:
        return found[0] if found else None
    live = [j for j in found if is_live(j)]
    if len(live) > 1:
        return None
    return live[0] if live else max(found, key=age_key)


# collection -> the discovery schema "is this the job we sent?" compares against
COLLECTION_SCHEMAS = {"customJobs": CUSTOM_JOB, "hyperparameterTuningJobs": TUNING_JOB}


class VertexJobs:
    """The Vertex AI job calls of one project, region and collection (custom or hyperparameter tuning jobs)."""

    def __init__(
        self,
        service: Any,
        project: str,
        region: str,
        caller: Caller | None = None,
        collection: str = "customJobs",
    ) -> None:
        self.service = service
        self.collection = collection
        self.PERMISSION = f"aiplatform.{collection}"
        self.project = project
        self.region = region
        self.caller = caller or Caller()
        self.parent = f"projects/{project}/locations/{region}"
        self._names: dict[str, str] = {}  # mlsubmit job id -> resource name, once found

    @property
    def _jobs(self) -> Any:
        return getattr(self.service.projects().locations(), self.collection)()

    def view(self, job: dict[str, Any]) -> dict[str, Any]:
        """The job as `jobs` commands show it: jobId and an ml-style state first, then the CustomJob."""
        number = str(job.get("name", "")).rsplit("/", 1)[-1]
        display = str(job.get("displayName") or "")
        ours = _labels(job).get(JOB_ID_LABEL) == job_id_label(display) if display else False
        out: dict[str, Any] = {"jobId": display if ours else number, "state": ml_state(job.get("state"))}
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

    def collections(self) -> list[VertexJobs]:
        """This collection and the other one of the same region: one job id names one job across both."""
        others = [c for c in COLLECTION_SCHEMAS if c != self.collection]
        return [self, *(VertexJobs(self.service, self.project, self.region, self.caller, c) for c in others)]

    def find_all(self, job_id: str) -> list[dict[str, Any]]:
        """The custom jobs and tuning jobs submitted as ``job_id`` in this region, newest first."""
        found = [job for backend in self.collections() for job in backend.find(job_id)]
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
        attempts = 0
        recovered: list[dict[str, Any]] = []

        def make_request() -> Any:
            nonlocal attempts
            attempts += 1
            # The previous attempt failed or went unanswered: it may still have created the job.
            if attempts > 1 and (earlier := self.find(job_id)):
                if not is_same_job(COLLECTION_SCHEMAS[self.collection], body, earlier[0]):
                    raise ApiError(
                        f"a different Vertex AI job {earlier[0].get('name')} appeared with job id {job_id!r} "
                        "while we were creating ours; not creating another. Choose another JOB id.",
                        status=409,
                    )
                recovered.append(earlier[0])
                return Answered(earlier[0])
            return self._jobs.create(parent=self.parent, body=body)

        def on_status(status: int, err: Exception, _attempt: int) -> Any:
            if is_quota(status, error_details(err)[2], detail_types(error_payload(err))):
                raise err  # a quota limit below the request: another try would be answered the same
            return None

        what = f"creating Vertex AI job {job_id}"
        job = self.caller.checked(
            make_request, what, self.project, f"{self.PERMISSION}.create", on_status=on_status
        )
        # A 200 with an HTML page (a proxy, a portal) or any other shape is no job: never "submitted".
        job = need_job(job, what, shape=VERTEX_JOB_SHAPE)
        if recovered:
            self.caller.notify(
                f"an earlier attempt created Vertex AI job {job.get('name')}; not creating another"
            )
        self._remember_name(job_id, self._placed_here(job, job_id), what)
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
            ids = ", ".join(str(j.get("name", "")).rsplit("/", 1)[-1] for j in found)
            raise ApiError(
                f"several Vertex AI jobs were submitted as {job_id!r} (ids {ids}); pass the numeric id."
            )
        return self._remember_name(job_id, chosen, f"finding job {job_id}")

    def _here(self, name: str) -> bool:
        """``name`` names a job of this collection in this project (or its number) and region."""
        if not RESOURCE_NAME.fullmatch(name):
            return False
        _, project, _, region, collection, _ = name.split("/")
        same_project = project == self.project or (project.isdigit() and not self.project.isdigit())
        return same_project and region == self.region and collection == self.collection

    def _placed_here(self, job: dict[str, Any], job_id: str) -> dict[str, Any]:
        """``job`` if the answer names a job here; one elsewhere is never read, watched or cancelled."""
        name = str(job.get("name") or "")
        if self._here(name):
            return job
        raise ServiceAnswerError(
            f"creating Vertex AI job {job_id}: the service answered with the job {excerpt(name)}, not one in "
            f"{self.parent}/{self.collection}; not taking it for ours (it is neither watched nor cancelled). "
            f"Whether ours was created, check with `mlsubmit jobs describe {job_id} --target vertex --region "
            f"{self.region}`."
        )

    def _remember_name(self, job_id: str, job: Mapping[str, Any], doing: str) -> str:
        """The job's resource name, kept for ``job_id``; a name of another shape is never used in a request."""
        name = str(job.get("name") or "")
        if not RESOURCE_NAME.fullmatch(name):
            raise ServiceAnswerError(
                f"{doing}: the service named the job {excerpt(name)}, not "
                "projects/P/locations/R/customJobs/N; not using that name in a request."
            )
        self._names[job_id] = name
        return name

    def get(self, job_id: str) -> dict[str, Any]:
        """Read a job (retried: reads are safe) and present it ml-style."""
        name = self.resource_name(job_id)
        what, gone = f"reading job {job_id}", f"job {job_id!r} not found ({name})."
        job = self.caller.checked(
            lambda: self._jobs.get(name=name), what, self.project, f"{self.PERMISSION}.get", gone
        )
        return self.view(need_job(job, what, shape=VERTEX_JOB_SHAPE))

    def _list_raw(self, filter_: str | None, limit: int | None) -> list[dict[str, Any]]:
        return list(
            iter_pages(
                self.caller,
                self._jobs.list,
                {"parent": self.parent, "filter": filter_},
                items=self.collection,
                what="listing Vertex AI jobs",
                project=self.project,
                permission=f"{self.PERMISSION}.list",
                limit=limit,
            )
        )

    def list(self, filter_: str | None = None, limit: int | None = None) -> list[dict[str, Any]]:
        """Jobs of the region, ml-style (``filter_`` may use ml spellings, see :func:`vertex_filter`)."""
        found = self._list_raw(vertex_filter(filter_), limit)
        return [self.view(check_shape(j, VERTEX_JOB_SHAPE, "listing Vertex AI jobs")) for j in found]

    def cancel(self, job_id: str) -> None:
        """Ask Vertex AI to cancel the job (idempotent on the service side, so retried)."""
        name = self.resource_name(job_id)
        self.caller.checked(
            lambda: self._jobs.cancel(name=name, body={}),
            f"cancelling job {job_id}",
            self.project,
            f"{self.PERMISSION}.cancel",
            f"job {job_id!r} not found ({name}).",
        )


TUNING = "hyperparameterTuningJobs"


class VertexAnyJobs:
    """Both job collections of a region as one JobsBackend (``jobs ... --target vertex``): a numeric id is looked
    up among custom jobs, then tuning jobs; an mlsubmit job id in both at once (``pick``)."""

    def __init__(self, service: Any, project: str, region: str, caller: Caller | None = None) -> None:
        self.project = project
        self.region = region
        self.custom = VertexJobs(service, project, region, caller)
        self.tuning = VertexJobs(service, project, region, caller, collection=TUNING)

    def _backend_for(self, job_id: str) -> VertexJobs | None:  # a resource name says its collection
        if not job_id.startswith("projects/"):
            return None
        return self.tuning if f"/{TUNING}/" in job_id else self.custom

    def _by_label(self, job_id: str) -> str | None:
        """The resource name an mlsubmit job id names across both collections (None: a numeric id)."""
        if job_id.isdigit():
            return None
        found = self.custom.find_all(job_id)
        chosen = pick(found)
        if chosen is None and found:
            ids = ", ".join(str(j.get("name", "")).rsplit("/", 1)[-1] for j in found)
            raise ApiError(
                f"several live Vertex AI jobs carry job id {job_id!r} (ids {ids}); pass the numeric id."
            )
        name = str((chosen or {}).get("name") or "")
        return name if RESOURCE_NAME.fullmatch(name) else None

    def create(self, body: dict[str, Any], job_id: str) -> CreateResult:
        """Create ``body`` in its collection: a tuning job has a ``trialJobSpec``, a custom job a ``jobSpec``."""
        return (self.tuning if "trialJobSpec" in body else self.custom).create(body, job_id)

    def get(self, job_id: str) -> dict[str, Any]:
        """The job (either kind), with ``jobId`` and an ml-style ``state``."""
        if not job_id.startswith("projects/"):
            job_id = self._by_label(job_id) or job_id
        known = self._backend_for(job_id)
        if known is not None:
            return known.get(job_id)
        try:
            return self.custom.get(job_id)
        except ApiError as err:
            if err.status != 404:
                raise
            try:
                return self.tuning.get(job_id)
            except ApiError as tuning_err:
                if tuning_err.status != 404:
                    raise
                raise err from None  # the custom-job message says how jobs are found

    def list(self, filter_: str | None = None, limit: int | None = None) -> list[dict[str, Any]]:
        """Jobs of both kinds, newest first."""
        found = self.custom.list(filter_, limit) + self.tuning.list(filter_, limit)
        found.sort(key=lambda j: str(j.get("createTime", "")), reverse=True)
        return found[:limit] if limit else found

    def cancel(self, job_id: str) -> None:
        """Cancel the job, whichever kind it is."""
        job = self.get(job_id)
        backend = self._backend_for(str(job.get("name", ""))) or self.custom
        backend.cancel(str(job.get("name") or job_id))
