"""mlsubmit from Python (docs/api.md): :func:`plan`, :func:`submit`, :func:`attach` and a :class:`Handle`, taking
`training`'s flags by their Python names and/or a config file. The CLI is a thin layer over :func:`call`, so both
send the same body. Errors are ``mlsubmit.errors``; status lines go to the ``mlsubmit.api`` logger."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack, closing, contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from mlsubmit.api.handle import Connection, Handle, JobStatus, log, vertex_ref
from mlsubmit.errors import InvalidJobError, UsageError
from mlsubmit.job.values import url_value_problem

if TYPE_CHECKING:
    from mlsubmit.job.validate import TrainingRequest
    from mlsubmit.services.kubernetes.tfjobs import KubeJobs
    from mlsubmit.services.settings import Settings
    from mlsubmit.submit.kubernetes import Created, Where
    from mlsubmit.submit.plan import Plan as Planned
    from mlsubmit.submit.run import RunOptions
    from mlsubmit.targets.translate import Kind

__all__ = ["Connection", "Handle", "JobStatus", "Plan", "Upload", "attach", "plan", "submit"]
API_FLAG = "flags[{!r}]"  # how an error names a setting given to the API


@dataclass(frozen=True)
class Call:
    """One request as the CLI and the API make it (:func:`call`): the typed request, the flags given and the
    target (ml, vertex or kubernetes). The CLI's entry, not public."""

    request: TrainingRequest
    given: Mapping[str, Any]
    target: str

    @property
    def connection(self) -> Connection:
        return Connection(self.given.get("access_token_file"), self.given.get("api_endpoint"))

    @property
    def reach(self) -> dict[str, Any]:
        """``project``, ``access_token_file``, ``api_endpoint``: what ``Settings`` takes of the flags."""
        return {k: self.given.get(k) for k in ("project", "access_token_file", "api_endpoint")}

    @contextmanager
    def planned(self, kind: Kind | None = None) -> Iterator[Planned]:
        """``submit.planned`` as ``kind`` or the target; says how a cluster gets a local package."""
        from mlsubmit.job.imageref import ImageOptions
        from mlsubmit.submit.plan import PlanRequest, planned

        opt = self.given.get
        image = ImageOptions(opt("output_image_uri"), opt("base_image"), str(opt("builder") or "auto"))
        target = cast("Kind", "tfjob" if self.target == "kubernetes" else self.target)
        more = {"executor_image_uri": opt("executor_image_uri"), "namespace": opt("namespace")}
        request = PlanRequest(
            self.request, kind or target, **more, image=image, token_file=opt("access_token_file")
        )
        with ExitStack() as stack:
            try:
                made = stack.enter_context(planned(request))
            except InvalidJobError as err:
                if self.target != "kubernetes":
                    raise
                from mlsubmit.submit.kubernetes import reachable

                raise reachable(err) from None
            yield made

    def settings(self, made: Planned, notify: Callable[[str], None]) -> Settings:
        """The connection settings of the plan: the flags, then the environment."""
        from mlsubmit.services.settings import Settings

        return Settings.for_job(made, self.request.env, **self.reach, notify=notify)

    def run_options(self, **more: Any) -> RunOptions:
        """The Vertex AI preflight unless ``preflight`` is False, and the failover's queue limit."""
        from mlsubmit.submit.run import RunOptions

        checking = self.target == "vertex" and self.given.get("preflight") is not False
        return RunOptions(preflight=checking, max_queue_wait=self.given.get("max_queue_wait"), **more)

    def where(self, made: Planned, *, flag: str = "--{}") -> Where:
        """Where a cluster's job goes: the flags over the config file's ``kubernetes:`` block."""
        from mlsubmit.submit.kubernetes import Where

        return Where.of(self.given, made.job.get("kubernetes"), flag=flag)

    def cluster_body(self, made: Planned, where: Where) -> dict[str, Any]:
        """The TFJob a dry run prints: in the namespace a create would use (read offline), with its queue."""
        from mlsubmit.targets.tfjob import for_cluster

        return for_cluster(made.body, namespace=where.namespace_offline(self.request.env), queue=where.queue)

    def create_on_cluster(
        self, made: Planned, where: Where, backend: KubeJobs, notify: Callable[[str], None], **options: Any
    ) -> Created:
        """The cluster's checks (unless ``preflight`` is False), staging, the image; the TFJob made once."""
        from mlsubmit.submit.kubernetes import create_on_cluster

        checking, run = self.given.get("preflight") is not False, self.run_options(**options)
        return create_on_cluster(
            made, where, backend, preflight=checking, connection=self.reach, options=run, notify=notify
        )

    def trainer_warnings(self, made: Planned) -> list[str]:
        """What the trainer checkup finds that fails on the plan's target (docs/migrate.md)."""
        if not self.request.package_path:
            return []
        from pathlib import Path

        from mlsubmit.migrate.checkup import trainer_notes

        base = made.image.spec.base if made.image is not None else None
        package = Path(self.request.package_path)
        return trainer_notes(made.job, made.target, package, made.walked, sdist=made.sdist, image_base=base)


