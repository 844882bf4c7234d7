"""mlsubmit from Python (docs/api.md): :func:`plan`, :func:`submit`, :func:`attach` and a :class:`Handle`.

For Airflow, KFP or a notebook: the same flags `mlsubmit training` takes, as one mapping keyed by their Python
names (``module_name``, ``package_path``, ``region``, ``target``, ``job_dir``, ``args`` for the app's arguments
after ``--``, ...), and/or a config file. The request goes through the builder and ``submit.plan`` the CLI uses,
so both send the same body by construction. A :class:`Handle` is four strings that survive a JSON round trip (an
XCom, a KFP output) and re-attach from a fresh process; it carries no token and no endpoint, so an edited handle
can never send a credential anywhere the reading process did not choose.

Errors are the CLI's (``mlsubmit.errors``): :class:`~mlsubmit.errors.UsageError` for bad input, raised before
anything is uploaded or created; :class:`~mlsubmit.errors.MlsubmitError` for remote failures. Nothing here prints:
status lines go to the ``mlsubmit.api`` logger. Importing this module loads no more than a dry run does.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mlsubmit.errors import UsageError

if TYPE_CHECKING:
    from mlsubmit.job.validate import TrainingRequest
    from mlsubmit.services.backends import JobsBackend
    from mlsubmit.services.settings import Settings
    from mlsubmit.submit import Plan as Planned
    from mlsubmit.submit import Submitted

__all__ = ["Connection", "Handle", "JobStatus", "Plan", "Upload", "attach", "plan", "submit"]

HANDLE_VERSION = 1
MAX_HANDLE_CHARS = 4096  # a handle is five short strings; anything longer was not written by to_json
TERMINAL = ("SUCCEEDED", "FAILED", "CANCELLED")


@dataclass(frozen=True)
class Connection:
    """How this process reaches Google (``--access-token-file``, ``--api-endpoint``); None: the environment's
    (``CLOUDSDK_AUTH_ACCESS_TOKEN``, ADC, ``CLOUDSDK_API_ENDPOINT_OVERRIDES_*``). Never part of a handle's JSON."""

    access_token_file: str | None = None
    api_endpoint: str | None = None


@dataclass(frozen=True)
class _Call:
    """One API call's parsed arguments: the request and what goes beside it (target, image, connection)."""

    request: TrainingRequest
    given: Mapping[str, Any]
    target: str
    connection: Connection

    def option(self, name: str, default: Any = None) -> Any:
        return self.given.get(name, default)


def _call(job_id: str, config: str | os.PathLike[str] | None, flags: Mapping[str, Any] | None) -> _Call:
    """Check every flag name and value (before anything else), then build the request as the CLI does."""
    from mlsubmit.job.request import training_request, typed_flags
    from mlsubmit.job.vocab import TARGETS

    given = typed_flags(flags or {})
    if config is not None:
        path = typed_flags({"config": config})["config"]
        if given.setdefault("config", path) != path:
            raise UsageError("config is given twice (the argument and flags['config']) with two values.")
    user_args = given.pop("args", None)
    if not isinstance(job_id, str):
        raise UsageError(f"job_id: expected a string, got {type(job_id).__name__}.")
    request = training_request(job_id, given, user_args=user_args, env=dict(os.environ))
    connection = Connection(given.get("access_token_file"), given.get("api_endpoint"))
    target = str(given.get("target") or "ml")
    if target not in TARGETS:
        raise UsageError(f"flags['target']: {target[:20]!r} is not one of {', '.join(TARGETS)}.")
    return _Call(request, given, target, connection)


def _image_step(call: _Call) -> Any:
    """The ``--build-image`` step as the CLI makes it (``cli/image_options.py``), status to the logger; None for
    ml v1, which builds no image (``submit.plan`` ignores it there)."""
    if call.target == "ml":
        return None
    from mlsubmit.follow.image_step import JobImageStep
    from mlsubmit.job.imageref import ImageOptions

    options = ImageOptions(
        output_image_uri=call.option("output_image_uri"),
        base_image=call.option("base_image"),
        builder=str(call.option("builder") or "auto"),
    )
    return JobImageStep(options, notify=_log().info, emit=_log().debug)


