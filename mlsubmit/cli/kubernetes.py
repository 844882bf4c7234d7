"""``--target kubernetes`` for ``training`` and ``jobs`` (docs/kubernetes.md): the TFJob of the plan, created
exactly once on the kubeconfig's cluster, followed with the exit codes of every target.

Order, as for every target: flags and the config file are checked, the plan made (packages built and hashed, the
body translated), then the kubeconfig read and the cluster checked (read-only), and only then anything uploaded,
built or created.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from contextlib import ExitStack
from typing import TYPE_CHECKING, Any

from mlsubmit.cli.output import emit, status
from mlsubmit.errors import InvalidJobError, UsageError
from mlsubmit.submit.kubernetes import Where, reachable

if TYPE_CHECKING:
    from mlsubmit.job.validate import TrainingRequest
    from mlsubmit.services.kubernetes.tfjobs import KubeJobs
    from mlsubmit.submit.plan import Plan


def open_cluster(where: Where, env: Mapping[str, str]) -> KubeJobs:
    """The TFJobs backend of the kubeconfig's context (read now; nothing is sent yet), closed with the command."""
    import click

    from mlsubmit.submit.kubernetes import open_cluster as opened

    backend = opened(where, env, status)
    with_ctx = click.get_current_context(silent=True)
    if with_ctx is not None:
        with_ctx.call_on_close(backend.client.close)
    return backend


def _cluster_body(plan: Plan, where: Where, namespace: str) -> dict[str, Any]:
    from mlsubmit.targets.tfjob import for_cluster

    return for_cluster(plan.body, namespace=namespace, queue=where.queue)


def training_kubernetes(
    request: TrainingRequest,
    opts: Mapping[str, Any],
    *,
    fmt: str,
    checkup: Callable[[Plan], None],
    cancel_on_interrupt: bool = False,
) -> None:
    """``mlsubmit training JOB --target kubernetes``: dry run, or plan, check, stage, build, create, follow."""
    from mlsubmit.cli.image_options import plan_request
    from mlsubmit.submit.plan import planned

    env = request.env
    with ExitStack() as planning:  # the plan's folder (its sdist, the image context) lives until the create
        try:
            plan = planning.enter_context(planned(plan_request(request, opts, target="tfjob")))
        except InvalidJobError as err:
            raise reachable(err) from None
        where = Where.of(opts, plan.job.get("kubernetes"))
        checkup(plan)
        for warning in plan.warnings:
            status(f"WARNING: {warning}")
        if opts.get("dry_run"):
            view = plan.image.view() if plan.image is not None else None
            body = _cluster_body(plan, where, where.namespace_offline(env))
            emit(body if view is None else {"image": view, "job": body}, fmt)
            return
        backend = open_cluster(where, env)
        from mlsubmit.cli.preflight_report import refused_report
        from mlsubmit.cli.progress import progress_bar_for
        from mlsubmit.submit.kubernetes import create_on_cluster
        from mlsubmit.submit.run import RunOptions

        created = refused_report(  # a refusal's report goes to stdout with --format json/yaml, as Vertex AI's
            lambda: create_on_cluster(
                plan,
                where,
                backend,
                preflight=opts.get("preflight") is not False,
                connection={k: opts.get(k) for k in ("project", "access_token_file", "api_endpoint")},
                options=RunOptions(
                    progress=progress_bar_for(sys.stderr), cancel_on_interrupt=cancel_on_interrupt
                ),
                notify=status,
            ),
            fmt,
        )
        plan, body, result, checked = created.plan, created.body, created.result, created.checked
    job_id = plan.job_id
    if result.recovered:
        status(
            f"{body['kind']} {body['metadata']['name']} of job [{job_id}] was already made by an earlier attempt with the "
            "same definition; it was not created twice."
        )
    status(
        f"Job [{job_id}] submitted successfully ({body['kind']} {body['metadata']['name']} in {backend.namespace})."
    )
    follow = "stream-logs" if opts.get("stream_logs") else "wait" if opts.get("wait") else None
    if follow is None:
        status(
            f"Follow it with `mlsubmit jobs stream-logs {job_id}{where.hint_flags}` or "
            f"`kubectl get {body['kind'].lower()} {body['metadata']['name']} -n {backend.namespace}`."
        )
        if fmt == "text":
            emit({"jobId": job_id, "state": result.job.get("state")}, "yaml")
        else:
            emit(result.job if checked is None else {**result.job, "preflight": checked}, fmt)
        return
    final = follow_job(
        backend,
        job_id,
        logs=follow == "stream-logs",
        cancel=bool(opts.get("cancel_on_interrupt")) and not result.recovered,
        hint_flags=where.hint_flags,
        env=env,
    )
    from mlsubmit.services.poll import job_summary, raise_for_outcome

    if checked is not None:
        final = {**final, "preflight": checked}
    emit(final if fmt != "text" else job_summary(final), fmt)
    raise_for_outcome(final)


