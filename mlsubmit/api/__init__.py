"""mlsubmit from Python (docs/api.md): :func:`plan`, :func:`submit`, :func:`attach` and a :class:`Handle`.

For Airflow, KFP or a notebook: the same flags `mlsubmit training` takes, as one mapping keyed by their Python
names (``module_name``, ``package_path``, ``region``, ``target``, ``job_dir``, ``args`` for the app's arguments
after ``--``, ...), and/or a config file. The request goes through the builder and ``submit.plan`` the CLI uses,
so both send the same body by construction. A :class:`Handle` (``api/handle.py``) survives a JSON round trip (an
XCom, a KFP output) and re-attaches from a fresh process; it carries no token and no endpoint.

Errors are the CLI's (``mlsubmit.errors``): :class:`~mlsubmit.errors.UsageError` for bad input, raised before
anything is uploaded or created; :class:`~mlsubmit.errors.MlsubmitError` for remote failures. Nothing here prints:
status lines go to the ``mlsubmit.api`` logger. Importing this module loads no more than a dry run does.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from mlsubmit.api.handle import Connection, Handle, JobStatus, log
from mlsubmit.errors import UsageError

if TYPE_CHECKING:
    from mlsubmit.job.validate import TrainingRequest
    from mlsubmit.submit.plan import Plan as Planned
    from mlsubmit.submit.plan import PlanRequest
    from mlsubmit.targets.translate import Kind

__all__ = ["Connection", "Handle", "JobStatus", "Plan", "Upload", "attach", "plan", "submit"]


@dataclass(frozen=True)
class _Call:
    """One API call's parsed arguments: the request and what goes beside it (target, image, connection)."""

    request: TrainingRequest
    given: Mapping[str, Any]
    target: Kind  # one of job.vocab.TARGETS
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
    kube = ("context", "namespace", "queue")
    if target != "kubernetes" and any(k in given for k in kube):
        raise UsageError("flags: context, namespace and queue are for target='kubernetes'.")
    return _Call(request, given, cast("Kind", target), connection)


def _plan_request(call: _Call) -> PlanRequest:
    """The request ``submit.plan`` takes, as the CLI makes it (``cli/image_options.py``); ml v1 builds no image."""
    from mlsubmit.job.imageref import ImageOptions
    from mlsubmit.submit.plan import PlanRequest

    image = None
    if call.target != "ml":
        image = ImageOptions(
            output_image_uri=call.option("output_image_uri"),
            base_image=call.option("base_image"),
            builder=str(call.option("builder") or "auto"),
        )
    return PlanRequest(
        call.request,
        "tfjob" if call.target == "kubernetes" else call.target,  # the CLI plans a cluster's job as a TFJob
        executor_image_uri=call.option("executor_image_uri"),
        image=image,
        token_file=call.connection.access_token_file,
    )


@dataclass(frozen=True)
class Upload:
    """A package the submit uploads (its file name: a built sdist lives in a folder :func:`plan` removes) and the
    gs:// URI the body names it by."""

    name: str
    uri: str


@dataclass(frozen=True)
class Plan:
    """What :func:`submit` would send (``training --dry-run``): the job's body for its target, the uploads,
    the image it builds (``--build-image``: Dockerfile, content tag, name), what the target cannot express, and
    each failover candidate (its number, region and body; docs/getting-jobs-to-start.md)."""

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
    from mlsubmit.errors import InvalidJobError
    from mlsubmit.submit.plan import dry_run

    call = _call(job_id, config, flags)
    with _logged():
        try:
            done, printed = dry_run(_plan_request(call))
        except InvalidJobError as err:
            if call.target != "kubernetes":
                raise
            from mlsubmit.submit.kubernetes import reachable

            raise reachable(err) from None
    body = done.body
    if call.target == "kubernetes":  # the TFJob `training --target kubernetes --dry-run` prints
        from mlsubmit.submit.kubernetes import Where
        from mlsubmit.targets.tfjob import for_cluster

        where = Where.of(call.given, done.job.get("kubernetes"), flag="flags[{!r}]")
        body = for_cluster(body, namespace=where.namespace_offline(call.request.env), queue=where.queue)
    files = [*done.uploads, *(s for c in done.candidates for s in c.staged if s.local is not None)]
    return Plan(
        job_id=done.job_id,
        target=call.target,
        body=body,
        uploads=tuple(Upload(s.local.name, s.uri) for s in files if s.local is not None),
        image=printed["image"] if done.image is not None else None,
        warnings=tuple(_warnings(done, call)),
        candidates=tuple(printed["candidates"]) if done.candidates else (),
    )


def _logged() -> Any:
    """The console the submit sequence tells its status lines through: the ``mlsubmit.api`` logger."""
    from mlsubmit.console import Console, using

    return using(Console(notify=log().info, emit=log().debug))


def _warnings(planned: Planned, call: _Call, *, file_notes: bool = True) -> list[str]:
    """The WARNING lines `training` prints for a plan, in its order: the config file's notes (logged as the file
    is read), what the trainer checkup finds that fails on the target (docs/migrate.md; from the
    files the plan's sdist build read), what the target cannot express."""
    file = planned.prepared.file
    notes = [str(note) for note in file.notes] if file is not None and file_notes else []
    if call.request.package_path:
        from pathlib import Path

        from mlsubmit.migrate.checkup import trainer_notes

        package = Path(call.request.package_path)
        notes += trainer_notes(planned.job, planned.target, package, planned.walked)
    return [*notes, *planned.warnings]


