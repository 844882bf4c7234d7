"""A bucket's location against the job's region (services.preflight.buckets)."""

from __future__ import annotations

from typing import Any

import pytest

from mlsubmit.services.preflight.buckets import location_verdict

R = "us-central1"


@pytest.mark.parametrize(
    ("bucket", "status"),
    [
        ({"location": "US-CENTRAL1", "locationType": "region"}, "ok"),
        ({"location": "US-CENTRAL1-A", "locationType": "zone"}, "ok"),
        ({"location": "US-EAST1", "locationType": "region"}, "refused"),
        ({"location": "US", "locationType": "multi-region"}, "warning"),
        ({"location": "EU", "locationType": "multi-region"}, "refused"),
        ({"location": "ASIA", "locationType": "multi-region"}, "refused"),
        ({"location": "NAM4", "locationType": "dual-region"}, "warning"),
        ({"location": "EUR4", "locationType": "dual-region"}, "refused"),
        ({"location": "EUR7", "locationType": "dual-region"}, "warning"),  # not in the table: cannot place it
        (
            {
                "location": "US",
                "locationType": "dual-region",
                "customPlacementConfig": {"dataLocations": ["US-CENTRAL1", "US-EAST4"]},
            },
            "warning",
        ),
        (
            {
                "location": "US",
                "locationType": "dual-region",
                "customPlacementConfig": {"dataLocations": ["US-EAST1", "US-EAST4"]},
            },
            "refused",
        ),
        ({}, "warning"),
    ],
)
def test_bucket_location_against_the_job_region(bucket: dict[str, Any], status: str) -> None:
    assert location_verdict(bucket, R)[0] == status


def test_eu_multi_region_holds_its_member_states_only() -> None:
    assert (
        location_verdict({"location": "EU", "locationType": "multi-region"}, "europe-west4")[0] == "warning"
    )
    assert (
        location_verdict({"location": "EU", "locationType": "multi-region"}, "europe-west2")[0] == "refused"
    )
