"""`mlsubmit training JOB [flags] -- USER_ARGS`: every flag of `gcloud ai-platform jobs submit training`."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

from mlsubmit.cli.common import AppArgsCommand
from mlsubmit.cli.image_options import image_step
from mlsubmit.cli.job_options import build_request, job_command_options
from mlsubmit.cli.options import compose, connection_options, format_option, submit_options
from mlsubmit.errors import UsageError
from mlsubmit.job.validate import TrainingRequest

if TYPE_CHECKING:
    from mlsubmit.submit import Plan


def trainer_checkup(request: TrainingRequest) -> Callable[[Plan], None]:
    """What prints, for the plan of ``request``, one warning line for what the trainer checkup finds that fails
    on the plan's target (docs/migrate.md): from the files the plan's sdist build walked and
    read, so the package is read once."""

    def check(plan: Plan) -> None:
        if not request.package_path:
            return
        from pathlib import Path

        from mlsubmit.cli.output import status
        from mlsubmit.migrate.summary import trainer_notes

        for note in trainer_notes(plan.job, plan.target, Path(request.package_path), plan.walked):
            status(f"WARNING: {note}")

    return check


@click.command(cls=AppArgsCommand, context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("job")
@compose(job_command_options(follow=True, failover=True), submit_options, connection_options, format_option)
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

    if opts["preflight"] and target != "vertex":
        status("WARNING: --preflight checks Vertex AI jobs only (--target vertex); nothing to check here.")
    if opts["dry_run"] and opts["preflight"] and target == "vertex":
        from mlsubmit.cli.preflight_report import preflight_alone

        preflight_alone(request, opts, fmt=fmt, then_emit_body=True, checkup=checkup)
        return
    if opts["dry_run"]:
        from mlsubmit.cli.output import emit
        from mlsubmit.submit import dry_run

        planned = dry_run(
            request, target=target, executor_image_uri=opts["executor_image_uri"], image=image_step(opts)
        )
        checkup(planned)
        for warning in planned.warnings:
            status(f"WARNING: {warning}")
        # with --build-image: the image (Dockerfile, content tag, name, build request) beside the job
        emit(
            planned.body
            if planned.image_view is None
            else {"image": planned.image_view, "job": planned.body},
            fmt,
        )
        return
    from mlsubmit.cli.submitting import submit_and_report

    follow = "stream-logs" if opts["stream_logs"] else "wait" if opts["wait"] else None
    hook = None
    if target == "vertex" and opts["preflight"] is not False:
        from mlsubmit.cli.preflight_report import checked

        def hook(plan: Any, job_settings: Any) -> dict[str, Any]:
            # with failover candidates a refusal goes to stderr only: stdout gets the job the failover settles on
            return checked(plan, job_settings, fmt="text" if len(plan.candidates) > 1 else fmt)

    submit_and_report(
        request,
        target=target,
        executor_image_uri=opts["executor_image_uri"],
        connection={k: opts[k] for k in ("project", "access_token_file", "api_endpoint")},
        fmt=fmt,
        follow=follow,
        cancel_on_interrupt=opts["cancel_on_interrupt"],
        max_queue_wait=opts["max_queue_wait"],
        image=image_step(opts, cancel_on_interrupt=opts["cancel_on_interrupt"]),
        preflight=hook,
        checkup=checkup,
    )