def submit(
    job_id: str, config: str | os.PathLike[str] | None = None, flags: Mapping[str, Any] | None = None
) -> Handle:
    """Plan the job (as :func:`plan`), stage its packages, build its image when asked, create it exactly once
    (failing over to the next candidate when it cannot start, Vertex AI) and return its :class:`Handle`."""
    from contextlib import ExitStack

    from mlsubmit.services.settings import Settings
    from mlsubmit.submit.plan import planned
    from mlsubmit.submit.run import RunOptions, run

    call = _call(job_id, config, flags)
    if call.target == "kubernetes":
        return _submit_to_cluster(call)
    with ExitStack() as command:
        command.enter_context(_logged())
        made = command.enter_context(planned(_plan_request(call)))
        settings = command.enter_context(
            Settings.for_job(
                made,
                call.request.env,
                project=call.option("project"),
                access_token_file=call.connection.access_token_file,
                api_endpoint=call.connection.api_endpoint,
                notify=log().warning,
            )
        )
        for warning in _warnings(made, call, file_notes=False):  # the file's notes are logged as it is read
            log().warning("%s", warning)
        # the one call into the submit sequence, with the Vertex AI preflight and failover as `training` runs them
        checking = call.target == "vertex" and call.option("preflight") is not False
        done = run(
            made, settings, RunOptions(preflight=checking, max_queue_wait=call.option("max_queue_wait"))
        )
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
    """The handle of a job submitted earlier (by mlsubmit or not): its mlsubmit job id, or for Vertex AI also
    its numeric id or resource name. Project and region as the `jobs` commands resolve them (flags, then the
    environment, ADC); for ``target="kubernetes"`` the kubeconfig's ``context`` and ``namespace`` (as
    ``--context``/``--namespace``). Reads the job once to prove it exists."""
    from mlsubmit.services.settings import Settings

    if str(target).lower() == "kubernetes":
        return _attach_cluster(job, context, namespace)
    if context is not None or namespace is not None:
        raise UsageError("context and namespace are for target='kubernetes'.")
    link = connection or Connection()
    if str(target).lower() == "vertex" and not _vertex_job_ref(job):
        raise UsageError(
            f"job: {str(job)[:60]!r} is not a job id, numeric id or projects/P/locations/R/customJobs/N."
        )
    with Settings.from_flags(
        dict(os.environ),
        target=target,
        project=project,
        region=region,
        access_token_file=link.access_token_file,
        api_endpoint=link.api_endpoint,
        notify=log().warning,
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


def _submit_to_cluster(call: _Call) -> Handle:
    """:func:`submit` for ``target="kubernetes"``: the cluster's checks (unless ``"preflight": False``), staging
    and the image, then the TFJob created exactly once, as `training --target kubernetes` does."""
    from contextlib import ExitStack

    from mlsubmit.errors import InvalidJobError
    from mlsubmit.submit.kubernetes import Where, create_on_cluster, open_cluster, reachable
    from mlsubmit.submit.plan import planned
    from mlsubmit.submit.run import RunOptions

    with ExitStack() as command:
        command.enter_context(_logged())
        try:
            made = command.enter_context(planned(_plan_request(call)))
        except InvalidJobError as err:
            raise reachable(err) from None
        where = Where.of(call.given, made.job.get("kubernetes"), flag="flags[{!r}]")
        for warning in _warnings(made, call, file_notes=False):
            log().warning("%s", warning)
        backend = open_cluster(where, call.request.env, log().warning)
        command.callback(backend.client.close)
        created = create_on_cluster(
            made,
            where,
            backend,
            preflight=call.option("preflight") is not False,
            connection={
                "project": call.option("project"),
                "access_token_file": call.connection.access_token_file,
                "api_endpoint": call.connection.api_endpoint,
            },
            options=RunOptions(),
            notify=log().warning,
        )
        if created.result.recovered:
            log().info(
                "%s was already made with the same definition; it was not created twice.",
                created.body["metadata"]["name"],
            )
        plural = f"{str(created.body['kind']).lower()}s"
        return Handle(created.plan.job_id, "kubernetes", backend.client.ctx.name, backend.namespace,
                      f"{plural}/{created.body['metadata']['name']}", call.connection)  # fmt: skip


def _attach_cluster(job: Any, context: str | None, namespace: str | None) -> Handle:
    """:func:`attach` for a TFJob (or PyTorchJob) that ``training --target kubernetes`` made for job id ``job``:
    one read (of each kind until found) proves it is there."""
    from mlsubmit.job.values import url_value_problem
    from mlsubmit.submit.kubernetes import Where, open_cluster
    from mlsubmit.targets.tfjob import k8s_name

    problem = url_value_problem("job id", job)
    if problem:
        raise UsageError(f"job: {problem}.")
    where = Where.of({"context": context, "namespace": namespace}, flag="{}")
    backend = open_cluster(where, dict(os.environ), log().warning)
    try:
        name = k8s_name(job)
        found = backend.get(job)
        plural = backend.plural_of[name]
        return Handle(str(found.get("jobId") or job), "kubernetes", backend.client.ctx.name, backend.namespace,
                      f"{plural}/{name}")  # fmt: skip
    finally:
        backend.client.close()


def _vertex_job_ref(job: Any) -> bool:
    """A Vertex AI job as `jobs` commands take it: an mlsubmit job id, a numeric id or a resource name."""
    from mlsubmit.job.values import url_value_problem
    from mlsubmit.services.vertex import RESOURCE_NAME

    if not isinstance(job, str):
        return False
    numeric = job.isascii() and job.isdigit() and len(job) <= 30
    return numeric or bool(RESOURCE_NAME.fullmatch(job)) or url_value_problem("job id", job) is None
