"""The read-only preflight of a Vertex AI body (docs/getting-jobs-to-start.md): its needs and the region's offer
(``targets.vertex_locations``) checked at once (``services.preflight``). :func:`check` starts ``submit.run``;
:func:`quota_skip` is the quota part alone, for failover candidates."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, cast

from mlsubmit import console
from mlsubmit.errors import PreflightRefused
from mlsubmit.services.preflight import OK, UNCHECKED, BucketUse, Check, Needs, refused, report, run
from mlsubmit.services.preflight import quota_checks as quota_lines
from mlsubmit.services.preflight.check import Status
from mlsubmit.targets import vertex_locations
from mlsubmit.targets.pools import as_dict

if TYPE_CHECKING:
    from mlsubmit.submit.candidates import Planned
    from mlsubmit.submit.plan import Plan

log = logging.getLogger(__name__)
# Spot VMs and Flex-start draw from capacity of their own (Vertex AI's quotas page names preemptible metrics);
# their metric names are unconfirmed here, so their quota is not judged.
OWN_QUOTA_STRATEGIES = frozenset({"SPOT", "FLEX_START"})


def _bucket_of(uri: str) -> str | None:
    return (uri[5:].split("/", 1)[0] or None) if uri.startswith("gs://") else None


def _strategy(body: Mapping[str, Any]) -> str:
    return str(as_dict(vertex_locations.job_spec(body).get("scheduling")).get("strategy") or "")


def needs_of(body: Mapping[str, Any], uploads: Iterable[str] = (), built: Iterable[str] = ()) -> Needs:
    """What a CustomJob or HyperparameterTuningJob body needs; ``uploads``: the URIs mlsubmit will write,
    ``built``: the images it will build (after the preflight, so not looked up)."""
    made = set(built)
    spec = vertex_locations.job_spec(body)
    uses = [BucketUse(b, "staging", caller_writes=True) for b in map(_bucket_of, uploads) if b]
    job_dir = _bucket_of(str(as_dict(spec.get("baseOutputDirectory")).get("outputUriPrefix") or ""))
    if job_dir:
        uses.append(BucketUse(job_dir, "job dir", caller_writes=False))
    key = as_dict(body.get("encryptionSpec")).get("kmsKeyName")
    account = spec.get("serviceAccount")
    return Needs(
        buckets=tuple(uses),
        service_account=account if isinstance(account, str) and account else None,
        kms_key=key if isinstance(key, str) and key else None,
        images=tuple(uri for uri in vertex_locations.images(body) if uri not in made),
        quota={} if _strategy(body) in OWN_QUOTA_STRATEGIES else vertex_locations.demand(body),
        usage=vertex_locations.demand,
    )


def preflight(
    body: Mapping[str, Any],
    settings: Any,
    *,
    uploads: Iterable[str] = (),
    built: Iterable[str] = (),
) -> list[Check]:
    """Every preflight line for a Vertex AI job body in ``settings``' region (module docstring)."""
    region = settings.require_region()
    lines = [
        Check(name, cast(Status, status), text)
        for status, name, text in vertex_locations.offered(region, body)
    ]
    lines += run(needs_of(body, uploads, built), settings)
    if _strategy(body) in OWN_QUOTA_STRATEGIES:
        lines.append(
            Check("quota", UNCHECKED, f"{_strategy(body)} capacity has quotas of its own; not judged here")
        )
    return lines


def plan_checks(plan: Plan, settings: Any) -> list[Check]:
    """The preflight of a Vertex AI plan, then each failover candidate's own buckets in its region."""
    built = [s.tagged for s in plan.image.specs] if plan.image is not None else []
    uploads = [s.uri for s in plan.uploads]
    checks = preflight(plan.body, settings, uploads=uploads, built=built)
    seen = {(settings.region, use.bucket) for use in needs_of(plan.body, uploads).buckets}
    for planned in plan.candidates[1:]:
        c = planned.candidate
        uses = needs_of(planned.body, [s.uri for s in planned.staged]).buckets
        uses = tuple(u for u in uses if (c.region, u.bucket) not in seen)
        seen |= {(c.region, u.bucket) for u in uses}
        if uses:
            found = run(Needs(buckets=uses), settings, api=False, region=c.region)
            checks += [
                dataclasses.replace(x, name=f"candidate {c.number} ({c.region}): {x.name}") for x in found
            ]
    return checks


def check(plan: Plan, settings: Any) -> dict[str, Any]:
    """Run and tell the preflight of ``plan``: its report, or PreflightRefused carrying it."""
    checks = plan_checks(plan, settings)
    tell(checks)
    return judged(checks)


def tell(checks: list[Check]) -> None:
    """Each check that is not ``ok`` as a console notice; the ``ok`` ones logged at info."""
    for line in checks:
        if line.status == OK:
            log.info("%s", line.line())
        else:
            console.current().notify(line.line())


def judged(checks: list[Check]) -> dict[str, Any]:
    """The report of ``checks``, or PreflightRefused carrying it when one refuses."""
    bad = refused(checks)
    if bad:
        lines = [f"preflight refused: {c.name}: {c.message}" for c in bad]
        raise PreflightRefused(lines, report(checks), quota_only=all(c.kind == "quota" for c in bad))
    return report(checks)


def quota_skip(settings: Any, planned: Planned) -> str | None:
    """Why a candidate is skipped before its create: its region's quota limit is below the request."""
    checks = quota_lines(needs_of(planned.body), settings, region=planned.candidate.region)
    return "; ".join(f"{c.name}: {c.message}" for c in checks if c.status == "refused") or None