def _log() -> Any:
    import logging  # a dry run never logs and does not load it

    return logging.getLogger(__name__)


@dataclass(frozen=True)
class Upload:
    """A local file the submit uploads, and the gs:// URI the body names it by."""

    local: str
    uri: str


@dataclass(frozen=True)
class Plan:
    """What :func:`submit` would send (``training --dry-run``): the job's body for its target, the uploads,
    the image it builds (``--build-image``: Dockerfile, content tag, name) and what the target cannot express."""

    job_id: str
    target: str
    body: Mapping[str, Any]
    uploads: tuple[Upload, ...] = ()
    image: Mapping[str, Any] | None = None
    warnings: tuple[str, ...] = ()


def plan(
    job_id: str, config: str | os.PathLike[str] | None = None, flags: Mapping[str, Any] | None = None
) -> Plan:
    """The plan of a job, offline: merged, checked by its target's rules, packages built and hashed, translated
    once. Raises :class:`~mlsubmit.errors.UsageError` for bad input; uploads and creates nothing."""
    from mlsubmit.submit import dry_run

    call = _call(job_id, config, flags)
    done = dry_run(
        call.request,
        target=call.target,  # type: ignore[arg-type]  # checked by submit.plan's rules_for
        executor_image_uri=call.option("executor_image_uri"),
        image=_image_step(call),
    )
    return Plan(
        job_id=done.job_id,
        target=call.target,
        body=done.body,
        uploads=tuple(Upload(str(s.local), s.uri) for s in done.uploads),
        image=done.image_view,
        warnings=tuple(done.warnings),
    )


def _run(planned: Planned, settings: Settings, call: _Call) -> Submitted:
    """The one call into the submit sequence, with the Vertex AI preflight and failover as `training` runs them.
    (Once ``submit.run(plan, settings)`` owns both, this is that call.)"""
    import functools

    from mlsubmit.follow.failover_start import quota_skip, start
    from mlsubmit.submit import run

    checking = call.target == "vertex" and call.option("preflight") is not False
    failover = functools.partial(
        start,
        executor_image_uri=call.option("executor_image_uri"),
        max_queue_wait=call.option("max_queue_wait"),
        notify=_log().warning,
        skip=quota_skip(settings) if checking else None,
    )
    return run(planned, settings, preflight=_preflight if checking else None, failover=failover)


def _preflight(planned: Planned, settings: Settings) -> None:
    """`training`'s preflight (``cli/preflight.py:checked``) without its printing: raise when refused."""
    from mlsubmit.errors import PreflightRefused
    from mlsubmit.preflight import preflight
    from mlsubmit.services.preflight import refused, report

    built = [planned.image_name] if planned.image_name else []
    checks = preflight(planned.body, settings, uploads=[s.uri for s in planned.uploads], built=built)
    if refused(checks):
        lines = [f"preflight refused: {c.name}: {c.message}" for c in refused(checks)]
        raise PreflightRefused(lines, report(checks))


