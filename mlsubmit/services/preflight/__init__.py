"""The preflight (docs/getting-jobs-to-start.md): what a job :class:`Needs`, read concurrently (``reads``) and
judged (``judge``, pure) into one :class:`Check` per line; :func:`quota_checks` is the quota part alone."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from mlsubmit.services.preflight import judge, reads
from mlsubmit.services.preflight.check import OK, UNCHECKED, Check, refused, report
from mlsubmit.services.preflight.judge import BucketUse

__all__ = ["OK", "UNCHECKED", "BucketUse", "Check", "Needs", "quota_checks", "refused", "report", "run"]

Usage = Callable[[Mapping[str, Any]], Mapping[str, int]]


@dataclass(frozen=True)
class Needs:
    """What a job needs from the project; ``quota``: metric -> amount, ``usage``: what a running job takes."""

    buckets: tuple[BucketUse, ...] = ()
    service_account: str | None = None
    kms_key: str | None = None
    images: tuple[str, ...] = ()
    quota: Mapping[str, int] = field(default_factory=dict)
    usage: Usage | None = None


def _merged(uses: tuple[BucketUse, ...]) -> list[BucketUse]:
    """One use per bucket (a staging bucket that is also the job dir's is read and shown once)."""
    merged: dict[str, BucketUse] = {}
    for use in uses:
        seen = merged.setdefault(use.bucket, use)
        if use.role not in seen.role.split(" and "):
            merged[use.bucket] = BucketUse(
                use.bucket, f"{seen.role} and {use.role}", seen.caller_writes or use.caller_writes
            )
    return list(merged.values())


def _quota_reads(needs: Needs) -> dict[str, reads.Read]:
    if not needs.quota:
        return {}
    found: dict[str, reads.Read] = {"quota": reads.quota_metrics}
    if needs.usage is not None:
        found["running"] = reads.running_jobs
        found["running-tuning"] = reads.running_tuning_jobs
    return found


def _running(answers: Mapping[str, reads.Answer]) -> reads.Answer | None:
    """The running custom and tuning jobs in one answer (what could be read: usage only ever warns)."""
    found = [answers[k] for k in ("running", "running-tuning") if k in answers and answers[k].ok]
    if not found:
        return answers.get("running")
    return reads.Answer([job for answer in found for job in answer.value or []])


def _quota_lines(needs: Needs, region: str, answers: Mapping[str, reads.Answer]) -> list[Check]:
    if not needs.quota:
        return []
    return judge.quotas(needs.quota, region, answers["quota"], _running(answers), needs.usage)


def run(needs: Needs, settings: Any, *, api: bool = True, region: str | None = None) -> list[Check]:
    """Every check, in a fixed order, from reads sent at once; ``region``: a failover candidate's buckets alone."""
    buckets_only, reader = region is not None, reads.Reader(settings, region=region)
    buckets = _merged(needs.buckets)
    wanted: dict[str, reads.Read] = {}
    if api or needs.kms_key:  # with a key, the project number names the service agent
        wanted["api"] = reads.api_service
    for use in buckets:
        wanted[f"bucket:{use.bucket}"] = reads.bucket(use.bucket)
        wanted[f"bucket-write:{use.bucket}"] = reads.bucket_permissions(use.bucket, [judge.WRITE])
    if needs.service_account:
        wanted["sa"] = reads.service_account(needs.service_account)
        wanted["sa-actas"] = reads.service_account_permissions(needs.service_account, [judge.ACT_AS])
    if needs.kms_key:
        wanted["kms"] = reads.crypto_key(needs.kms_key)
        wanted["kms-policy"] = reads.crypto_key_policy(needs.kms_key)
    for uri in needs.images:
        wanted[f"image:{uri}"] = reads.image(uri)
    wanted.update(_quota_reads(needs))
    answers = reads.fetch(wanted, reader)
    region = reader.region
    checks = [judge.api_enabled(answers["api"])] if api else []
    checks += [
        judge.bucket(use, answers[f"bucket:{use.bucket}"], answers[f"bucket-write:{use.bucket}"], region)
        for use in buckets
    ]
    if buckets_only:
        return checks
    checks.append(judge.service_account(needs.service_account, answers.get("sa"), answers.get("sa-actas")))
    number = judge.project_number(answers["api"]) if "api" in answers else None
    checks.append(judge.kms_key(needs.kms_key, region, answers.get("kms"), answers.get("kms-policy"), number))
    checks += [judge.image(uri, answers[f"image:{uri}"]) for uri in needs.images]
    checks += _quota_lines(needs, region, answers)
    return checks


def quota_checks(needs: Needs, settings: Any, *, region: str | None = None) -> list[Check]:
    """The quota lines alone, in ``region`` (default: ``settings``'), for failover to skip a candidate."""
    reader = reads.Reader(settings, region=region)
    answers = reads.fetch(_quota_reads(needs), reader)
    return _quota_lines(needs, reader.region, answers)
