"""The preflight over a job's Vertex AI body: what it needs, then the checks (docs/getting-jobs-to-start.md).

:func:`preflight` is the first step of a Vertex AI submit (and all of ``mlsubmit preflight``): it reads what the
body needs (buckets, service account, key, images, quota: ``targets.vertex_locations``), checks the region's
offer from the dated table, and runs every read-only check at once (``services.preflight``). Nothing is
uploaded or created. :func:`quota_checks` is the quota part alone, for failover candidates.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, cast

from mlsubmit.services.preflight import UNCHECKED, BucketUse, Check, Needs, run
from mlsubmit.services.preflight import quota_checks as _quota_checks
from mlsubmit.services.preflight.check import Status
from mlsubmit.targets import vertex_locations

__all__ = ["needs_of", "preflight", "quota_checks"]
# Spot VMs and Flex-start draw from capacity of their own (Vertex AI's quotas page names preemptible metrics);
# their metric names are unconfirmed here, so their quota is not judged.
OWN_QUOTA_STRATEGIES = frozenset({"SPOT", "FLEX_START"})


def _bucket_of(uri: str) -> str | None:
    if not uri.startswith("gs://"):
        return None
    return uri[5:].split("/", 1)[0] or None


def _strategy(body: Mapping[str, Any]) -> str:
    scheduling = vertex_locations.job_spec(body).get("scheduling")
    return str(scheduling.get("strategy") or "") if isinstance(scheduling, dict) else ""


def needs_of(body: Mapping[str, Any], uploads: Iterable[str] = (), built: Iterable[str] = ()) -> Needs:
    """What a CustomJob or HyperparameterTuningJob body needs; ``uploads`` are the URIs mlsubmit will write,
    ``built`` the images it will build (``--build-image``: made after the preflight, so not looked up)."""
    made = set(built)
    spec = vertex_locations.job_spec(body)
    uses: list[BucketUse] = []
    for uri in uploads:
        bucket = _bucket_of(uri)
        if bucket:
            uses.append(BucketUse(bucket, "staging", caller_writes=True))
    output = spec.get("baseOutputDirectory")
    job_dir = _bucket_of(str(output.get("outputUriPrefix") or "")) if isinstance(output, dict) else None
    if job_dir:
        uses.append(BucketUse(job_dir, "job dir", caller_writes=False))
    encryption = body.get("encryptionSpec")
    key = encryption.get("kmsKeyName") if isinstance(encryption, dict) else None
    account = spec.get("serviceAccount")
    own_quota = _strategy(body) in OWN_QUOTA_STRATEGIES
    return Needs(
        buckets=tuple(uses),
        service_account=account if isinstance(account, str) and account else None,
        kms_key=key if isinstance(key, str) and key else None,
        images=tuple(uri for uri in vertex_locations.images(body) if uri not in made),
        quota={} if own_quota else vertex_locations.demand(body),
        usage=vertex_locations.demand,
    )


def preflight(
    body: Mapping[str, Any],
    settings: Any,
    *,
    uploads: Iterable[str] = (),
    api: bool = True,
    built: Iterable[str] = (),
) -> list[Check]:
    """Every preflight line for a Vertex AI job body in ``settings``' region (module docstring); ``built``: the
    images ``--build-image`` makes after it (see :func:`needs_of`)."""
    region = settings.require_region()
    lines = [
        Check(name, cast(Status, status), text)
        for status, name, text in vertex_locations.offered(region, body)
    ]
    needs = needs_of(body, uploads, built)
    lines += run(needs, settings, api=api)
    if _strategy(body) in OWN_QUOTA_STRATEGIES:
        lines.append(
            Check("quota", UNCHECKED, f"{_strategy(body)} capacity has quotas of its own; not judged here")
        )
    return lines


def quota_checks(body: Mapping[str, Any], settings: Any, *, region: str | None = None) -> list[Check]:
    """The quota lines of a candidate body in ``region`` (default: ``settings``' region): a REFUSED line means
    its limit is below what the body needs (the candidate would get a 429 on its create)."""
    return _quota_checks(needs_of(body), settings, region=region)
