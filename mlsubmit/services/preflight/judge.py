"""From the preflight's answers to check lines: pure functions, one per check (docs/getting-jobs-to-start.md).
A 403 or an unresolved host is "could not check"; what Vertex AI would refuse is refused; the rest is warned."""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from mlsubmit.services.answers import shorten
from mlsubmit.services.preflight.buckets import location_verdict
from mlsubmit.services.preflight.check import OK, REFUSED, UNCHECKED, WARNING, Check, Status
from mlsubmit.services.preflight.reads import Answer

WRITE = "storage.objects.create"
ACT_AS = "iam.serviceAccounts.actAs"
KMS_ROLE = "roles/cloudkms.cryptoKeyEncrypterDecrypter"
_ORDER: dict[Status, int] = {OK: 0, WARNING: 1, UNCHECKED: 1, REFUSED: 2}


@dataclass(frozen=True)
class BucketUse:
    """A bucket the job needs, what for (``staging``, ``job dir``), and whether the caller must write there."""

    bucket: str
    role: str
    caller_writes: bool


def _could_not(name: str, answer: Answer, what: str, missing: str | None = None) -> Check:
    """The line of a read that failed: refused with ``missing`` for a 404 when given, else "could not check"."""
    if missing is not None and answer.status == 404:
        return Check(name, REFUSED, missing)
    if not answer.reached:
        why = "the service's host name does not resolve"
        return Check(name, UNCHECKED, f"not reached: {why} ({what}; no network, no DNS, or a wrong endpoint)")
    why = "the caller may not look" if answer.status == 403 else "the answer could not be read"
    return Check(name, UNCHECKED, f"{why} ({what}: {shorten(answer.error or '', 300)})")


def _object(answer: Answer) -> dict[str, Any]:
    return answer.value if isinstance(answer.value, dict) else {}


def _strings(value: Any) -> set[str]:
    return {str(v) for v in value} if isinstance(value, list) else set()


def api_enabled(answer: Answer) -> Check:
    """serviceusage ``services.get`` of aiplatform.googleapis.com: state ENABLED."""
    name = "Vertex AI API"
    if not answer.ok:
        return _could_not(
            name,
            answer,
            "serviceusage services.get",
            missing=f"not found ({answer.error}); enable aiplatform.googleapis.com",
        )
    state = _object(answer).get("state")
    if state == "ENABLED":
        return Check(name, OK, "aiplatform.googleapis.com is enabled")
    if not isinstance(state, str) or not state:
        return Check(name, UNCHECKED, "the answer has no state (check the serviceusage endpoint)")
    return Check(
        name,
        REFUSED,
        f"aiplatform.googleapis.com is {state}: enable it "
        "(gcloud services enable aiplatform.googleapis.com) before submitting",
    )


def project_number(answer: Answer) -> str | None:
    """The project number in the ``name`` serviceusage answers with (``projects/123/services/...``)."""
    name = _object(answer).get("name")
    parts = name.split("/") if isinstance(name, str) else []
    return parts[1] if len(parts) > 2 and parts[0] == "projects" and parts[1].isdigit() else None


def bucket(use: BucketUse, got: Answer, permissions: Answer, region: str) -> Check:
    """A bucket exists, suits the region (``buckets.location_verdict``) and the caller may write there."""
    name = f"{use.role} bucket gs://{use.bucket}"
    if not got.ok:
        return _could_not(
            name,
            got,
            "storage buckets.get",
            missing=f"does not exist; create it in {region} or pass another bucket",
        )
    findings: list[tuple[Status, str]] = [location_verdict(_object(got), region)]
    if not permissions.ok:
        findings.append(
            (UNCHECKED, f"could not test write permission ({shorten(permissions.error or '', 200)})")
        )
    elif WRITE not in _strings(_object(permissions).get("permissions")):
        lacks = f"the caller lacks {WRITE} on it"
        if use.caller_writes:
            findings.append((REFUSED, f"{lacks}: the upload would fail"))
        else:
            findings.append((WARNING, f"{lacks} (the job's service account writes there)"))
    # one line: the worst status, every finding's words
    worst = max((status for status, _ in findings), key=lambda s: _ORDER[s])
    return Check(name, worst, "; ".join(text for _, text in findings))


def service_account(email: str | None, got: Answer | None, permissions: Answer | None) -> Check:
    """The job's service account exists and the caller has ``iam.serviceAccounts.actAs`` on it."""
    name = "service account"
    if email is None or got is None or permissions is None:
        return Check(
            name, OK, "none set: the job runs as Vertex AI's Custom Code Service Agent (no actAs needed)"
        )
    name = f"service account {email}"
    if not got.ok:
        return _could_not(
            name,
            got,
            "iam serviceAccounts.get",
            missing="does not exist; Vertex AI would refuse the job (INVALID_ARGUMENT)",
        )
    if _object(got).get("disabled") is True:
        return Check(name, REFUSED, "is disabled; enable it or run the job as another account")
    if not permissions.ok:
        return _could_not(name, permissions, "iam serviceAccounts.testIamPermissions")
    if ACT_AS not in _strings(_object(permissions).get("permissions")):
        return Check(
            name,
            REFUSED,
            f'the caller lacks {ACT_AS} on it: Vertex AI would refuse the job (INVALID_ARGUMENT, "You do not '
            'have permission to act as service_account"); grant roles/iam.serviceAccountUser on the account',
        )
    return Check(name, OK, f"exists, and the caller may act as it ({ACT_AS})")


