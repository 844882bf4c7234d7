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

import contextlib
import datetime as dt
import gzip
import json
import re
import socket
import sys
import threading
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from tests.fakes.logging_api import LogEntries
from tests.fakes.ml_jobs import MlJobs
from tests.fakes.storage_api import StorageObjects, StoredObject, Upload
from tests.fakes.vertex_jobs import VertexJobs
from tests.fakes.wire import (
    ApiError,
    RecordedRequest,
    Response,
    default_error_body,
    google_error,
    permission_denied_body,
    snapshot,
)

_C = r"(?::|%3A)"  # googleapiclient sends ":cancel" literally; tolerate it percent-encoded too
ML_CREATE = r"^/v1/projects/[^/]+/jobs$"
VERTEX_CREATE = r"^/v1/projects/[^/]+/locations/[^/]+/customJobs$"

FaultBody = dict[str, Any] | Callable[[RecordedRequest], dict[str, Any]] | None


@dataclass
class Fault:
    """An injected answer: ``status`` (None drops the connection), before or ``after`` processing."""

    method: str
    pattern: re.Pattern[str]
    status: int | None
    times: int | None  # None: every matching request
    after: bool
    body: FaultBody
    headers: dict[str, str]
    fired: int = 0

    def describe(self) -> str:
        """A short description for the request record."""
        what = "drop" if self.status is None else str(self.status)
        return f"{what} {'after' if self.after else 'before'} processing"


