"""The :class:`Handle` of a submitted job (docs/api.md): five strings that survive a JSON round trip, checked whole
when made. No token and no endpoint (an edited handle can never send a credential to a host of its choosing); a
TFJob's holds the kubeconfig context and namespace where a Google job's holds the project and region."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import closing, contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mlsubmit.errors import JobEndedError, UsageError
from mlsubmit.job.values import url_value_problem

if TYPE_CHECKING:
    from mlsubmit.services.settings import Settings

HANDLE_VERSION = 1
MAX_HANDLE_CHARS = 4096  # a handle is five short strings; anything longer was not written by to_json


def log() -> Any:
    """The ``mlsubmit.api`` logger: the API prints nothing, its status lines go there."""
    import logging  # a dry run never logs and does not load it

    return logging.getLogger("mlsubmit.api")


@dataclass(frozen=True)
class Connection:
    """How this process reaches Google (``--access-token-file``, ``--api-endpoint``); None: the environment's
    (``CLOUDSDK_AUTH_ACCESS_TOKEN``, ADC, ``CLOUDSDK_API_ENDPOINT_OVERRIDES_*``). Never part of a handle's JSON."""

    access_token_file: str | None = None
    api_endpoint: str | None = None

    def settings(
        self, target: str, project: str | None, region: str | None, notify: Callable[[str], None]
    ) -> Settings:
        """The connection settings of a job's commands (these flags, then the environment); close them after."""
        from mlsubmit.services.settings import Settings

        return Settings.from_flags(
            dict(os.environ), target=target, project=project, region=region, notify=notify, **vars(self)
        )


def vertex_ref(job: str) -> bool:
    """A Vertex AI job's numeric id or resource name, which `jobs` commands and :func:`attach` take beside a job id."""
    from mlsubmit.services.vertex import RESOURCE_NAME

    return (job.isascii() and job.isdigit() and len(job) <= 30) or bool(RESOURCE_NAME.fullmatch(job))


@dataclass(frozen=True)
class JobStatus:
    """A job as one read found it: ``state`` in ml spelling (QUEUED ... SUCCEEDED, FAILED, CANCELLED), the
    service's error message, and the whole resource as the `jobs` commands show it."""

    job_id: str
    state: str
    error_message: str | None = None
    resource: Mapping[str, Any] = field(default_factory=dict, repr=False)

    @property
    def done(self) -> bool:
        from mlsubmit.services.backends import TERMINAL_STATES  # not on a dry run's path

        return self.state in TERMINAL_STATES

    @property
    def succeeded(self) -> bool:
        return self.state == "SUCCEEDED"

    @classmethod
    def of(cls, job: Mapping[str, Any], job_id: str) -> JobStatus:
        error = job.get("errorMessage")
        return cls(str(job.get("jobId") or job_id), str(job.get("state") or "STATE_UNSPECIFIED"),
                   str(error) if error else None, dict(job))  # fmt: skip


def _handle_problem(job_id: Any, target: Any, project: Any, region: Any, name: Any) -> str | None:
    """Why these fields are not one job a submit could have made (an edited or foreign handle), or None."""
    if target == "kubernetes":
        return url_value_problem("job id", job_id) or _cluster_problem(job_id, project, region, name)
    if target not in ("ml", "vertex"):
        return f"target {str(target)[:20]!r} is not ml, vertex or kubernetes"
    checks = [("job id", job_id), ("project", project)] + ([("region", region)] if target == "vertex" else [])
    for kind, value in checks:
        if problem := url_value_problem(kind, value):
            return problem
    if target == "ml":
        expected = region is None and name == f"projects/{project}/jobs/{job_id}"
        return None if expected else f"name is not projects/{project}/jobs/{job_id} (with no region)"
    from mlsubmit.services.vertex import RESOURCE_NAME

    prefix = f"projects/{project}/locations/{region}/"
    if not (isinstance(name, str) and RESOURCE_NAME.fullmatch(name) and name.startswith(prefix)):
        return f"name is not a Vertex AI job of project {project} in {region} ({prefix}customJobs/N)"
    return None


