"""`mlsubmit preflight [training flags]`: the read-only checks a Vertex AI submit runs first, alone.

The job is merged, validated and built exactly like `mlsubmit training --target vertex` (same flags, same
config file); then every check runs at once and prints one line (docs/getting-jobs-to-start.md). Nothing is
uploaded or created. Exit 0 when nothing is refused, 2 when something is.

:func:`cli.preflight_report.checked` is the same step inside `training` (its first step before any upload or
create).
"""

from __future__ import annotations

import sys
from typing import Any

import click

from mlsubmit.cli.job_options import build_request, job_command, job_command_options
from mlsubmit.cli.options import connection_options, format_option
from mlsubmit.cli.preflight_report import preflight_alone

__all__ = ["preflight"]


def _preflight(ctx: click.Context, /, job: str, **opts: Any) -> None:
    """Run the preflight of a Vertex AI job alone (module docstring)."""
    preflight_alone(build_request(ctx, job, opts), opts, fmt=opts["fmt"].lower())
    sys.stdout.flush()


# The job's groups as `training` has them, without following or submitting (--target is vertex; failover starts
# jobs, the preflight checks the job: its quota check skips candidates); the checks read the APIs: connection.
preflight = job_command(
    "preflight",
    _preflight,
    job_command_options(follow=False, failover=False),
    connection_options,
    format_option,
    help=(
        "Check that a Vertex AI job can start (read-only: APIs, buckets, service account, key, images, quota): "
        "mlsubmit preflight JOB [training flags]."
    ),
)
