"""``--target kubernetes`` for ``training``, ``preflight`` and ``jobs`` (docs/kubernetes.md): the TFJob of the plan
(made and checked before the kubeconfig is read), created exactly once on the cluster, followed to its exit code."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from mlsubmit.cli.output import emit, progress_bar_for, show_checkup, show_job, status, warn
from mlsubmit.services.poll import interrupted, raise_for_outcome
from mlsubmit.submit.kubernetes import Where

if TYPE_CHECKING:
    from mlsubmit.api import Call
    from mlsubmit.services.kubernetes.tfjobs import KubeJobs


def open_cluster(where: Where, env: Mapping[str, str]) -> KubeJobs:
    """The TFJobs backend of the kubeconfig's context (read now; nothing is sent yet), closed with the command."""
    import click

    from mlsubmit.submit.kubernetes import open_cluster as opened

    backend = opened(where, env, status)
    click.get_current_context().call_on_close(backend.client.close)
    return backend


def training_kubernetes(made: Call, opts: Mapping[str, Any], *, fmt: str) -> None:
    """``mlsubmit training JOB --target kubernetes``: dry run, or plan, check, stage, build, create, follow."""
    with made.planned() as plan:  # the plan's folder (its sdist, the image context) lives until the create
        where = made.where(plan)
        show_checkup(made, plan)
        warn(plan.warnings)
        if opts["dry_run"]:
            body = made.cluster_body(plan, where)
            emit(body if plan.image is None else {"image": plan.image.view(), "job": body}, fmt)
            return
        backend = open_cluster(where, made.request.env)
        from mlsubmit.cli.output import refused_report

        cancel = opts["cancel_on_interrupt"]
        how = {"progress": progress_bar_for(sys.stderr), "cancel_on_interrupt": cancel}
        # a refusal's report goes to stdout with --format json/yaml, as Vertex AI's
        created = refused_report(lambda: made.create_on_cluster(plan, where, backend, status, **how), fmt)
    job_id, result, checked = created.plan.job_id, created.result, created.checked
    made_as = f"{created.body['kind']} {created.body['metadata']['name']}"
    if result.recovered:
        status(
            f"{made_as} of job [{job_id}] was already made by an earlier attempt with the same definition; it was "
            "not created twice."
        )
    status(f"Job [{job_id}] submitted successfully ({made_as} in {backend.namespace}).")
    if not (opts["stream_logs"] or opts["wait"]):
        kubectl = f"kubectl get {made_as.lower()} -n {backend.namespace}"
        status(f"Follow it with `mlsubmit jobs stream-logs {job_id}{where.hint_flags}` or `{kubectl}`.")
        if fmt == "text":
            emit({"jobId": job_id, "state": result.job.get("state")}, "yaml")
        else:
            show_job(result.job, fmt, checked)
        return
    kw: dict[str, Any] = {"cancel": bool(cancel) and not result.recovered, "env": made.request.env}
    final = follow_job(backend, job_id, logs=bool(opts["stream_logs"]), hint_flags=where.hint_flags, **kw)
    show_job(final, fmt, checked)
    raise_for_outcome(final)


def preflight_kubernetes(made: Call, *, fmt: str) -> dict[str, Any]:
    """`preflight --target kubernetes`: the cluster's checks, one line each (or the report)."""
    from mlsubmit.cli.output import print_checks
    from mlsubmit.errors import ApiError, EndpointRefusedError
    from mlsubmit.services.kubernetes.preflight import ClusterReport, check_cluster
    from mlsubmit.services.kubernetes.tfjobs import PLURALS
    from mlsubmit.services.preflight.check import UNCHECKED
    from mlsubmit.submit.preflight import judged

    with made.planned() as plan:
        where = made.where(plan)
        plural = PLURALS[str(plan.body["kind"])]
        warn(plan.warnings)
    backend = open_cluster(where, made.request.env)
    report = ClusterReport()
    try:
        check_cluster(backend, report, queue=where.queue, plural=plural)
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
    **more: Any,
) -> dict[str, Any]:
    """Follow the TFJob to its end; Ctrl-C deletes it only when ``cancel`` (a job this run made)."""
    from mlsubmit.cli.output import make_console
    from mlsubmit.console import using
    from mlsubmit.follow.kubernetes import follow_tfjob
    from mlsubmit.follow.logs import LOGS_POLL  # logs back off to 30 s at most, as Vertex AI's
    from mlsubmit.follow.session import sigterm_as_interrupt
    from mlsubmit.services.retry import PollPolicy

    console = make_console(logs_to=logs_to)
    interval = more.pop("polling_interval", None)
    poll = PollPolicy.fixed(interval) if interval else PollPolicy.from_env(env, LOGS_POLL if logs else None)
    try:
        with sigterm_as_interrupt(), using(console):  # the poll engine's retries speak through the console
            more |= {"logs": logs, "poll": poll, "hint_flags": hint_flags}
            return follow_tfjob(backend, job_id, emit=console.emit, notify=console.notify, **more)
    except KeyboardInterrupt:
        raise interrupted(backend, job_id, cancel=cancel, hint_flags=hint_flags) from None


def name_of(job: str) -> str:
    """A JOB argument's TFJob name: a TFJob name as it is, a job id as ``training`` names its TFJob."""
    from mlsubmit.services.kubernetes.kubeconfig import DNS_LABEL
    from mlsubmit.targets.tfjob import k8s_name

    return job if "-" in job and DNS_LABEL.fullmatch(job) else k8s_name(job)