def submit(
    job_id: str, config: str | os.PathLike[str] | None = None, flags: Mapping[str, Any] | None = None
) -> Handle:
    """Plan the job (as :func:`plan`), stage its packages, build its image when asked, create it exactly once
    (failing over to the next candidate when it cannot start, Vertex AI) and return its :class:`Handle`."""
    from contextlib import ExitStack

    from mlsubmit.services.settings import Settings
    from mlsubmit.submit import planned

    call = _call(job_id, config, flags)
    with ExitStack() as command:
        made = command.enter_context(
            planned(
                call.request,
                target=call.target,  # type: ignore[arg-type]  # checked by submit.plan's rules_for
                executor_image_uri=call.option("executor_image_uri"),
                image=_image_step(call),
            )
        )
        settings = command.enter_context(
            Settings.for_job(
                made,
                call.request.env,
                project=call.option("project"),
                access_token_file=call.connection.access_token_file,
                api_endpoint=call.connection.api_endpoint,
                notify=_log().warning,
            )
        )
        done = _run(made, settings, call)
        project = done.backend.project if done.backend is not None else settings.project()
        vertex = settings.target == "vertex"
        return Handle(
            job_id=done.job_id,
            target=settings.target,
            project=project,
            region=done.settings.region if vertex else None,
            name=str(done.job.get("name")) if vertex else f"projects/{project}/jobs/{done.job_id}",
            connection=call.connection,
        )


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
        return self.state in TERMINAL

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
    from mlsubmit.job.values import url_value_problem

    if target not in ("ml", "vertex"):
        return f"target {str(target)[:20]!r} is not ml or vertex"
    checks = [("job id", job_id), ("project", project)] + ([("region", region)] if target == "vertex" else [])
    for kind, value in checks:
        problem = url_value_problem(kind, value)
        if problem:
            return problem
    if target == "ml":
        expected = region is None and name == f"projects/{project}/jobs/{job_id}"
        return None if expected else f"name is not projects/{project}/jobs/{job_id} (with no region)"
    from mlsubmit.services.vertex import RESOURCE_NAME

    prefix = f"projects/{project}/locations/{region}/"
    if not (isinstance(name, str) and RESOURCE_NAME.fullmatch(name) and name.startswith(prefix)):
        return f"name is not a Vertex AI job of project {project} in {region} ({prefix}customJobs/N)"
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
        problem = _handle_problem(self.job_id, self.target, self.project, self.region, self.name)
        if problem:
            raise UsageError(f"job handle: {problem}; refusing a handle mlsubmit did not write.")

    def to_json(self) -> str:
        """The handle as one JSON object (no token, no endpoint): pass it on as an XCom or a KFP output."""
        import json

        fields = {
            "job_id": self.job_id,
            "target": self.target,
            "project": self.project,
            "region": self.region,
        }
        return json.dumps({"mlsubmit_handle": HANDLE_VERSION, **fields, "name": self.name}, sort_keys=True)

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
        except ValueError as err:
            raise UsageError(f"job handle: not JSON ({err}).") from None
        keys = {"mlsubmit_handle", "job_id", "target", "project", "region", "name"}
        if not isinstance(data, dict) or set(data) != keys:
            raise UsageError(f"job handle: expected exactly the keys {', '.join(sorted(keys))}.")
        version = data.pop("mlsubmit_handle")
        if version != HANDLE_VERSION or isinstance(version, bool):
            raise UsageError(
                f"job handle: version {json.dumps(version)[:20]} is not {HANDLE_VERSION}; re-attach with "
                "mlsubmit.api.attach(JOB_ID, ...) or upgrade mlsubmit."
            )
        return cls(**data, connection=connection or Connection())

    # --- calls -----------------------------------------------------------------------------------------------

    def _settings(self) -> Settings:
        from mlsubmit.services.settings import Settings

        return Settings.from_flags(
            dict(os.environ),
            target=self.target,
            project=self.project,
            region=self.region,
            access_token_file=self.connection.access_token_file,
            api_endpoint=self.connection.api_endpoint,
            notify=_log().warning,
        )

    def _backend(self, settings: Settings, *, following: bool = False) -> JobsBackend:
        collection = self.name.split("/")[4] if self.target == "vertex" else None
        return settings.jobs_backend(following=following, collection=collection)

    @property
    def _key(self) -> str:
        """What the backend reads the job by: the resource name (one GET, no search) or the ml job id."""
        return self.name if self.target == "vertex" else self.job_id

    def status(self) -> JobStatus:
        """The job's state now: exactly one read, no sleep."""
        with self._settings() as settings:
            return JobStatus.of(self._backend(settings).get(self._key), self.job_id)

    def wait(self, timeout: float | None = None) -> JobStatus:
        """Poll until the job ends (MLSUBMIT_POLL_INTERVAL, backing off) and return its final status;
        :class:`~mlsubmit.errors.WaitTimeoutError` after ``timeout`` seconds (the job keeps running)."""
        return self._follow("wait", timeout=timeout)

    def logs(self, *, follow: bool = False, emit: Callable[[str], None] | None = None) -> JobStatus:
        """Write the job's log lines (gcloud's columns) to ``emit`` (default: ``print``): those there now, or
        with ``follow`` until the job ends and its log is drained. Returns the job's status."""
        if follow:
            return self._follow("stream-logs", emit=emit)
        from mlsubmit.follow.entries import format_entry
        from mlsubmit.follow.logs import LogReader, log_source

        out = emit or print
        with self._settings() as settings:
            job = self._backend(settings).get(self._key)
            target, log_id = log_source(job, self.job_id)
            reader = LogReader(
                settings.logging(), self.project, log_id, caller=settings.caller(), target=target
            )
            for entry in reader.new_entries(settled=True):
                for line in format_entry(entry, trial_column=reader.trial_column):
                    out(line)
            return JobStatus.of(job, self.job_id)

    def _follow(
        self, mode: str, *, timeout: float | None = None, emit: Callable[[str], None] | None = None
    ) -> JobStatus:
        from mlsubmit.console import Console
        from mlsubmit.follow.session import Following, follow

        console = Console(notify=_log().info, emit=emit or print)
        how = Following(mode="wait" if mode == "wait" else "stream-logs", timeout=timeout)
        with self._settings() as settings:
            return JobStatus.of(
                follow(self._backend(settings, following=True), self._key, settings, console, how),
                self.job_id,
            )

    def cancel(self) -> JobStatus:
        """Ask the service to cancel the job; returns its status after. A job that has already ended is an
        error (:class:`~mlsubmit.errors.JobEndedError`): nothing was cancelled."""
        from mlsubmit.errors import JobEndedError
        from mlsubmit.follow.lifecycle import cancel_job

        with self._settings() as settings:
            found, sent = cancel_job(self._backend(settings), self._key)
        status = JobStatus.of(found, self.job_id)
        if not sent:
            raise JobEndedError(
                f"job {self.job_id} has already ended ({status.state}); nothing to cancel.", status
            )
        return status