def kms_key(
    key: str | None, region: str, got: Answer | None, policy: Answer | None, number: str | None
) -> Check:
    """A CMEK key is in the job's region, enabled, and the Vertex AI service agent may use it."""
    if key is None or got is None or policy is None:
        return Check("encryption key", OK, "none set: Google-managed encryption")
    name = f"encryption key {key}"
    parts = key.split("/")
    location = parts[3] if len(parts) > 3 and parts[2] == "locations" else ""
    if location != region:
        return Check(name, REFUSED, f"is in {location or 'no location'}, not the job's region {region}")
    if not got.ok:
        return _could_not(name, got, "cloudkms cryptoKeys.get", missing="does not exist")
    found = _object(got)
    primary = found.get("primary")
    state = primary.get("state") if isinstance(primary, dict) else None
    if found.get("purpose") not in (None, "ENCRYPT_DECRYPT"):
        return Check(name, REFUSED, f"has purpose {found.get('purpose')}; CMEK needs ENCRYPT_DECRYPT")
    if state != "ENABLED":
        return Check(
            name, REFUSED, f"its primary version is {state or 'missing'}; Vertex AI needs it enabled"
        )
    if number is None:
        return Check(name, UNCHECKED, "enabled; the project number (for the service agent) could not be read")
    agent = f"serviceAccount:service-{number}@gcp-sa-aiplatform.iam.gserviceaccount.com"  # the key's user
    if not policy.ok:
        return _could_not(name, policy, "cloudkms cryptoKeys.getIamPolicy")
    bindings = _object(policy).get("bindings")
    granted = any(
        isinstance(b, dict) and b.get("role") == KMS_ROLE and agent in _strings(b.get("members"))
        for b in (bindings if isinstance(bindings, list) else [])
    )
    if granted:
        return Check(name, OK, f"enabled in {region}; the Vertex AI service agent has {KMS_ROLE}")
    return Check(
        name,
        WARNING,
        f"enabled in {region}, but the key's policy does not grant {KMS_ROLE} to {agent.split(':', 1)[1]} (it may "
        "be granted on the key ring or project; if not, Vertex AI refuses the job)",
    )


def image(uri: str, answer: Answer) -> Check:
    """A custom image's manifest answered (registry v2 ``HEAD``)."""
    name = f"image {uri}"
    if answer.ok:
        return Check(name, OK, "exists and can be read")
    if answer.status == 404:
        return Check(name, REFUSED, "not found in its registry; push it or fix the name")
    return _could_not(name, answer, "registry HEAD of the manifest")


def _limit(metric: Mapping[str, Any], region: str) -> int | None:
    """The effective limit of ``metric`` in ``region`` (a region's bucket beats the default one); -1: none."""
    fallback: int | None = None
    limits = metric.get("consumerQuotaLimits")
    for limit in limits if isinstance(limits, list) else []:
        buckets = limit.get("quotaBuckets") if isinstance(limit, dict) else None
        for found in buckets if isinstance(buckets, list) else []:
            if not isinstance(found, dict):
                continue
            try:
                value = int(found.get("effectiveLimit", ""))
            except (TypeError, ValueError):
                continue
            dims = found.get("dimensions")
            if isinstance(dims, dict) and dims.get("region") == region:
                return value
            if not dims:
                fallback = value
    return fallback


def quotas(
    wanted: Mapping[str, int],
    region: str,
    metrics: Answer,
    running: Answer | None = None,
    usage: Callable[[Mapping[str, Any]], Mapping[str, int]] | None = None,
) -> list[Check]:
    """One line per quota metric: below the need is refused; running jobs leaving too little room warn."""
    checks: list[Check] = []
    by_name = {m.get("metric"): m for m in (metrics.value if isinstance(metrics.value, list) else [])}
    in_use: Counter[str] = Counter()
    if running is not None and running.ok and usage is not None and isinstance(running.value, list):
        for job in running.value:
            in_use.update(usage(job))
    for metric, amount in sorted(wanted.items()):
        name = f"quota {metric} in {region}"
        if not metrics.ok:
            checks.append(_could_not(name, metrics, "serviceusage consumerQuotaMetrics.list"))
            continue
        found = by_name.get(metric)
        limit = _limit(found, region) if isinstance(found, dict) else None
        if limit is None:
            status, text = UNCHECKED, f"no limit for it in {region} in the answer; the job needs {amount}"
        elif 0 <= limit < amount:
            status = REFUSED
            text = (
                f"limit {limit}, the job needs {amount}: Vertex AI refuses the create (429 RESOURCE_EXHAUSTED); "
                "ask for more quota or pick another region or machine"
            )
        elif limit >= 0 and in_use[metric] + amount > limit:
            status = WARNING
            text = f"limit {limit}, running jobs use {in_use[metric]}, the job needs {amount}: it may queue until they end"
        else:
            status, text = OK, f"{'no limit' if limit < 0 else f'limit {limit}'}, the job needs {amount}"
        checks.append(Check(name, status, text))
    return [dataclasses.replace(c, kind="quota") for c in checks]
