"""Reporters: results on stdout (text, JSON or YAML), diagnostics on stderr."""

from __future__ import annotations

from typing import Any

import click

from mlsubmit.cli.serialize import json_text, yaml_text
from mlsubmit.errors import MlsubmitError
from mlsubmit.services.answers import neutralize

FORMATS = ("text", "json", "yaml")


def dump(data: Any, fmt: str) -> str:
    """Serialise a result for stdout. ``text`` uses YAML, like gcloud's default resource output. Control
    characters from a server or a user are escaped in the format's syntax, so the output reads back exactly
    (``cli.serialize``, README "Security")."""
    if fmt == "json":
        return json_text(data)
    return yaml_text(data).rstrip("\n")


def emit(data: Any, fmt: str) -> None:
    """Print a result on stdout."""
    click.echo(dump(data, fmt))


def status(message: str) -> None:
    """Print a diagnostic or progress line on stderr (control characters neutralised: it may quote a server)."""
    click.echo(neutralize(message, keep_newlines=True), err=True)


def report_error(err: MlsubmitError) -> None:
    """Print an error the way gcloud does: ``ERROR: ...`` on stderr, one line per problem, with control
    characters neutralised (an error may quote what a server sent)."""
    for line in err.report_lines():
        click.echo(neutralize(line, keep_newlines=True), err=True)