def attach(
    job: str,
    *,
    target: str = "ml",
    project: str | None = None,
    region: str | None = None,
    connection: Connection | None = None,
) -> Handle:
    """The handle of a job submitted earlier (by mlsubmit or not): its mlsubmit job id, or for Vertex AI also
    its numeric id or resource name. Project and region as the `jobs` commands resolve them (flags, then the
    environment, ADC). Reads the job once to prove it exists."""
    from mlsubmit.services.settings import Settings

    link = connection or Connection()
    if target == "vertex" and not _vertex_job_ref(job):
        raise UsageError(
            f"job: {job[:60]!r} is not a job id, numeric id or projects/P/locations/R/customJobs/N."
        )
    with Settings.from_flags(
        dict(os.environ),
        target=target,
        project=project,
        region=region,
        access_token_file=link.access_token_file,
        api_endpoint=link.api_endpoint,
        notify=_log().warning,
    ) as settings:
        if settings.target == "ml":  # the handle checks the job id before it goes into a URL
            handle = Handle(
                job, "ml", settings.project(), None, f"projects/{settings.project()}/jobs/{job}", link
            )
            settings.jobs_backend().get(job)
            return handle
        found = settings.jobs_backend().get(job)
        job_id = str(found.get("jobId") or job)
        return Handle(job_id, "vertex", settings.project(), settings.region, str(found.get("name")), link)


def _vertex_job_ref(job: Any) -> bool:
    """A Vertex AI job as `jobs` commands take it: an mlsubmit job id, a numeric id or a resource name."""
    from mlsubmit.job.values import url_value_problem
    from mlsubmit.services.vertex import RESOURCE_NAME

    if not isinstance(job, str):
        return False
    numeric = job.isascii() and job.isdigit() and len(job) <= 30
    return numeric or bool(RESOURCE_NAME.fullmatch(job)) or url_value_problem("job id", job) is None