def call(
    job_id: str,
    given: Mapping[str, Any],
    *,
    user_args: Sequence[str] | None,
    env: Mapping[str, str],
    target: str | None = None,
) -> Call:
    """The request of the ``given`` flags (as click's types make them): the one builder of `training`,
    `export`, `preflight`, `migrate` and this API."""
    from mlsubmit.job.request import training_request

    request = training_request(job_id, given, user_args=user_args, env=env)
    return Call(request, given, str(target or given.get("target") or "ml").lower())


def _call(job_id: str, config: str | os.PathLike[str] | None, flags: Mapping[str, Any] | None) -> Call:
    """Check every flag name and value (before anything else), then build the request as the CLI does."""
    from mlsubmit.job.request import typed_flags
    from mlsubmit.job.vocab import TARGETS

    given = typed_flags(flags or {})
    if config is not None:
        path = typed_flags({"config": config})["config"]
        if given.setdefault("config", path) != path:
            raise UsageError("config is given twice (the argument and flags['config']) with two values.")
    user_args = given.pop("args", None)
    if not isinstance(job_id, str):
        raise UsageError(f"job_id: expected a string, got {type(job_id).__name__}.")
    made = call(job_id, given, user_args=user_args, env=dict(os.environ))
    if made.target not in TARGETS:
        raise UsageError(f"flags['target']: {made.target[:20]!r} is not one of {', '.join(TARGETS)}.")
    if made.target != "kubernetes" and any(k in given for k in ("context", "namespace", "queue")):
        raise UsageError("flags: context, namespace and queue are for target='kubernetes'.")
    return made


@dataclass(frozen=True)
class Upload:
    """A package the submit uploads: its file name and the gs:// URI the body names it by."""

    name: str
    uri: str


@dataclass(frozen=True)
class Plan:
    """What :func:`submit` would send (``training --dry-run``): the body for the target, the uploads, the image it
    builds, what the target cannot express, and each failover candidate (docs/getting-jobs-to-start.md)."""

    job_id: str
    target: str
    body: Mapping[str, Any]
    uploads: tuple[Upload, ...] = ()
    image: Mapping[str, Any] | None = None
    warnings: tuple[str, ...] = ()
    candidates: tuple[Mapping[str, Any], ...] = ()


def plan(
    job_id: str, config: str | os.PathLike[str] | None = None, flags: Mapping[str, Any] | None = None
) -> Plan:
    """The plan of a job, offline: merged, checked by its target's rules, packages built and hashed, translated
    once. Raises :class:`~mlsubmit.errors.UsageError` for bad input; uploads and creates nothing."""
    made = _call(job_id, config, flags)
    with _logged(), made.planned() as done:
        printed, body = done.printed(), done.body
        if made.target == "kubernetes":  # the TFJob `training --target kubernetes --dry-run` prints
            body = made.cluster_body(done, made.where(done, flag=API_FLAG))
        notes = done.prepared.file.notes if done.prepared.file is not None else ()
        warnings = (*map(str, notes), *made.trainer_warnings(done), *done.warnings)
    files = [*done.uploads, *(s for c in done.candidates for s in c.staged)]
    uploads = tuple(Upload(s.local.name, s.uri) for s in files if s.local is not None)
    image = printed["image"] if done.image is not None else None
    candidates = tuple(printed["candidates"]) if done.candidates else ()
    return Plan(done.job_id, made.target, body, uploads, image, warnings, candidates)


