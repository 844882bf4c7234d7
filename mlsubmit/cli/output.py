"""Reporters: results on stdout (text, JSON or YAML), diagnostics on stderr."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import click

from mlsubmit.cli.serialize import json_text, yaml_text
from mlsubmit.errors import MlsubmitError

if TYPE_CHECKING:
    from mlsubmit.api import Call
    from mlsubmit.console import Console
    from mlsubmit.submit.plan import Plan

FORMATS = ("text", "json", "yaml")


def emit(data: Any, fmt: str) -> None:
    """A result on stdout (``text`` is YAML, as gcloud), read back exactly (``cli.serialize``)."""
    click.echo(json_text(data) if fmt == "json" else yaml_text(data).rstrip("\n"))


def show_job(job: dict[str, Any], fmt: str, preflight: dict[str, Any] | None = None) -> None:
    """The job on stdout (with the preflight report, when one ran): whole in json/yaml, its summary in text."""
    from mlsubmit.services.poll import job_summary

    job = job if preflight is None else {**job, "preflight": preflight}
    emit(job if fmt != "text" else job_summary(job), fmt)


def status(message: str) -> None:
    """Print a diagnostic or progress line on stderr (control characters neutralised: it may quote a server)."""
    from mlsubmit.services.answers import neutralize

    click.echo(neutralize(message, keep_newlines=True), err=True)


def warn(notes: Iterable[object]) -> None:
    """Each of ``notes`` as a ``WARNING:`` line on stderr."""
    for note in notes:
        status(f"WARNING: {note}")


def show_checkup(made: Call, plan: Plan) -> None:
    """The image the plan builds, on which base and why; then what the trainer checkup finds (docs/migrate.md)."""
    if plan.image is not None:  # a default TensorFlow says which one: Keras 3 or not
        spec = plan.image.spec
        status(f"Image {spec.tagged}: on {spec.base} ({spec.base_reason})")
    warn(made.trainer_warnings(plan))


def report_error(err: MlsubmitError) -> None:
    """An error as gcloud prints it: ``ERROR: ...`` lines on stderr, control characters neutralised."""
    for line in err.report_lines():
        status(line)


def make_console(*, logs_to: str = "stderr") -> Console:
    """The console: status on stderr, log lines on ``logs_to``, children's bytes on our streams."""
    import sys

    from mlsubmit.console import Console, bytes_of

    to_stderr = logs_to == "stderr"
    return Console(
        notify=status,
        emit=lambda line: click.echo(line, err=to_stderr),
        stdout=bytes_of(sys.stdout),
        stderr=bytes_of(sys.stderr),
        interactive=sys.stderr.isatty(),
    )
