"""The budget guard (docs/cost.md): ``--max-cost`` / ``maxCost`` against a plan's upper bound, for the job and
each failover candidate, before any upload."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mlsubmit.errors import InvalidJobError, UsageError
from mlsubmit.targets.cost import Estimate, estimate, hours_text, rate, usd
from mlsubmit.targets.prices import load


def over_budget(found: Estimate, budget: float, origin: str) -> str | None:
    """The refusal when ``found``'s upper bound passes ``budget`` (or cannot be priced), else None."""
    bound = found.upper_bound
    if bound is None:
        return (
            f"{origin} {usd(budget)}: the job cannot be priced ({'; '.join(found.missing) or 'no pools'}); "
            "give a price table with those rows (--prices FILE, docs/cost.md) or drop the budget"
        )
    if bound <= budget:
        return None
    trials = f" x {found.trials} trials" if found.trials > 1 else ""
    return (
        f"the job's upper bound {usd(bound)} ({rate(found.usd_per_hour or 0.0)} x {hours_text(found.timeout_hours)} "
        f"timeout{trials}, {found.region} {found.usage}) passes {origin} {usd(budget)}: shorten the timeout "
        "(scheduling.maxRunningTime), use fewer or smaller machines or GPUs, or Spot "
        "(--scheduling-strategy spot on Vertex AI)"
    )


def _budget(given: Mapping[str, Any], max_cost: Any) -> tuple[Any, str]:
    """The budget and what set it: ``--max-cost``, else the config's ``maxCost`` (None: no budget)."""
    if given.get("max_cost") is None and max_cost is not None:
        return max_cost, "maxCost"
    return given.get("max_cost"), "--max-cost"


def plan_estimate(
    body: Mapping[str, Any],
    *,
    target: str,
    region: str | None,
    given: Mapping[str, Any],
    env: Mapping[str, str],
    max_cost: Any = None,
    file: Any = None,
) -> Estimate | None:
    """The estimate of a plan's body (None for a Kubernetes TFJob: no price); a UsageError (exit 2, before any
    upload) when it passes ``--max-cost``, else the config's ``maxCost`` (a bad one located in ``file``)."""
    if target == "tfjob":
        if given.get("max_cost") is not None or max_cost is not None:
            raise UsageError(
                "--max-cost / maxCost: a Kubernetes job has no price (docs/cost.md); drop the budget"
            )
        return None
    found = estimate(
        body, load(given.get("prices"), env), region=region, expected_hours=given.get("expected_hours")
    )
    budget, origin = _budget(given, max_cost)
    if budget is not None:
        if not 0 <= float(budget) <= 1e9:  # NaN too: a YAML .nan passes a schema's maximum
            message = f"maxCost {budget!r}: give a number of US dollars from 0 to 1e9"
            if origin == "maxCost" and file is not None:
                raise InvalidJobError([file.problem(("maxCost",), message)])
            raise UsageError(message)
        if refusal := over_budget(found, float(budget), origin):
            raise UsageError(refusal)
    return found


def priced_candidates(
    job_body: Mapping[str, Any],
    candidates: list[Any],
    *,
    translate_body: Any,
    given: Mapping[str, Any],
    env: Mapping[str, str],
    max_cost: Any = None,
) -> tuple[list[Any], list[tuple[Any, Estimate]], list[str]]:
    """Failover candidates priced in their regions: the ones to try (the job first, the rest in order, or cheapest
    first with ``vertex.failover.order: cost``), each one's estimate, and a warning per one over the budget."""
    if len(candidates) <= 1:
        return candidates, [], []
    from mlsubmit.targets.failover import failover_block, overlaid  # only for a job with candidates

    table = load(given.get("prices"), env)
    hours = given.get("expected_hours")
    priced = [
        (c, estimate(translate_body(overlaid(job_body, c)), table, region=c.region, expected_hours=hours))
        for c in candidates
    ]
    budget, origin = _budget(given, max_cost)
    kept, warnings = [priced[0]], []
    for candidate, found in priced[1:]:
        if refusal := over_budget(found, float(budget), origin) if budget is not None else None:
            warnings.append(f"failover candidate {candidate.number} ({candidate.region}) skipped: {refusal}")
        else:
            kept.append((candidate, found))
    if failover_block(job_body).get("order") == "cost":
        kept = [kept[0], *sorted(kept[1:], key=lambda p: (p[1].upper_bound is None, p[1].upper_bound or 0.0))]
    return [c for c, _e in kept], priced, warnings
