"""`mlsubmit export`: the job, checked as `training` does, as a Vertex AI CustomJob or HyperparameterTuningJob
body or a Kubernetes TFJob. Nothing is created; local packages are staged first (or built into the image), so the
output never names code that is not uploaded; ``--dry-run`` prints the plan offline instead."""

from __future__ import annotations

from typing import Any

import click

from mlsubmit.cli.job_options import build_request, job_command
from mlsubmit.cli.options import connection_options, dry_run_option
from mlsubmit.job.vocab import EXPORT_FORMATS


def render(data: Any, output: str) -> str:
    """``data`` as JSON, or YAML printing multi-line strings (the TFJob's script) as ``|`` blocks; one newline."""
    from mlsubmit.cli.serialize import json_text, yaml_text

    return json_text(data) + "\n" if output == "json" else yaml_text(data, literal_blocks=True)


def _export(ctx: click.Context, /, job: str, **opts: Any) -> None:
    """Print the plan's body, made real first as `training` makes it (module docstring)."""
    from contextlib import ExitStack

    from mlsubmit.cli.output import status, warn
    from mlsubmit.submit.run import realize

    made = build_request(ctx, job, exclude=("export_format", "output", "dry_run"))
    with ExitStack() as command, made.planned(opts["export_format"]) as plan:
        done, printed = plan, plan.body
        if opts["dry_run"]:
            printed = plan.printed()  # nothing uploaded, built or asked of a service
        elif plan.uploads or plan.image is not None:  # (else only gs:// packages: nothing to do first)
            done, sent = realize(plan, command.enter_context(made.settings(plan, status)))
            printed = done.body
            if plan.image is None:
                status(f"Staged {len(plan.uploads)} package(s) for the export ({sent} bytes sent).")
    warn(done.warnings)
    click.echo(render(printed, opts["output"]), nl=False)


# `training`'s job groups without following, failover (it starts jobs) or --target (--format says it); with
# the connection options its uploads and builds use, and --dry-run (the plan offline).
export = job_command(
    "export",
    _export,
    connection_options,
    click.option(
        "--format",
        "export_format",
        type=click.Choice(EXPORT_FORMATS, case_sensitive=False),
        required=True,
        help="customjob: a Vertex AI CustomJob body; hptuningjob: a Vertex AI HyperparameterTuningJob "
        "body (for configs with hyperparameters); tfjob: a Kubeflow TFJob manifest.",
    ),
    click.option(
        "--output",
        type=click.Choice(["yaml", "json"], case_sensitive=False),
        default="yaml",
        show_default=True,
        help="Serialisation on stdout.",
    ),
    click.option("--namespace", help="Kubernetes namespace of the TFJob (tfjob only)."),
    dry_run_option(
        help="Print the plan offline, as `training --dry-run` does (with --build-image: the job, its image and "
        "uploads); upload nothing, build nothing, no credentials."
    ),
)
