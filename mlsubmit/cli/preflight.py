"""`mlsubmit preflight [training flags]`: the read-only checks a Vertex AI submit runs first, alone.

The job is merged, validated and built exactly like `mlsubmit training --target vertex` (same flags, same
config file); then every check runs at once and prints one line (docs/getting-jobs-to-start.md). Nothing is
uploaded or created. Exit 0 when nothing is refused, 2 when something is.

:func:`mlsubmit.submit.preflight.check` is the same step inside `training` (its first step before any upload or
create).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import click

from mlsubmit.cli.export import NOT_COPIED as EXPORT_NOT_COPIED
from mlsubmit.cli.output import emit, status
from mlsubmit.errors import PreflightRefused

__all__ = ["PreflightRefused", "preflight", "preflight_alone", "print_checks", "refused_report"]

# training options about submitting and following: not offered here, as in export (--format, the token file and
# the endpoint are kept: the checks read the APIs; --target is vertex). Failover starts jobs; the preflight checks
# the job (its quota check skips candidates).
NOT_COPIED = EXPORT_NOT_COPIED - {"fmt", "access_token_file", "api_endpoint"}


def print_checks(checks: Iterable[Any], fmt: str) -> None:
    """Each check as one line on stdout (`preflight`), or the JSON/YAML report (inside `training` the lines go
    to the console: ``submit.preflight.check``)."""
    from mlsubmit.services.preflight import report

    found = list(checks)
    if fmt != "text":
        emit(report(found), fmt)
        return
    for check in found:
        click.echo(check.line())


def preflight_alone(
    request: Any,
    opts: Mapping[str, Any],
    *,
    fmt: str,
    then_emit_body: bool = False,
    checkup: Callable[[Any], None] | None = None,
) -> None:
    """Plan a Vertex AI job like `training` (built locally, nothing uploaded) and run its preflight; with
    ``then_emit_body`` (`training --dry-run --preflight`) the lines go to stderr and the body to stdout.
    ``checkup``: what says what it sees in the plan first (`training`'s trainer checkup)."""
    from mlsubmit.cli.image_options import plan_request
    from mlsubmit.services.settings import Settings
    from mlsubmit.submit.plan import planned
    from mlsubmit.submit.preflight import check, judged, plan_checks

    connection = {k: opts.get(k) for k in ("project", "access_token_file", "api_endpoint")}
    with planned(plan_request(request, opts, target="vertex")) as plan:
        if checkup is not None:
            checkup(plan)
        for warning in plan.warnings:
            status(f"WARNING: {warning}")
        with Settings.for_job(plan, request.env, **connection, notify=status) as settings:
            if then_emit_body:
                refused_report(lambda: check(plan, settings), fmt)
            else:
                checks = plan_checks(plan, settings)
                print_checks(checks, fmt)
                judged(checks)
        if then_emit_body:
            emit(plan.printed(), fmt)


def refused_report(step: Callable[[], Any], fmt: str) -> Any:
    """Run ``step``; a refused preflight prints its JSON/YAML report on stdout (``--format json``) before the
    error goes on."""
    try:
        return step()
    except PreflightRefused as err:
        if fmt != "text" and err.report is not None:
            emit(err.report, fmt)
        raise


def _preflight(ctx: click.Context, job: str, **opts: Any) -> None:
    """Run the preflight of a Vertex AI job alone (module docstring)."""
    from mlsubmit.cli.training import build_request

    preflight_alone(build_request(ctx, job, opts), opts, fmt=opts["fmt"].lower())
    sys.stdout.flush()


def _build() -> click.Command:
    from mlsubmit.cli.training import with_training_flags

    return with_training_flags(
        "preflight",
        _preflight,
        help=(
            "Check that a Vertex AI job can start (read-only: APIs, buckets, service account, key, images, quota): "
            "mlsubmit preflight JOB [training flags]."
        ),
        drop=NOT_COPIED,
    )


preflight = _build()
