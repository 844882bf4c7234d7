"""`training --wait` / `--stream-logs`: follow the job just created and exit with its outcome."""

from __future__ import annotations

from typing import Any

import click

from mlsubmit.cli.output import emit, status
from mlsubmit.spec.validate import TrainingRequest
from mlsubmit.submit import SubmitOptions, Submitted


def follow_submitted(
    done: Submitted,
    request: TrainingRequest,
    options: SubmitOptions,
    *,
    mode: str,
    fmt: str,
    cancel_on_interrupt: bool,
) -> None:
    """Follow ``done`` until it ends; print the final job; raise JobFailedError unless it SUCCEEDED."""
    from mlsubmit.follow.lifecycle import job_summary, raise_for_outcome
    from mlsubmit.follow.session import follow, sigterm_as_interrupt
    from mlsubmit.services.connection import connect

    backend = done.backend
    region = (
        done.job.get("region")
        or request.flags.given.get("region")
        or request.env.get("CLOUDSDK_COMPUTE_REGION")
    )

    def logs_service() -> Any:
        return connect(
            "logging", env=request.env, project_flag=backend.project, token_file=options.access_token_file
        )[0]

    hint = "" if options.target == "ml" else f" --target vertex --region {region}"
    with sigterm_as_interrupt():
        final = follow(
            backend,
            done.job_id,
            mode="stream-logs" if mode == "stream-logs" else "wait",
            logs_service_factory=logs_service,
            env=request.env,
            cancel_on_interrupt=cancel_on_interrupt,
            notify=status,
            emit=lambda line: click.echo(line, err=True),  # gcloud streams submit logs on stderr
            hint_flags=hint,
        )
    emit(final if fmt != "text" else job_summary(final), fmt)
    raise_for_outcome(final)
