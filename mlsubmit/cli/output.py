"""Reporters: results on stdout (text, JSON or YAML), diagnostics on stderr."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from mlsubmit.cli.serialize import json_text, yaml_text
from mlsubmit.errors import MlsubmitError

if TYPE_CHECKING:
    from mlsubmit.api import Call
    from mlsubmit.console import Console
    from mlsubmit.submit.plan import Plan

FORMATS = ("text", "json", "yaml")


def dump(data: Any, fmt: str) -> str:
    """Serialise a result for stdout. ``text`` uses YAML, like gcloud's default resource output. Control
    characters from a server or a user are escaped in the format's syntax, so the output reads back exactly
    (``cli.serialize``, docs/security.md)."""
    if fmt == "json":
        return json_text(data)
    return yaml_text(data).rstrip("\n")


def emit(data: Any, fmt: str) -> None:
    """Print a result on stdout."""
    click.echo(dump(data, fmt))


def status(message: str) -> None:
    """Print a diagnostic or progress line on stderr (control characters neutralised: it may quote a server)."""
    from mlsubmit.services.answers import neutralize

    click.echo(neutralize(message, keep_newlines=True), err=True)


def show_checkup(made: Call, plan: Plan) -> None:
    """The image the plan builds, on which base and why; then what the trainer checkup finds (docs/migrate.md)."""
    if plan.image is not None:  # a default TensorFlow says which one: Keras 3 or not
        spec = plan.image.spec
        status(f"Image {spec.tagged}: on {spec.base} ({spec.base_reason})")
    for note in made.trainer_warnings(plan):
        status(f"WARNING: {note}")


def report_error(err: MlsubmitError) -> None:
    """Print an error the way gcloud does: ``ERROR: ...`` on stderr, one line per problem, with control
    characters neutralised (an error may quote what a server sent)."""
    from mlsubmit.services.answers import neutralize

    for line in err.report_lines():
        click.echo(neutralize(line, keep_newlines=True), err=True)


def make_console(*, logs_to: str = "stderr") -> Console:
    """The command's :class:`~mlsubmit.console.Console`, made here at the edge: status lines on stderr, log lines
    on ``logs_to`` (``stdout`` for ``jobs stream-logs --format text``), children's bytes on this process's
    streams (looked up now, so a test runner's capture sees them)."""
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
