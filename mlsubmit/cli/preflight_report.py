"""The preflight's output (each check a line, or the report) and the Vertex AI preflight step, for `preflight`
and `training --dry-run --preflight` (so neither command imports the other; docs/getting-jobs-to-start.md)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import click

from mlsubmit.cli.output import emit, status, warn
from mlsubmit.errors import PreflightRefused

if TYPE_CHECKING:
    from mlsubmit.api import Call


def print_checks(checks: Iterable[Any], fmt: str) -> None:
    """Each check as one line on stdout, or the JSON/YAML report."""
    from mlsubmit.services.preflight import report

    found = list(checks)
    if fmt != "text":
        emit(report(found), fmt)
        return
    for check in found:
        click.echo(check.line())


def preflight_alone(made: Call, *, fmt: str, then_emit_body: bool = False) -> dict[str, Any]:
    """The Vertex AI preflight of the job (``then_emit_body``: then the plan); returns the report."""
    from mlsubmit.cli.output import show_checkup
    from mlsubmit.submit.preflight import check, judged, plan_checks

    with made.planned("vertex") as plan:
        if then_emit_body:
            show_checkup(made, plan)
        warn(plan.warnings)
        with made.settings(plan, status) as settings:
            if then_emit_body:
                whole = refused_report(lambda: check(plan, settings), fmt)
                emit(plan.printed(), fmt)
                return dict(whole)
            checks = plan_checks(plan, settings)
            print_checks(checks, fmt)
    return dict(judged(checks))


def refused_report(step: Callable[[], Any], fmt: str) -> Any:
    """Run ``step``; a refused preflight prints its report on stdout (json/yaml), then goes on."""
    try:
        return step()
    except PreflightRefused as err:
        if fmt != "text" and err.report is not None:
            emit(err.report, fmt)
        raise