def _logged() -> Any:
    """The console the submit sequence tells its status lines through: the ``mlsubmit.api`` logger."""
    from mlsubmit.console import Console, using

    return using(Console(notify=log().info, emit=log().debug))


def submit(
    job_id: str, config: str | os.PathLike[str] | None = None, flags: Mapping[str, Any] | None = None
) -> Handle:
    """Plan the job (as :func:`plan`), stage its packages, build its image when asked, create it exactly once
    (failing over to the next candidate when it cannot start, Vertex AI) and return its :class:`Handle`."""
    from mlsubmit.submit.run import run

    made = _call(job_id, config, flags)
    with ExitStack() as command:
        command.enter_context(_logged())
        done = command.enter_context(made.planned())
        for warning in (*made.trainer_warnings(done), *done.warnings):  # the file's notes: logged as read
            log().warning("%s", warning)
        if made.target == "kubernetes":  # as `training --target kubernetes` does it
            from mlsubmit.submit.kubernetes import open_cluster

            where = made.where(done, flag=API_FLAG)
            backend = open_cluster(where, made.request.env, log().warning)
            command.callback(backend.client.close)
            created = made.create_on_cluster(done, where, backend, log().warning)
            name = created.body["metadata"]["name"]
            if created.result.recovered:
                log().info("%s was already made with the same definition; it was not created twice.", name)
            plural = f"{str(created.body['kind']).lower()}s"
            where_is = (backend.client.ctx.name, backend.namespace, f"{plural}/{name}")
            return Handle(created.plan.job_id, "kubernetes", *where_is, made.connection)
        settings = command.enter_context(made.settings(done, log().warning))
        sent = run(done, settings, made.run_options())
        job_id, link = sent.job_id, made.connection
        project = sent.backend.project if sent.backend is not None else settings.project()
        if settings.target != "vertex":
            return Handle(job_id, "ml", project, None, f"projects/{project}/jobs/{job_id}", link)
        return Handle(job_id, "vertex", project, sent.settings.region, str(sent.job.get("name")), link)


def attach(
    job: str,
    *,
    target: str = "ml",
    project: str | None = None,
    region: str | None = None,
    connection: Connection | None = None,
    context: str | None = None,
    namespace: str | None = None,
) -> Handle:
    """The handle of a job submitted earlier (by mlsubmit or not): its job id, or for Vertex AI also its numeric
    id or resource name, found where the `jobs` commands look (for ``target="kubernetes"``: the kubeconfig's
    ``context`` and ``namespace``). Reads the job once to prove it exists."""
    if str(target).lower() == "kubernetes":  # the TFJob (or PyTorchJob) of job id ``job``
        from mlsubmit.submit.kubernetes import Where, open_cluster
        from mlsubmit.targets.tfjob import k8s_name

        if problem := url_value_problem("job id", job):
            raise UsageError(f"job: {problem}.")
        where = Where.of({"context": context, "namespace": namespace}, flag="{}")
        backend = open_cluster(where, dict(os.environ), log().warning)
        with closing(backend.client):
            name = k8s_name(job)
            found = backend.get(job)
            where_is = (backend.client.ctx.name, backend.namespace, f"{backend.plural_of[name]}/{name}")
            return Handle(str(found.get("jobId") or job), "kubernetes", *where_is)
    if context is not None or namespace is not None:
        raise UsageError("context and namespace are for target='kubernetes'.")
    link = connection or Connection()
    named = isinstance(job, str) and (vertex_ref(job) or url_value_problem("job id", job) is None)
    if str(target).lower() == "vertex" and not named:
        raise UsageError(
            f"job: {str(job)[:60]!r} is not a job id, numeric id or projects/P/locations/R/customJobs/N."
        )
    with link.settings(target, project, region, log().warning) as settings:
        project = settings.project()
        if settings.target == "ml":  # the handle checks the job id before it goes into a URL
            handle = Handle(job, "ml", project, None, f"projects/{project}/jobs/{job}", link)
            settings.jobs_backend().get(job)
            return handle
        found = settings.jobs_backend().get(job)
        return Handle(
            str(found.get("jobId") or job), "vertex", project, settings.region, str(found.get("name")), link
        )
