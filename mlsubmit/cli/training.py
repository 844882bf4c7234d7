"""`mlsubmit training JOB [flags] -- USER_ARGS`: every flag of `gcloud ai-platform jobs submit training`."""

from __future__ import annotations

from typing import Any

import click

from mlsubmit.cli.job_options import build_request, cost_options, job_command
from mlsubmit.cli.options import connection_options, format_option, kubernetes_options, submit_options
from mlsubmit.errors import UsageError


def _training(ctx: click.Context, /, job: str, **opts: Any) -> None:
    """Submit the job: dry run, or plan, check, stage, build, create and follow (docs/kubernetes.md for a TFJob)."""
    if opts["async_"] and (opts["stream_logs"] or opts["wait"]):
        raise UsageError("--async cannot be combined with --stream-logs or --wait; pick one.")
    target = opts["target"]
    made = build_request(ctx, job, target=target)
    fmt = opts["fmt"]
    from mlsubmit.cli.output import preflight_alone, show_checkup, show_cost, status, warn

    if target == "kubernetes":  # docs/kubernetes.md
        from mlsubmit.cli.kubernetes import training_kubernetes

        training_kubernetes(made, opts, fmt=fmt)  # Ctrl-C cancels its image build too
        return
    if opts["preflight"] and target != "vertex":
        status("WARNING: --preflight checks Vertex AI jobs only (--target vertex); nothing to check here.")
    if opts["dry_run"] and opts["preflight"] and target == "vertex":
        preflight_alone(made, fmt=fmt, then_emit_body=True)
        return
    if opts["dry_run"]:
        with made.planned() as plan:  # the checkup and the image's view read what is on disk while it is
            show_checkup(made, plan)
            printed = plan.printed()
        warn(plan.warnings)
        show_cost(plan, opts, printed, fmt)  # the body (or the whole plan), then its cost (docs/cost.md)
        return
    from mlsubmit.cli.submitting import submit_and_report

    submit_and_report(
        made,
        fmt=fmt,
        follow="stream-logs" if opts["stream_logs"] else "wait" if opts["wait"] else None,
        cancel_on_interrupt=opts["cancel_on_interrupt"],
    )


# The job groups with following, --target and failover; then cost, Kubernetes, submit, connection and output.
training = job_command(
    "training",
    _training,
    cost_options,
    kubernetes_options,  # --context, --namespace, --queue (docs/kubernetes.md)
    submit_options,
    connection_options,
    format_option,
    submits=True,
)