class _HttpServer(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    fake: FakeGoogleApis
    connections: set[socket.socket]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out in two writes; avoid 40 ms delayed-ACK stalls
    server: _HttpServer

    def setup(self) -> None:
        super().setup()
        self.server.connections.add(self.connection)

    def finish(self) -> None:
        self.server.connections.discard(self.connection)
        super().finish()

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the fake records requests instead of logging them."""

    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            body = bytearray()
            while size := int(self.rfile.readline().split(b";")[0].strip() or b"0", 16):
                body += self.rfile.read(size)
                self.rfile.readline()
            while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                pass
        else:
            body = bytearray(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
        if self.headers.get("Content-Encoding", "").lower() == "gzip":
            return gzip.decompress(bytes(body))
        return bytes(body)

    def _handle(self) -> None:
        self.server.fake._dispatch(self, self._read_body())

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _handle


class FakeGoogleApis:
    """A threaded loopback server for ml v1, aiplatform v1, logging v2 and Cloud Storage (uploads).

    All state sits behind one lock; request handlers run one at a time, so tests see a consistent world.
    ``project`` is the default project of the seeding helpers; requests may name any project.
    """

    def __init__(self, *, project: str = "myproj", clock: Callable[[], dt.datetime] | None = None):
        self.project = project
        self.clock = clock or (lambda: dt.datetime.now(dt.timezone.utc))
        self._lock = threading.RLock()
        self._requests: list[RecordedRequest] = []
        self._faults: list[Fault] = []
        self._httpd: _HttpServer | None = None
        self._thread: threading.Thread | None = None
        self.ml = MlJobs(self.clock)
        self.vertex = VertexJobs(self.clock)
        self.logs = LogEntries(self._reached)
        self.storage = StorageObjects(lambda: self.url, self.clock)
        self._routes: list[tuple[str, re.Pattern[str], Callable[..., Response]]] = [
            ("POST", re.compile(ML_CREATE.replace("[^/]+", "([^/]+)")), self.ml.create),
            ("GET", re.compile(r"^/v1/projects/([^/]+)/jobs$"), self.ml.list),
            ("GET", re.compile(r"^/v1/projects/([^/]+)/jobs/([^/:]+)$"), self.ml.get),
            ("POST", re.compile(rf"^/v1/projects/([^/]+)/jobs/([^/:%]+){_C}cancel$"), self.ml.cancel),
            ("POST", re.compile(r"^/v1/(projects/[^/]+/locations/[^/]+)/customJobs$"), self.vertex.create),
            ("GET", re.compile(r"^/v1/(projects/[^/]+/locations/[^/]+)/customJobs$"), self.vertex.list),
            (
                "GET",
                re.compile(r"^/v1/(projects/[^/]+/locations/[^/]+)/customJobs/([^/:]+)$"),
                self.vertex.get,
            ),
            (
                "POST",
                re.compile(rf"^/v1/(projects/[^/]+/locations/[^/]+)/customJobs/([^/:%]+){_C}cancel$"),
                self.vertex.cancel,
            ),
            ("POST", re.compile(rf"^/v2/entries{_C}list$"), self.logs.list),
            # apitools starts resumable uploads on /resumable/upload/..., other clients on /upload/...
            ("POST", re.compile(r"^/(?:resumable/)?upload/storage/v1/b/([^/]+)/o$"), self.storage.insert),
            ("PUT", re.compile(r"^/(?:resumable/)?upload/storage/v1/b/([^/]+)/o$"), self.storage.resume),
            ("GET", re.compile(r"^/storage/v1/b/([^/]+)$"), self.storage.get_bucket),
            ("GET", re.compile(r"^/storage/v1/b/([^/]+)/o$"), self.storage.list_objects),
            ("GET", re.compile(r"^/storage/v1/b/([^/]+)/o/(.+)$"), self.storage.get_object),
            ("GET", re.compile(r"^/download/storage/v1/b/([^/]+)/o/(.+)$"), self.storage.get_object),
            ("DELETE", re.compile(r"^/storage/v1/b/([^/]+)/o/(.+)$"), self.storage.delete_object),
        ]

    # -- lifecycle ---------------------------------------------------------------------------------------
    def start(self) -> FakeGoogleApis:
        """Bind 127.0.0.1 on a free port and serve in a background thread."""
        if self._httpd is not None:
            return self
        httpd = _HttpServer(("127.0.0.1", 0), _Handler)
        httpd.fake = self
        httpd.connections = set()
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": 0.02}, name="FakeGoogleApis", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close every open connection."""
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        httpd.shutdown()
        for conn in list(httpd.connections):
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        httpd.server_close()
        if self._thread is not None:
            self._thread.join()

    def __enter__(self) -> FakeGoogleApis:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        """The bound port (the server must be started)."""
        if self._httpd is None:
            raise RuntimeError("FakeGoogleApis is not started")
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        """Base URL with a trailing slash, e.g. ``http://127.0.0.1:PORT/``."""
        return f"http://127.0.0.1:{self.port}/"

    # -- recording ---------------------------------------------------------------------------------------
    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request so far, in arrival order (copies)."""
        with self._lock:
            return snapshot(self._requests)

    def requests_matching(
        self, method: str | None = None, path_regex: str | None = None
    ) -> list[RecordedRequest]:
        """Recorded requests with ``method`` (any if None) whose path matches ``path_regex`` (re.search)."""
        pattern = re.compile(path_regex) if path_regex else None
        return [
            r
            for r in self.requests
            if (method is None or r.method == method.upper()) and (pattern is None or pattern.search(r.path))
        ]

    def clear_requests(self) -> None:
        """Forget the recorded requests (state and faults stay)."""
        with self._lock:
            self._requests.clear()

    # -- faults ------------------------------------------------------------------------------------------
    def inject(
        self,
        method: str,
        path_regex: str,
        status: int,
        times: int | None = 1,
        after: bool = False,
        body: FaultBody = None,
        headers: dict[str, str] | None = None,
    ) -> Fault:
        """Answer the next ``times`` matching requests with ``status`` (``times=None``: all of them).

        ``after=False`` answers without processing; ``after=True`` processes the request (the job IS created)
        and then answers ``status`` instead — a lost answer. ``body`` defaults to Google's error format; it may
        be a function of the request. ``method`` ``"*"`` matches any; the regex is searched in the path.
        """
        fault = Fault(method.upper(), re.compile(path_regex), status, times, after, body, dict(headers or {}))
        with self._lock:
            self._faults.append(fault)
        return fault

    def inject_drop(self, method: str, path_regex: str, times: int | None = 1, after: bool = False) -> Fault:
        """Close the connection without any answer (before or ``after`` processing the request)."""
        fault = Fault(method.upper(), re.compile(path_regex), None, times, after, None, {})
        with self._lock:
            self._faults.append(fault)
        return fault

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

    def pending_faults(self) -> list[Fault]:
        """Faults that have not used up their ``times`` yet."""
        with self._lock:
            return [f for f in self._faults if f.times is None or f.fired < f.times]

    def _take_fault(self, method: str, path: str) -> Fault | None:
        for fault in self._faults:
            if fault.times is not None and fault.fired >= fault.times:
                continue
            if fault.method in ("*", method) and fault.pattern.search(path):
                fault.fired += 1
                return fault
        return None

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

    def script_custom_job(
        self, key: str, states: list[str] | None = None, error_message: str | None = None
    ) -> None:
        """Script the custom job whose numeric id or ``displayName`` is ``key`` (also for jobs created later)."""
        with self._lock:
            self.vertex.script(key, states, error_message)

    # -- logging v2 --------------------------------------------------------------------------------------
    def _reached(self, job_id: str, state: str) -> bool:
        job = self.ml.find(job_id) or self.vertex.find(job_id)
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

    # -- request handling --------------------------------------------------------------------------------
    def _route(self, request: RecordedRequest) -> Response:
        known_path = False
        for method, pattern, handler in self._routes:
            match = pattern.match(request.path)
            if match is None:
                continue
            known_path = True
            if method == request.method:
                return handler(request, *(unquote(g) for g in match.groups()))
        if known_path:
            raise ApiError(405, f"Method {request.method} not allowed on {request.path}.", "UNIMPLEMENTED")
        raise ApiError(404, f"The fake has no route for {request.method} {request.path}.", "NOT_FOUND")

    def _dispatch(self, handler: _Handler, body: bytes) -> None:
        split = urlsplit(handler.path)
        headers = {k.lower(): v for k, v in handler.headers.items()}
        request = RecordedRequest(handler.command, split.path, parse_qs(split.query), headers, body)
        bad_json = False
        if body and "json" in headers.get("content-type", ""):
            try:
                request.json = json.loads(body)
            except ValueError:
                bad_json = True
        with self._lock:
            self._requests.append(request)
            fault = self._take_fault(request.method, request.path)
        if fault is not None and not fault.after:
            self._answer_fault(handler, request, fault)
            return
        with self._lock:
            try:
                if bad_json:
                    raise ApiError(400, "Invalid JSON payload received. Unexpected token.")
                response = self._route(request)
            except ApiError as exc:
                response = Response(exc.code, exc.body)
            except Exception as exc:  # a bug in the fake: answer 500 and show it
                traceback.print_exc(file=sys.stderr)
                response = Response(500, google_error(500, f"Fake server bug: {exc!r}"))
        if fault is not None:
            self._answer_fault(handler, request, fault)
        else:
            request.status = response.status
            self._write(handler, response)

    def _answer_fault(self, handler: _Handler, request: RecordedRequest, fault: Fault) -> None:
        request.fault = fault.describe()
        if fault.status is None:
            handler.close_connection = True
            return
        request.status = fault.status
        body = fault.body(request) if callable(fault.body) else fault.body
        self._write(
            handler, Response(fault.status, body or default_error_body(fault.status), headers=fault.headers)
        )

    @staticmethod
    def _write(handler: _Handler, response: Response) -> None:
        if response.raw is not None:
            payload = response.raw
        else:
            payload = json.dumps(response.json if response.json is not None else {}).encode()
        handler.send_response(response.status)
        handler.send_header("Content-Type", response.content_type)
        handler.send_header("Content-Length", str(len(payload)))
        for name, value in response.headers.items():
            handler.send_header(name, value)
        handler.end_headers()
        if handler.command != "HEAD":
            handler.wfile.write(payload)
