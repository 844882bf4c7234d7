"""Does a Cloud Storage bucket's location suit a Vertex AI job's region? (docs/getting-jobs-to-start.md)

What Vertex AI refuses, checked 2026-11-25:

* a create whose bucket is elsewhere is a 400 FAILED_PRECONDITION, "The Cloud Storage bucket of gs://… is in
  location us. It must be in the same regional location as the service location"
  (https://github.com/googleapis/python-aiplatform/issues/885, 2021, a custom job's staging bucket; the Vertex
  SDK's maintainer in https://github.com/GoogleCloudPlatform/vertex-ai-samples/pull/19: "In Vertex, buckets must
  be in a single region and must match the region of the Vertex service");
* Vertex AI's own pages ask for a bucket in the job's region and state no rule for multi- and dual-regions
  (https://cloud.google.com/vertex-ai/docs/general/locations, read that day); the samples were changed to say
  a multi-region bucket can be used (https://github.com/GoogleCloudPlatform/vertex-ai-samples/pull/142, 2021).

So: a regional bucket in another region, or a multi- or dual-region that does not hold the job's region, is
refused; a multi- or dual-region that holds it is a warning (it has been refused, and it may be again); a
location we cannot place is a warning too.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mlsubmit.services.preflight.check import OK, REFUSED, WARNING, Status

# Multi-regions and predefined dual-regions, from https://cloud.google.com/storage/docs/locations (2026-11-25):
# US holds the United States' regions, EU those in member states of the European Union, ASIA those in Asia.
EU_REGIONS = frozenset(
    {
        "europe-central2",
        "europe-north1",
        "europe-north2",
        "europe-southwest1",
        "europe-west1",
        "europe-west3",
        "europe-west4",
        "europe-west8",
        "europe-west9",
        "europe-west10",
        "europe-west12",
    }
)
DUAL_REGIONS: dict[str, frozenset[str]] = {
    "ASIA1": frozenset({"asia-northeast1", "asia-northeast2"}),
    "EUR4": frozenset({"europe-north1", "europe-west4"}),
    "NAM4": frozenset({"us-central1", "us-east1"}),
}


def _multi_region_holds(location: str, region: str) -> bool | None:
    """Whether multi-region ``location`` (US, EU, ASIA) holds ``region``; None for one we do not know."""
    if location == "EU":
        return region in EU_REGIONS
    prefix = {"US": "us-", "ASIA": "asia-"}.get(location)
    return None if prefix is None else region.startswith(prefix)


def location_verdict(resource: Mapping[str, Any], region: str) -> tuple[Status, str]:
    """(status, words) for a bucket resource (storage v1 ``Bucket``) and the job's region."""
    location = str(resource.get("location") or "").upper()
    kind = str(resource.get("locationType") or "").lower()
    lower = location.lower()
    if not location:
        return WARNING, "the bucket's answer names no location; Vertex AI needs it in the job's region"
    if lower == region or (kind == "zone" and lower.rsplit("-", 1)[0] == region):
        return OK, f"in {lower}"
    placement = resource.get("customPlacementConfig")
    places = placement.get("dataLocations") if isinstance(placement, dict) else None
    if isinstance(places, list) and places:
        holds: bool | None = region in {str(p).lower() for p in places}
        kind = "dual-region"
    elif location in DUAL_REGIONS:
        holds, kind = region in DUAL_REGIONS[location], "dual-region"
    elif kind == "region" or (kind != "multi-region" and lower.count("-") >= 1):
        return REFUSED, (
            f"in {lower}, not the job's region {region}: Vertex AI refuses it (FAILED_PRECONDITION, the bucket "
            f"must be in the same regional location as the service); use a bucket in {region}"
        )
    else:
        holds, kind = _multi_region_holds(location, region), kind or "multi-region"
    if holds is False:
        return REFUSED, (
            f"in {kind} {location}, which does not hold {region}: Vertex AI refuses it (FAILED_PRECONDITION); "
            f"use a bucket in {region}"
        )
    if holds is None:
        return WARNING, f"in {location} ({kind or 'unknown kind'}); Vertex AI wants a bucket in {region}"
    return WARNING, (
        f"in {kind} {location}, which holds {region}: Vertex AI has refused such buckets (it wants one in "
        f"{region}); a regional bucket in {region} is the safe choice"
    )
