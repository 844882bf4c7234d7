"""`mlsubmit training JOB [flags] -- USER_ARGS`: every flag of `gcloud ai-platform jobs submit training`."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

from mlsubmit.cli.common import AppArgsCommand
from mlsubmit.cli.cost_options import cost_options
from mlsubmit.cli.job_options import build_request, job_command_options
from mlsubmit.cli.options import (
    compose,
    connection_options,
    format_option,
    kubernetes_options,
    submit_options,
)
from mlsubmit.errors import UsageError
from mlsubmit.job.validate import TrainingRequest

if TYPE_CHECKING:
    from mlsubmit.submit.plan import Plan


def trainer_checkup(request: TrainingRequest) -> Callable[[Plan], None]:
    """What prints, for the plan of ``request``, one warning line for what the trainer checkup finds that fails
    on the plan's target (docs/migrate.md): from the files the plan's sdist build walked and
    read, so the package is read once."""

    def check(plan: Plan) -> None:
        from mlsubmit.cli.output import status

        if (
            plan.image is not None
        ):  # which base, and why (a default TensorFlow says which one: Keras 3 or not)
            spec = plan.image.spec
            status(f"Image {spec.tagged}: on {spec.base} ({spec.base_reason})")
        if not request.package_path:
            return
        from pathlib import Path

        from mlsubmit.migrate.checkup import trainer_notes

        base = plan.image.spec.base if plan.image is not None else None  # judged as migrate judges it
        notes = trainer_notes(
            plan.job, plan.target, Path(request.package_path), plan.walked, sdist=plan.sdist, image_base=base
        )
        for note in notes:
            status(f"WARNING: {note}")

    return check


@click.command(cls=AppArgsCommand, context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("job")
@compose(
    job_command_options(follow=True, failover=True),
    cost_options,
    kubernetes_options,  # --context, --namespace, --queue (docs/kubernetes.md)
    submit_options,
    connection_options,
    format_option,
)
@click.pass_context
def training(ctx: click.Context, /, job: str, **opts: Any) -> None:
    """Submit a training job: mlsubmit training JOB [flags] -- [USER_ARGS]."""
    if opts["async_"] and (opts["stream_logs"] or opts["wait"]):
        raise UsageError("--async cannot be combined with --stream-logs or --wait; pick one.")
    request = build_request(ctx, job, opts, exclude=("preflight",))
    target = opts["target"].lower()
    checkup = trainer_checkup(request)
    fmt = opts["fmt"].lower()
    from mlsubmit.cli.output import status

    if target == "kubernetes":  # docs/kubernetes.md
        from mlsubmit.cli.kubernetes import training_kubernetes

        training_kubernetes(  # Ctrl-C cancels its image build too
            request, opts, fmt=fmt, checkup=checkup, cancel_on_interrupt=opts["cancel_on_interrupt"]
        )
        return
    if opts["preflight"] and target != "vertex":
        status("WARNING: --preflight checks Vertex AI jobs only (--target vertex); nothing to check here.")
    if opts["dry_run"] and opts["preflight"] and target == "vertex":
        from mlsubmit.cli.preflight_report import preflight_alone

        preflight_alone(request, opts, fmt=fmt, then_emit_body=True, checkup=checkup)
        return
    from mlsubmit.cli.image_options import plan_request

    whole = plan_request(request, opts, target=target)
    if opts["dry_run"]:
        from mlsubmit.cli.cost_options import show_cost
        from mlsubmit.submit.plan import planned

        with planned(whole) as plan:  # the checkup and the image's view read what is on disk while it is
            checkup(plan)
            printed = plan.printed()
        for warning in plan.warnings:
            status(f"WARNING: {warning}")
        show_cost(plan, opts, printed, fmt)  # the body (or the whole plan), then its cost (docs/cost.md)
        return
    from mlsubmit.cli.submitting import submit_and_report
    from mlsubmit.submit.run import RunOptions

    submit_and_report(
        whole,
        RunOptions(
            preflight=target == "vertex" and opts["preflight"] is not False,
            max_queue_wait=opts["max_queue_wait"],
            cancel_on_interrupt=opts["cancel_on_interrupt"],
        ),
        connection={k: opts[k] for k in ("project", "access_token_file", "api_endpoint")},
        fmt=fmt,
        follow="stream-logs" if opts["stream_logs"] else "wait" if opts["wait"] else None,
        checkup=checkup,
    )
