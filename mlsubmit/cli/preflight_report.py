"""The preflight's output: each check as a line or the report, and the step that plans a Vertex AI job and runs its
checks. Used by `preflight` (alone) and by `training` (its first step, and ``--dry-run --preflight``), so neither
command imports the other (docs/getting-jobs-to-start.md)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import click

from mlsubmit.cli.output import emit, status
from mlsubmit.errors import PreflightRefused

__all__ = ["checked", "preflight_alone", "print_checks"]
log = logging.getLogger(__name__)


def print_checks(checks: Iterable[Any], fmt: str, *, to_stdout: bool) -> None:
    """Each check as one line on stdout (`preflight`), or the JSON/YAML report; inside `training` the lines go
    to stderr, the ``ok`` ones only with ``--verbosity info`` (a passing preflight stays quiet)."""
    from mlsubmit.services.preflight import OK, report

    found = list(checks)
    if fmt != "text" and to_stdout:
        emit(report(found), fmt)
        return
    for check in found:
        if to_stdout:
            click.echo(check.line())
        elif check.status == OK:
            log.info("%s", check.line())
        else:
            status(check.line())


def checked(plan: Any, settings: Any, *, fmt: str = "text", to_stdout: bool = False) -> dict[str, Any]:
    """Run the preflight over a Vertex AI plan, print it and return its report (``{"ok", "checks"}`` as
    `preflight --format json` prints it); raise :class:`PreflightRefused` (with the report) when refused.

    ``plan`` is a ``submit.Plan`` (its body and its uploads); ``settings`` its ``Settings.for_job``. Inside
    `training --format json` a refused preflight prints its JSON report on stdout before the error; a passing
    one goes into the job `training` prints (``cli.submitting``).
    """
    from mlsubmit.preflight import preflight as run_preflight
    from mlsubmit.services.preflight import refused, report

    built = [plan.image_name] if getattr(plan, "image_name", None) else []  # --build-image makes it later
    checks = run_preflight(plan.body, settings, uploads=[s.uri for s in plan.uploads], built=built)
    print_checks(checks, fmt if to_stdout else "text", to_stdout=to_stdout)
    bad, whole = refused(checks), report(checks)
    if bad and fmt != "text" and not to_stdout:
        emit(whole, fmt)
    if bad:
        raise PreflightRefused([f"preflight refused: {c.name}: {c.message}" for c in bad], whole)
    return whole


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
    from mlsubmit.services.settings import Settings
    from mlsubmit.submit import planned

    connection = {k: opts.get(k) for k in ("project", "access_token_file", "api_endpoint")}
    from mlsubmit.cli.image_options import image_step

    with planned(
        request, target="vertex", executor_image_uri=opts.get("executor_image_uri"), image=image_step(opts)
    ) as plan:
        if checkup is not None:
            checkup(plan)
        for warning in plan.warnings:
            status(f"WARNING: {warning}")
        with Settings.for_job(plan, request.env, **connection, notify=status) as settings:
            checked(plan, settings, fmt=fmt, to_stdout=not then_emit_body)
        if then_emit_body:
            emit(plan.body, fmt)