def _cluster_problem(job_id: Any, context: Any, namespace: Any, name: Any) -> str | None:
    """A TFJob's handle: ``project`` is the context, ``region`` the namespace, ``name`` ``tfjobs/NAME``."""
    from mlsubmit.services.kubernetes.kubeconfig import namespace_problem
    from mlsubmit.targets.tfjob import k8s_name

    if not (isinstance(context, str) and 0 < len(context) <= 253 and context.isprintable()):
        return "context is not a kubeconfig context name (1 to 253 printable characters)"
    if not isinstance(namespace, str) or namespace_problem(namespace):
        return f"namespace {str(namespace)[:80]!r} is not a namespace name"
    expected = [f"{plural}/{k8s_name(job_id)}" for plural in ("tfjobs", "pytorchjobs")]
    if name not in expected:
        return f"name is not {expected[0]} (or {expected[1]})"
    return None


@dataclass(frozen=True)
class Handle:
    """One submitted job: ``status()`` (one read, no sleep), ``wait()``, ``logs()``, ``cancel()``. Built by
    :func:`submit`, :func:`attach` or :meth:`from_json`; checked whole when made, so an edited handle (another
    project's job name, an unknown version) is refused before any call. The connection is this process's own."""

    job_id: str
    target: str
    project: str
    region: str | None
    name: str  # ml: projects/P/jobs/ID; Vertex AI: projects/P/locations/R/customJobs/N (or a tuning job)
    connection: Connection = field(default=Connection(), compare=False, repr=False)

    def __post_init__(self) -> None:
        if problem := _handle_problem(self.job_id, self.target, self.project, self.region, self.name):
            raise UsageError(f"job handle: {problem}; refusing a handle mlsubmit did not write.")

    def to_json(self) -> str:
        """The handle as one JSON object (no token, no endpoint): pass it on as an XCom or a KFP output."""
        import json

        place = ("context", "namespace") if self.target == "kubernetes" else ("project", "region")
        values = (HANDLE_VERSION, self.job_id, self.target, self.project, self.region, self.name)
        fields = zip(("mlsubmit_handle", "job_id", "target", *place, "name"), values, strict=True)
        return json.dumps(dict(fields), sort_keys=True)

    @classmethod
    def from_json(cls, text: str | bytes, connection: Connection | None = None) -> Handle:
        """The handle :meth:`to_json` wrote, checked whole (UsageError otherwise); ``connection``: how this
        process reaches Google (default: its environment)."""
        import json

        if not isinstance(text, str | bytes) or len(text) > MAX_HANDLE_CHARS:
            raise UsageError(
                f"job handle: expected the JSON text Handle.to_json wrote (<= {MAX_HANDLE_CHARS} chars)."
            )
        try:
            data = json.loads(text)
        except (ValueError, RecursionError) as err:  # nesting deeper than the parser goes: not a handle
            raise UsageError(f"job handle: not JSON ({str(err)[:80]}).") from None
        cluster = isinstance(data, dict) and data.get("target") == "kubernetes"
        place = ("context", "namespace") if cluster else ("project", "region")
        keys = {"mlsubmit_handle", "job_id", "target", *place, "name"}
        if not isinstance(data, dict) or set(data) != keys:
            raise UsageError(f"job handle: expected exactly the keys {', '.join(sorted(keys))}.")
        if cluster:
            data["project"], data["region"] = data.pop("context"), data.pop("namespace")
        version = data.pop("mlsubmit_handle")
        if version != HANDLE_VERSION or isinstance(version, bool):
            raise UsageError(
                f"job handle: version {json.dumps(version)[:20]} is not {HANDLE_VERSION}; re-attach with "
                "mlsubmit.api.attach(JOB_ID, ...) or upgrade mlsubmit."
            )
        return cls(**data, connection=connection or Connection())

    @property
    def context(self) -> str | None:
        """A TFJob's kubeconfig context (None for ml and Vertex AI)."""
        return self.project if self.target == "kubernetes" else None

    @property
    def namespace(self) -> str | None:
        """A TFJob's namespace (None for ml and Vertex AI)."""
        return self.region if self.target == "kubernetes" else None

    @contextmanager
    def _opened(self, *, following: bool = False, retry: bool = True) -> Iterator[tuple[Any, str, Any]]:
        """The job's backend, the key it reads the job by, the settings (None for a cluster); closed after."""
        import dataclasses

        if self.target == "kubernetes":
            from mlsubmit.submit.kubernetes import Where, open_cluster

            backend = open_cluster(Where(self.project, self.region, None), dict(os.environ), log().warning)
            plural, name = self.name.split("/")
            backend.plural_of[name] = plural
            backend.name_of = lambda _job: name
            if not retry:
                backend.client.policy = dataclasses.replace(backend.client.policy, attempts=1)
            with closing(backend.client):
                yield backend, self.job_id, None
            return
        with self.connection.settings(self.target, self.project, self.region, log().warning) as settings:
            if not retry:
                settings.retry = dataclasses.replace(settings.retry, attempts=1)
            vertex = self.target == "vertex"
            collection = self.name.split("/")[4] if vertex else None
            jobs = settings.jobs_backend(following=following, collection=collection)
            yield jobs, self.name if vertex else self.job_id, settings

    def status(self) -> JobStatus:
        """The job's state now: exactly one read and no sleep, not even to retry (a sensor's next poke is the
        retry): an error answer raises :class:`~mlsubmit.errors.ApiError` at once."""
        with self._opened(retry=False) as (backend, key, settings):
            if settings is None:  # one GET on the TFJob
                found = backend.view(backend.client.call("GET", backend.item(self.name.split("/")[1])))
            else:
                found = backend.get(key)
        return JobStatus.of(found, self.job_id)

    def wait(self, timeout: float | None = None) -> JobStatus:
        """Poll until the job ends (MLSUBMIT_POLL_INTERVAL, backing off) and return its final status;
        :class:`~mlsubmit.errors.WaitTimeoutError` after ``timeout`` seconds (the job keeps running)."""
        return self._follow("wait", timeout=timeout)

    def logs(self, *, follow: bool = False, emit: Callable[[str], None] | None = None) -> JobStatus:
        """Write the job's log lines (gcloud's columns) to ``emit`` (default: ``print``): those there now, or
        with ``follow`` until the job ends and its log is drained. Returns the job's status."""
        if follow:
            return self._follow("stream-logs", emit=emit)
        with self._opened() as (backend, key, settings):
            job = backend.get(key)
            if settings is None:  # the lines of every replica there now, merged in time order
                from mlsubmit.follow.kubernetes import LogMerger

                lines: Iterable[str] = LogMerger(backend, self.name.split("/")[1]).round()
            else:
                from mlsubmit.follow.entries import format_entry
                from mlsubmit.follow.logs import LogReader, log_source

                target, log_id = log_source(job, self.job_id)
                reader = LogReader(
                    settings.logging(), self.project, log_id, caller=settings.caller(), target=target
                )
                entries = reader.new_entries(settled=True)
                lines = (line for e in entries for line in format_entry(e, trial_column=reader.trial_column))
            for line in lines:
                (emit or print)(line)
        return JobStatus.of(job, self.job_id)

    def _follow(
        self, mode: str, *, timeout: float | None = None, emit: Callable[[str], None] | None = None
    ) -> JobStatus:
        def lines(block: str) -> None:  # the stream writes blocks of lines; the caller gets one line a call
            for line in block.split("\n"):
                (emit or print)(line)

        with self._opened(following=True) as (backend, key, settings):
            if settings is None:
                from mlsubmit.follow.kubernetes import follow_tfjob
                from mlsubmit.services.retry import PollPolicy

                poll = PollPolicy.from_env(dict(os.environ))
                kw: dict[str, Any] = {"logs": mode != "wait", "poll": poll, "timeout": timeout}
                found = follow_tfjob(backend, key, emit=lines, notify=log().info, **kw)
            else:
                from mlsubmit.console import Console
                from mlsubmit.follow.session import Following, follow

                how = Following(mode="wait" if mode == "wait" else "stream-logs", timeout=timeout)
                found = follow(backend, key, settings, Console(notify=log().info, emit=lines), how)
        return JobStatus.of(found, self.job_id)

    def cancel(self) -> JobStatus:
        """Ask the service to cancel the job (a TFJob is deleted, its pods first); returns its status after. A job
        that has already ended is an error (:class:`~mlsubmit.errors.JobEndedError`): nothing was cancelled."""
        from mlsubmit.services.poll import cancel_job

        with self._opened() as (backend, key, _settings):
            found, sent = cancel_job(backend, key)
        status = JobStatus.of(found, self.job_id)
        if not sent:
            raise JobEndedError(
                f"job {self.job_id} has already ended ({status.state}); nothing to cancel.", status
            )
        return status
