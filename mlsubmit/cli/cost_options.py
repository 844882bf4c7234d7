"""The cost options of `training` (docs/cost.md; ``--max-cost`` refuses in ``submit.plan``, before any upload)
and what a dry run shows of the estimate."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from mlsubmit.cli.options import compose
from mlsubmit.cli.output import emit, status

if TYPE_CHECKING:
    from mlsubmit.submit.plan import Plan

cost_options = compose(
    click.option(
        "--max-cost",
        type=click.FloatRange(min=0, min_open=True, max=1e9),
        metavar="USD",
        help="Refuse (exit 2, nothing uploaded) when the job's upper bound passes USD (docs/cost.md).",
    ),
    click.option(
        "--expected-hours",
        type=click.FloatRange(min=0, max=1e6),
        metavar="HOURS",
        help="Show the expected cost of a run this long beside the upper bound.",
    ),
    click.option(
        "--prices",
        type=click.Path(dir_okay=False),
        envvar="MLSUBMIT_PRICES",
        metavar="FILE",
        help="A price table laid over the shipped one (env MLSUBMIT_PRICES; docs/cost.md).",
    ),
)


def show_cost(plan: Plan, opts: dict[str, Any], result: Any, fmt: str) -> None:
    """A dry run's stdout: ``result`` with its cost (text: as YAML comments; json/yaml: when asked)."""
    cost = plan.cost
    asked = any(v is not None for v in (opts.get("max_cost"), opts.get("expected_hours"), plan.budget))
    if cost is None or (fmt != "text" and not asked):
        emit(result, fmt)
        return
    if asked:
        warn_if_stale(plan)
    others = [(c, e) for c, e in plan.candidate_costs if c.number != 0]  # failover candidates
    if fmt == "text":
        emit(result, fmt)
        click.echo(f"# {cost.line()}")
        for candidate, found in others:
            click.echo(f"# candidate {candidate.number} ({candidate.region}): {found.line()}")
        return
    # the whole plan ({job, image, candidates, uploads}), or the body as its job
    shown = dict(result) if result is not plan.body else {"job": result}
    shown["cost"] = cost.as_dict()
    if others:
        shown["cost"]["candidates"] = [
            {"candidate": c.number, "region": c.region, **e.as_dict()} for c, e in others
        ]
    emit(shown, fmt)


def warn_if_stale(plan: Plan) -> None:
    """A WARNING when the plan was priced from a table read over 90 days ago."""
    from datetime import date

    from mlsubmit.targets.prices import stale_warning

    stale = stale_warning(plan.cost.table_read, date.today()) if plan.cost is not None else None
    if stale:
        status(f"WARNING: {stale}")