def preflight_kubernetes(request: TrainingRequest, opts: Mapping[str, Any], *, fmt: str) -> dict[str, Any]:
    """``mlsubmit preflight JOB --target kubernetes``: the job planned as ``training`` plans it (nothing uploaded,
    built or created), then the cluster's checks, each one line on stdout (or the report with ``--format json``).
    Returns the report; raises :class:`PreflightRefused` (exit 2) when a check refuses. A call that fails (no
    answer, a 5xx) is a "could not check" line for the step it stopped at, not an error: the caller exits 1."""
    from mlsubmit.cli.image_options import plan_request
    from mlsubmit.cli.preflight_report import print_checks
    from mlsubmit.errors import ApiError, EndpointRefusedError
    from mlsubmit.services.kubernetes.preflight import ClusterReport, check_cluster
    from mlsubmit.services.kubernetes.tfjobs import PLURALS
    from mlsubmit.services.preflight.check import UNCHECKED
    from mlsubmit.submit.plan import planned
    from mlsubmit.submit.preflight import judged

    try:
        with planned(plan_request(request, opts, target="tfjob")) as plan:
            where = Where.of(opts, plan.job.get("kubernetes"))
            plural = PLURALS[str(plan.body["kind"])]
            warnings = plan.warnings
    except InvalidJobError as err:
        raise reachable(err) from None
    for warning in warnings:
        status(f"WARNING: {warning}")
    backend = open_cluster(where, request.env)
    report = ClusterReport()
    try:
        check_cluster(backend, queue=where.queue, plural=plural, report=report)
    except (ApiError, EndpointRefusedError, OSError) as err:  # no answer, a 5xx: checked no further
        report.add(report.step, UNCHECKED, str(err).rstrip("."))
    print_checks(report.checks, fmt)
    return judged(report.checks)


def follow_job(
    backend: KubeJobs,
    job_id: str,
    *,
    logs: bool,
    cancel: bool,
    hint_flags: str,
    env: Mapping[str, str],
    logs_to: str = "stderr",
    timeout: float | None = None,
    task_name: str | None = None,
    polling_interval: float | None = None,
) -> dict[str, Any]:
    """Follow the TFJob to its end; Ctrl-C (or SIGTERM) deletes it only when ``cancel`` (a job this run made).
    ``task_name`` (``worker-1``) shows that replica's logs only; ``polling_interval`` polls without backoff."""
    from mlsubmit.cli.output import make_console
    from mlsubmit.console import using
    from mlsubmit.follow.kubernetes import follow_tfjob
    from mlsubmit.follow.session import sigterm_as_interrupt
    from mlsubmit.services.poll import interrupted
    from mlsubmit.services.retry import PollPolicy

    console = make_console(logs_to=logs_to)
    from mlsubmit.follow.logs import LOGS_POLL  # logs back off to 30 s at most, as Vertex AI's

    default = LOGS_POLL if logs else None
    try:
        with sigterm_as_interrupt(), using(console):  # the poll engine's retries speak through the console
            return follow_tfjob(
                backend,
                job_id,
                logs=logs,
                emit=console.emit,
                notify=console.notify,
                poll=PollPolicy.fixed(polling_interval)
                if polling_interval
                else PollPolicy.from_env(env, default),
                hint_flags=hint_flags,
                timeout=timeout,
                task_name=task_name,
            )
    except KeyboardInterrupt:
        raise interrupted(backend, job_id, cancel=cancel, hint_flags=hint_flags) from None


def name_of(job: str) -> str:
    """A JOB argument's TFJob name: a TFJob name as it is, a job id as ``training`` names its TFJob."""
    from mlsubmit.services.kubernetes.kubeconfig import DNS_LABEL
    from mlsubmit.targets.tfjob import k8s_name

    return job if "-" in job and DNS_LABEL.fullmatch(job) else k8s_name(job)


def _check_job(job: str) -> None:
    from mlsubmit.job.values import url_value_problem
    from mlsubmit.services.kubernetes.kubeconfig import DNS_LABEL

    if url_value_problem("job id", job) is not None and not DNS_LABEL.fullmatch(job):
        raise UsageError(f"JOB: {job[:80]!r} is neither a job id nor a TFJob name.")


def jobs_command(name: str, where: Any, **kw: Any) -> None:
    """``mlsubmit jobs describe|list|cancel|stream-logs|wait --target kubernetes`` (``where``: the jobs
    command's ``Where``, with ``context`` and ``namespace``)."""
    from mlsubmit.cli.common import environment
    from mlsubmit.services.poll import cancel_job, job_summary, raise_for_outcome

    env = environment()
    place = Where.of({"context": where.context, "namespace": where.namespace})
    fmt = where.fmt
    if name == "list_":
        from mlsubmit.cli.listing import write_jobs

        backend = open_cluster(place, env)
        write_jobs(backend.iter_list(kw.get("filter_"), kw.get("limit")), fmt)
        return
    job = str(kw["job"])
    _check_job(job)
    backend = open_cluster(place, env)
    backend.name_of = name_of
    if name == "describe":
        emit(backend.get(job), fmt if fmt != "text" else "yaml")
        return
    if name == "cancel":
        found, sent = cancel_job(backend, job)
        if sent:
            status(f"Deletion of TFJob {name_of(job)} requested (Foreground: its pods go first).")
        else:
            status(f"Job [{job}] has already ended ({found.get('state')}); nothing to cancel.")
        emit(found if fmt != "text" else job_summary(found), fmt if fmt != "text" else "yaml")
        return
    if kw.get("cancel_on_interrupt"):
        status(
            "WARNING: --cancel-on-interrupt deletes only a TFJob the same run created (`training --target "
            "kubernetes`); on Ctrl-C this one keeps running."
        )
    from mlsubmit.errors import WaitTimeoutError

    try:
        final = follow_job(
            backend,
            job,
            logs=name == "stream_logs",
            cancel=False,
            hint_flags=place.hint_flags,
            env=env,
            logs_to="stderr" if fmt != "text" or name == "wait" else "stdout",
            timeout=kw.get("timeout"),
            task_name=kw.get("task_name"),
            polling_interval=kw.get("polling_interval"),
        )
    except WaitTimeoutError as err:
        emit(job_summary(err.job) if fmt == "text" else err.job, fmt if fmt != "text" else "yaml")
        raise
    if fmt != "text" or name == "wait":
        emit(final if fmt != "text" else job_summary(final), fmt if fmt != "text" else "yaml")
    raise_for_outcome(final)
