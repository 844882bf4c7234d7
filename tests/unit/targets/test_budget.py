"""Failover candidates priced, ordered by cost and skipped over the budget (docs/cost.md)."""

from __future__ import annotations

import json
from typing import Any


def test_failover_candidates_priced_ordered_by_cost_and_skipped_over_budget() -> None:
    from mlsubmit.targets.budget import priced_candidates
    from mlsubmit.targets.failover import candidates_of

    job = {
        "trainingInput": {"region": "us-central1", "scaleTier": "CUSTOM", "masterType": "n1-standard-4"},
        "vertex": {
            "failover": {
                "candidates": [
                    {"region": "asia-east2"},
                    {"region": "us-east1", "masterType": "n1-standard-16"},
                    {"region": "europe-west4"},
                ]
            }
        },
    }

    def numbers(given: dict[str, Any], order: str | None = None) -> tuple[list[int], list[str]]:
        body = json.loads(json.dumps(job))
        if order:
            body["vertex"]["failover"]["order"] = order
        kept, priced, skipped = priced_candidates(
            body, candidates_of(body), translate_body=lambda b: b, given=given, env={}
        )
        assert [c.region for c, _e in priced] == ["us-central1", "asia-east2", "us-east1", "europe-west4"]
        return [c.number for c in kept], skipped

    assert numbers({}) == ([0, 1, 2, 3], [])
    assert numbers({}, "cost")[0] == [0, 3, 1, 2]  # the job first, then the cheapest upper bound first
    kept, skipped = numbers({"max_cost": 60}, "cost")
    assert kept == [0, 3, 1] and len(skipped) == 1
    assert (
        skipped[0].startswith("failover candidate 2 (us-east1) skipped: ")
        and "passes --max-cost $60.00" in skipped[0]
    )
