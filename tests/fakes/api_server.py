"""``FakeGoogleApis``: one loopback HTTP server speaking ml v1, aiplatform v1, logging v2 and Cloud Storage uploads.

Every request is recorded; faults can be injected before or after the request is processed; jobs move through
scripted states, one step per GET. Usage::

    with FakeGoogleApis() as server:
        server.script_job("j1", ["QUEUED", "RUNNING", "FAILED"], error_message="OOM")
        server.inject("POST", r"/jobs$", 503, times=2)          # two 503s, then the create goes through
        ... point a client at server.url ...
        assert server.jobs["j1"]["state"] == "QUEUED"
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tests.fakes.logging_api import LogEntries
from tests.fakes.loopback import Fault, LoopbackServer
from tests.fakes.ml_jobs import MlJobs
from tests.fakes.preflight_apis import PreflightApis
from tests.fakes.storage_api import StorageObjects, StoredObject, Upload
from tests.fakes.vertex_jobs import VertexJobs
from tests.fakes.wire import RecordedRequest, google_error, permission_denied_body, snapshot

_C = r"(?::|%3A)"  # googleapiclient sends ":cancel" literally; tolerate it percent-encoded too
ML_CREATE = r"^/v1/projects/[^/]+/jobs$"
VERTEX_CREATE = r"^/v1/projects/[^/]+/locations/[^/]+/customJobs$"
VERTEX_TUNING_CREATE = r"^/v1/projects/[^/]+/locations/[^/]+/hyperparameterTuningJobs$"
_PARENT = r"(projects/[^/]+/locations/[^/]+)"


class FakeGoogleApis(LoopbackServer):
    """A threaded loopback server for ml v1, aiplatform v1, logging v2 and Cloud Storage (uploads).

    All state sits behind one lock; request handlers run one at a time, so tests see a consistent world.
    ``project`` is the default project of the seeding helpers; requests may name any project.
    """

    def __init__(self, *, project: str = "myproj", clock: Callable[[], dt.datetime] | None = None):
        super().__init__()
        self.project = project
        self.clock = clock or (lambda: dt.datetime.now(dt.timezone.utc))
        self.ml = MlJobs(self.clock)
        self.vertex = VertexJobs(self.clock)
        self.vertex_tuning = VertexJobs(self.clock, "hyperparameterTuningJobs")
        self.logs = LogEntries(self._reached)
        self.storage = StorageObjects(lambda: self.url, self.clock)
        routes: list[tuple[str, str, Callable[..., Any]]] = [
            ("POST", r"^/v1/projects/([^/]+)/jobs$", self.ml.create),
            ("GET", r"^/v1/projects/([^/]+)/jobs$", self.ml.list),
            ("GET", r"^/v1/projects/([^/]+)/jobs/([^/:]+)$", self.ml.get),
            ("POST", rf"^/v1/projects/([^/]+)/jobs/([^/:%]+){_C}cancel$", self.ml.cancel),
            ("POST", rf"^/v1/{_PARENT}/customJobs$", self.vertex.create),
            ("GET", rf"^/v1/{_PARENT}/customJobs$", self.vertex.list),
            ("GET", rf"^/v1/{_PARENT}/customJobs/([^/:]+)$", self.vertex.get),
            ("POST", rf"^/v1/{_PARENT}/customJobs/([^/:%]+){_C}cancel$", self.vertex.cancel),
            ("POST", rf"^/v1/{_PARENT}/hyperparameterTuningJobs$", self.vertex_tuning.create),
            ("GET", rf"^/v1/{_PARENT}/hyperparameterTuningJobs$", self.vertex_tuning.list),
            ("GET", rf"^/v1/{_PARENT}/hyperparameterTuningJobs/([^/:]+)$", self.vertex_tuning.get),
            (
                "POST",
                rf"^/v1/{_PARENT}/hyperparameterTuningJobs/([^/:%]+){_C}cancel$",
                self.vertex_tuning.cancel,
            ),
            ("POST", rf"^/v2/entries{_C}list$", self.logs.list),
            # apitools starts resumable uploads on /resumable/upload/..., other clients on /upload/...
            ("POST", r"^/(?:resumable/)?upload/storage/v1/b/([^/]+)/o$", self.storage.insert),
            ("PUT", r"^/(?:resumable/)?upload/storage/v1/b/([^/]+)/o$", self.storage.resume),
            ("GET", r"^/storage/v1/b/([^/]+)$", self.storage.get_bucket),
            ("GET", r"^/storage/v1/b/([^/]+)/o$", self.storage.list_objects),
            ("GET", r"^/storage/v1/b/([^/]+)/o/(.+)$", self.storage.get_object),
            ("GET", r"^/download/storage/v1/b/([^/]+)/o/(.+)$", self.storage.get_object),
            ("DELETE", r"^/storage/v1/b/([^/]+)/o/(.+)$", self.storage.delete_object),
        ]
        for method, regex, handler in routes:
            self.add_route(method, regex, handler)
        # the preflight's reads: serviceusage, iam, cloudkms, bucket permissions (all in order by default)
        self.preflight = PreflightApis.install(self)

    def body_sink(self, handler: BaseHTTPRequestHandler) -> Any:
        """Large resumable-upload bodies are hashed as they arrive, as Cloud Storage does (StorageObjects.body_sink)."""
        split = urlsplit(handler.path)
        if not re.fullmatch(r"/(?:resumable/)?upload/storage/v1/b/[^/]+/o", split.path):
            return None
        with self._lock:
            return self.storage.body_sink(
                handler.command, split.path, parse_qs(split.query), handler.headers.get("Content-Range", "")
            )

    def inject_permission_denied(
        self,
        permission: str = "ml.jobs.create",
        method: str = "POST",
        path_regex: str = ML_CREATE,
        times: int | None = 1,
    ) -> Fault:
        """Answer 403 PERMISSION_DENIED naming ``permission`` and the project of the request."""

        def body(request: RecordedRequest) -> dict[str, Any]:
            match = re.search(r"/projects/([^/]+)", request.path)
            project = match.group(1) if match else self.project
            return permission_denied_body(permission, f"projects/{project}")

        return self.inject(method, path_regex, 403, times=times, body=body)

    # -- ml v1 -------------------------------------------------------------------------------------------
    @property
    def job_bodies(self) -> list[dict[str, Any]]:
        """The JSON bodies of every ml ``jobs.create`` request, as sent (also rejected or faulted ones)."""
        return [r.json for r in self.requests_matching("POST", ML_CREATE)]

    @property
    def jobs(self) -> dict[str, dict[str, Any]]:
        """Stored ml jobs by job id (reading them here does not advance their scripts)."""
        with self._lock:
            return {job_id: snapshot(job.resource) for (_, job_id), job in self.ml.jobs.items()}

    def job(self, job_id: str) -> dict[str, Any] | None:
        """The stored ml job ``job_id`` (without advancing it), or None."""
        return self.jobs.get(job_id)

    @property
    def default_job_states(self) -> list[str]:
        """States of unscripted ml jobs; default QUEUED, PREPARING, RUNNING, SUCCEEDED."""
        return list(self.ml.default_states)

    @default_job_states.setter
    def default_job_states(self, states: list[str]) -> None:
        with self._lock:
            self.ml.default_states = list(states)

    def add_job(self, resource: dict[str, Any], project: str | None = None) -> dict[str, Any]:
        """Seed an existing ml job (no validation). A ``state`` in it pins the job there unless scripted."""
        with self._lock:
            return self.ml.add(project or self.project, resource)

    def script_job(
        self, job_id: str, states: list[str] | None = None, error_message: str | None = None
    ) -> None:
        """Make ml job ``job_id`` go through ``states``, one per GET; ``error_message`` for FAILED/CANCELLED.

        Works before the job exists (applies on create) and after (restarts the job at ``states[0]``).
        """
        with self._lock:
            self.ml.script(job_id, states, error_message)

    # -- aiplatform v1 -----------------------------------------------------------------------------------
    @property
    def tuning_job_bodies(self) -> list[dict[str, Any]]:
        """The JSON bodies of every ``hyperparameterTuningJobs.create`` request, as sent."""
        return [r.json for r in self.requests_matching("POST", VERTEX_TUNING_CREATE)]

    @property
    def tuning_jobs(self) -> dict[str, dict[str, Any]]:
        """Stored hyperparameter tuning jobs by numeric id (reading them does not advance their scripts)."""
        with self._lock:
            return {job_id: snapshot(job.resource) for job_id, job in self.vertex_tuning.jobs.items()}

    def add_tuning_job(
        self, resource: dict[str, Any], project: str | None = None, region: str = "us-central1"
    ) -> dict[str, Any]:
        """Seed an existing tuning job (no validation, ``trials`` included); returns it with its ``name``."""
        with self._lock:
            return self.vertex_tuning.add(f"projects/{project or self.project}/locations/{region}", resource)

    @property
    def custom_job_bodies(self) -> list[dict[str, Any]]:
        """The JSON bodies of every ``customJobs.create`` request, as sent."""
        return [r.json for r in self.requests_matching("POST", VERTEX_CREATE)]

    @property
    def custom_jobs(self) -> dict[str, dict[str, Any]]:
        """Stored custom jobs by numeric id (reading them here does not advance their scripts)."""
        with self._lock:
            return {job_id: snapshot(job.resource) for job_id, job in self.vertex.jobs.items()}

    @property
    def default_custom_job_states(self) -> list[str]:
        """States of unscripted custom jobs; default JOB_STATE_QUEUED, _PENDING, _RUNNING, _SUCCEEDED."""
        return list(self.vertex.default_states)

    @default_custom_job_states.setter
    def default_custom_job_states(self, states: list[str]) -> None:
        with self._lock:
            self.vertex.default_states = list(states)

    def add_custom_job(
        self, resource: dict[str, Any], project: str | None = None, region: str = "us-central1"
    ) -> dict[str, Any]:
        """Seed an existing custom job (no validation); returns it with its assigned ``name``."""
        with self._lock:
            return self.vertex.add(f"projects/{project or self.project}/locations/{region}", resource)

    def script_region(
        self,
        region: str,
        states: list[str] | None = None,
        error_message: str | None = None,
        *,
        create_error: tuple[int, str] | None = None,
    ) -> None:
        """Script what Vertex AI does in ``region`` (capacity differs by region): jobs created there go through
        ``states`` (``error_message`` when they FAIL), or every create there is answered ``create_error``
        (status, message), e.g. ``(429, "The following quota metrics exceed quota limits: ...")``."""
        if create_error is not None:
            code, message = create_error
            body = google_error(code, message)
            for collection in ("customJobs", "hyperparameterTuningJobs"):
                self.inject(
                    "POST", rf"/locations/{re.escape(region)}/{collection}$", code, times=None, body=body
                )
        if states is not None:
            with self._lock:
                for jobs in (self.vertex, self.vertex_tuning):
                    jobs.region_scripts[region] = (list(states), error_message)

    def hold_vertex_creates(self, parties: int) -> None:
        """Hold Vertex creates (custom and tuning jobs) until ``parties`` have arrived: commands racing with one
        job id have all passed their "is the id free?" look before any job exists, whatever the interleaving."""
        self.hold("POST", f"{VERTEX_CREATE}|{VERTEX_TUNING_CREATE}", parties)

    def script_custom_job(
        self, key: str, states: list[str] | None = None, error_message: str | None = None
    ) -> None:
        """Script the custom job whose numeric id or ``displayName`` is ``key`` (also for jobs created later)."""
        with self._lock:
            self.vertex.script(key, states, error_message)

    # -- logging v2 --------------------------------------------------------------------------------------
    def _reached(self, job_id: str, state: str) -> bool:
        job = self.ml.find(job_id) or self.vertex.find(job_id) or self.vertex_tuning.find(job_id)
        return job is not None and job.lifecycle.reached(state)

    def add_log_entries(
        self,
        job_id: str,
        entries: list[dict[str, Any]],
        *,
        when_state: str | None = None,
        after_list_calls: int = 0,
        project: str | None = None,
    ) -> list[dict[str, Any]]:
        """Add Cloud Logging entries for ``job_id`` (ml job id or custom job numeric id).

        Missing ``insertId``, ``timestamp`` (increasing, in 2024), ``severity`` (INFO), ``logName`` and
        ``resource`` (``ml_job`` with job_id/task_name labels) are filled in. ``when_state``: hidden until the
        job has reached that state; ``after_list_calls=N``: hidden from the first N ``entries:list`` calls
        whose filter names the job. Returns the stored entries.
        """
        with self._lock:
            return self.logs.add(
                job_id,
                entries,
                project=project or self.project,
                when_state=when_state,
                after_list_calls=after_list_calls,
            )

    def add_log_lines(
        self,
        job_id: str,
        lines: list[str],
        *,
        task_name: str = "master-replica-0",
        severity: str = "INFO",
        when_state: str | None = None,
        after_list_calls: int = 0,
    ) -> list[dict[str, Any]]:
        """Shorthand: one ``jsonPayload.message`` entry per line, from ``task_name``."""
        entries = [
            {
                "severity": severity,
                "jsonPayload": {"message": line},
                "resource": {"type": "ml_job", "labels": {"job_id": job_id, "task_name": task_name}},
            }
            for line in lines
        ]
        return self.add_log_entries(job_id, entries, when_state=when_state, after_list_calls=after_list_calls)

    # -- storage -----------------------------------------------------------------------------------------
    @property
    def uploads(self) -> list[Upload]:
        """Every finished upload, in order."""
        with self._lock:
            return list(self.storage.uploads)

    @property
    def uploaded_bytes(self) -> int:
        """Request body bytes received on upload endpoints (what a "zero bytes re-sent" test checks)."""
        return sum(len(r.body) for r in self.requests_matching(None, r"^/(resumable/)?upload/"))

    @property
    def objects(self) -> dict[str, StoredObject]:
        """Stored objects by ``gs://bucket/name``."""
        with self._lock:
            return {f"gs://{b}/{n}": o for (b, n), o in self.storage.objects.items()}

    def put_object(
        self, uri: str, data: bytes, content_type: str = "application/octet-stream"
    ) -> StoredObject:
        """Seed object ``gs://bucket/name`` (not counted as an upload)."""
        bucket, _, name = uri.removeprefix("gs://").partition("/")
        with self._lock:
            return self.storage.put(bucket, name, data, content_type)

    def remove_bucket(self, bucket: str) -> None:
        """Make ``bucket`` not exist: its reads and uploads answer 404."""
        with self._lock:
            self.storage.missing_buckets.add(bucket)
