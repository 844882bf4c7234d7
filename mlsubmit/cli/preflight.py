"""`mlsubmit preflight [training flags]`: the read-only checks a Vertex AI submit runs first, alone.

The job is merged, validated and built exactly like `mlsubmit training --target vertex` (same flags, same
config file); then every check runs at once and prints one line (README "Getting jobs to start"). Nothing is
uploaded or created. Exit 0 when nothing is refused, 2 when something is.

:func:`checked` is the same step inside `training` (its first step before any upload or create).
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import click

from mlsubmit.cli.common import AppArgsCommand
from mlsubmit.cli.output import emit, status
from mlsubmit.errors import UsageError

__all__ = ["PreflightRefused", "checked", "preflight", "print_checks"]
log = logging.getLogger(__name__)

# training options about submitting and following: not offered here (--format is kept; --target is vertex)
NOT_COPIED = frozenset(
    {
        "dry_run",
        "async_",
        "stream_logs",
        "wait",
        "cancel_on_interrupt",
        "target",
        "preflight",
        "fallback_regions",
        "max_queue_wait",
    }
)


class PreflightRefused(UsageError):
    """A check refused the job: nothing was uploaded or created (exit 2)."""

    def __init__(self, lines: Sequence[str]) -> None:
        super().__init__(
            f"preflight: {len(lines)} check(s) refused the job; nothing was uploaded or created."
        )
        self.refusals = list(lines)

    def lines(self) -> list[str]:
        return [*self.refusals, str(self)]


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


def checked(
    body: Mapping[str, Any],
    settings: Any,
    uploads: Sequence[str],
    *,
    fmt: str = "text",
    to_stdout: bool = False,
) -> None:
    """Run the preflight over a Vertex AI body and print it; raise :class:`PreflightRefused` when refused.

    Inside `training --format json` a refused preflight prints its JSON report on stdout before the error.
    """
    from mlsubmit.preflight import preflight as run_preflight
    from mlsubmit.services.preflight import refused

    checks = run_preflight(body, settings, uploads=uploads)
    print_checks(checks, "text" if not to_stdout else fmt, to_stdout=to_stdout)
    bad = refused(checks)
    if bad and fmt != "text" and not to_stdout:
        from mlsubmit.services.preflight import report

        emit(report(checks), fmt)
    if bad:
        raise PreflightRefused([f"preflight refused: {c.name}: {c.message}" for c in bad])


def planned(request: Any, executor_image_uri: str | None) -> Any:
    """The Vertex AI plan of the request (``submit.Plan``), built locally like a dry run; its warnings shown."""
    from mlsubmit.submit import dry_run

    plan = dry_run(request, target="vertex", executor_image_uri=executor_image_uri)
    for warning in plan.warnings:
        status(f"WARNING: {warning}")
    return plan


def vertex_settings(request: Any, opts: Mapping[str, Any], plan: Any) -> Any:
    """The connection settings of a Vertex AI plan: the connection flags, the job's own region."""
    from mlsubmit.services.settings import Settings

    return Settings.for_job(
        plan,
        request.env,
        project=opts.get("project"),
        access_token_file=opts.get("access_token_file"),
        api_endpoint=opts.get("api_endpoint"),
        notify=status,
    )


def _preflight(ctx: click.Context, job: str, **opts: Any) -> None:
    """Run the preflight of a Vertex AI job alone (module docstring)."""
    from mlsubmit.cli.training import build_request

    request = build_request(ctx, job, opts)
    plan = planned(request, opts.get("executor_image_uri"))
    with vertex_settings(request, opts, plan) as settings:
        checked(plan.body, settings, [s.uri for s in plan.uploads], fmt=opts["fmt"].lower(), to_stdout=True)
    sys.stdout.flush()


def _build() -> click.Command:
    from mlsubmit.cli.training import training

    params = [p for p in training.params if p.name not in NOT_COPIED]
    return AppArgsCommand(
        name="preflight",
        callback=click.pass_context(_preflight),
        params=params,
        help=(
            "Check that a Vertex AI job can start (read-only: APIs, buckets, service account, key, images, quota): "
            "mlsubmit preflight JOB [training flags]."
        ),
        context_settings={"help_option_names": ["-h", "--help"]},
    )


preflight = _build()
