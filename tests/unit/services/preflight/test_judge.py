"""The preflight's judgments, table-driven (docs/getting-jobs-to-start.md): pure functions over answers."""

from __future__ import annotations

from typing import Any

import pytest

from mlsubmit.services.preflight import judge
from mlsubmit.services.preflight.reads import Answer

R = "us-central1"
DENIED = Answer(status=403, error="HTTP 403 PERMISSION_DENIED: denied")
MISSING = Answer(status=404, error="HTTP 404 NOT_FOUND: missing")


def test_api_states() -> None:
    assert judge.api_enabled(Answer({"state": "ENABLED"})).status == "ok"
    assert judge.api_enabled(Answer({"state": "DISABLED"})).status == "refused"
    assert judge.api_enabled(DENIED).status == "unchecked"
    assert judge.api_enabled(Answer("<html>")).status == "unchecked"  # no state: nothing to judge


def test_project_number_comes_from_the_service_name() -> None:
    assert judge.project_number(Answer({"name": "projects/42/services/aiplatform.googleapis.com"})) == "42"
    assert judge.project_number(Answer({"name": "projects/p/services/x"})) is None
    assert judge.project_number(DENIED) is None


def test_bucket_write_needed_only_where_the_caller_writes() -> None:
    here = Answer({"location": "US-CENTRAL1", "locationType": "region"})
    none = Answer({"kind": "storage#testIamPermissionsResponse"})
    staging = judge.bucket(judge.BucketUse("b", "staging", True), here, none, R)
    job_dir = judge.bucket(judge.BucketUse("b", "job dir", False), here, none, R)
    assert (staging.status, job_dir.status) == ("refused", "warning")
    assert judge.bucket(judge.BucketUse("b", "staging", True), here, DENIED, R).status == "unchecked"
    assert judge.bucket(judge.BucketUse("b", "staging", True), MISSING, none, R).status == "refused"


def test_worst_finding_wins_and_every_finding_is_said() -> None:
    far = Answer({"location": "EUROPE-WEST4", "locationType": "region"})
    check = judge.bucket(judge.BucketUse("b", "job dir", False), far, Answer({}), R)
    assert check.status == "refused"
    assert "europe-west4" in check.message and "storage.objects.create" in check.message


def test_service_account_paths() -> None:
    ok = Answer({"permissions": [judge.ACT_AS]})
    assert judge.service_account(None, None, None).status == "ok"
    assert judge.service_account("a@p.iam.gserviceaccount.com", Answer({}), ok).status == "ok"
    assert judge.service_account("a@p.iam.gserviceaccount.com", Answer({}), Answer({})).status == "refused"
    assert judge.service_account("a@p.iam.gserviceaccount.com", MISSING, ok).status == "refused"
    assert judge.service_account("a@p.iam.gserviceaccount.com", DENIED, ok).status == "unchecked"
    assert judge.service_account("a@p.iam.gserviceaccount.com", Answer({}), DENIED).status == "unchecked"


KEY = f"projects/p/locations/{R}/keyRings/r/cryptoKeys/k"
ENABLED = Answer({"purpose": "ENCRYPT_DECRYPT", "primary": {"state": "ENABLED"}})
GRANTED = Answer(
    {
        "bindings": [
            {
                "role": judge.KMS_ROLE,
                "members": ["serviceAccount:service-7@gcp-sa-aiplatform.iam.gserviceaccount.com"],
            }
        ]
    }
)


@pytest.mark.parametrize(
    ("key", "got", "policy", "number", "status"),
    [
        (KEY, ENABLED, GRANTED, "7", "ok"),
        (KEY, ENABLED, GRANTED, "8", "warning"),  # granted to another project's agent
        (KEY, ENABLED, Answer({}), "7", "warning"),
        (KEY, ENABLED, DENIED, "7", "unchecked"),
        (KEY, ENABLED, GRANTED, None, "unchecked"),
        (KEY, Answer({"primary": {"state": "DESTROYED"}}), GRANTED, "7", "refused"),
        (
            KEY,
            Answer({"purpose": "ASYMMETRIC_SIGN", "primary": {"state": "ENABLED"}}),
            GRANTED,
            "7",
            "refused",
        ),
        (KEY, MISSING, GRANTED, "7", "refused"),
        (KEY, DENIED, GRANTED, "7", "unchecked"),
        (KEY.replace(R, "europe-west4"), ENABLED, GRANTED, "7", "refused"),
    ],
)
def test_kms_key(key: str, got: Answer, policy: Answer, number: str | None, status: str) -> None:
    assert judge.kms_key(key, R, got, policy, number).status == status


def metric(name: str, limit: int | None, region: str = R, default: int | None = 0) -> dict[str, Any]:
    buckets: list[dict[str, Any]] = []
    if default is not None:
        buckets.append({"effectiveLimit": str(default)})
    if limit is not None:
        buckets.append({"effectiveLimit": str(limit), "dimensions": {"region": region}})
    return {"metric": name, "consumerQuotaLimits": [{"quotaBuckets": buckets}]}


@pytest.mark.parametrize(
    ("metrics", "running", "status"),
    [
        ([metric("m", 8)], [], "ok"),
        ([metric("m", 2)], [], "refused"),
        ([metric("m", 8)], [{"m": 5}], "warning"),
        ([metric("m", -1)], [{"m": 500}], "ok"),  # -1: no limit
        ([metric("m", None, default=8)], [], "ok"),  # no region bucket: the default one
        ([metric("m", 8, region="europe-west4", default=None)], [], "unchecked"),
        ([], [], "unchecked"),
    ],
)
def test_quota(metrics: list[dict[str, Any]], running: list[dict[str, int]], status: str) -> None:
    (check,) = judge.quotas({"m": 4}, R, Answer(metrics), Answer(running), lambda job: job)
    assert check.status == status


def test_quota_read_denied_is_could_not_check_for_every_metric() -> None:
    checks = judge.quotas({"a": 1, "b": 2}, R, DENIED)
    assert [c.status for c in checks] == ["unchecked", "unchecked"]
