"""The one answer classifier (docs/getting-jobs-to-start.md): the structured google.rpc details first, then the
dated table of texts; the Vertex AI backend and the failover both ask it."""

from __future__ import annotations

from typing import Any

import pytest

from mlsubmit.services.classifier import ANSWERS, QUOTA_FAILURE, classify, detail_types, is_quota


@pytest.mark.parametrize(
    ("stage", "status", "message", "verdict", "outcome"),
    [
        (
            "create",
            429,
            "The following quota metrics exceed quota limits: aiplatform.googleapis.com/custom_model_training_nvidia_l4_gpus",
            "next",
            "quota",
        ),
        ("failed", None, "Resources are insufficient in region: us-central1.", "next", "stockout"),
        (
            "create",
            400,
            "You do not have permission to act as service_account: x@y. (or it may not exist).",
            "stop",
            "permission",
        ),
        (
            "create",
            400,
            "The Cloud Storage bucket of gs://b is in location us. It must be in the same regional location as the service location",
            "stop",
            "precondition",
        ),
        ("create", 429, "Too many requests", "stop", "refused"),
        ("failed", None, "The replica workerpool0-0 exited with a non-zero status of 1.", "stop", "failed"),
    ],
)
def test_the_classifier(stage: Any, status: int | None, message: str, verdict: str, outcome: str) -> None:
    assert classify(stage, status, message) == (verdict, outcome)


def test_every_answer_is_dated_and_sourced() -> None:
    for answer in ANSWERS:
        assert answer.source.startswith("https://") and answer.checked == "2026-11-25"


def test_a_quota_failure_detail_is_a_quota_whatever_the_text_says() -> None:
    payload = {"error": {"code": 429, "status": "RESOURCE_EXHAUSTED", "message": "Too many requests",
                         "details": [{"@type": QUOTA_FAILURE, "violations": [{"subject": "cpus"}]}]}}  # fmt: skip
    details = detail_types(payload)
    assert classify("create", 429, "Too many requests", details) == ("next", "quota")
    assert is_quota(429, "Too many requests", details) and not is_quota(429, "Too many requests")


@pytest.mark.parametrize(
    "payload",
    ["<html>", {"error": "x"}, {"error": {"details": "x"}}, {"error": {"details": [1, {"@type": 7}, {}]}},
     {"error": {"details": [{"@type": QUOTA_FAILURE}] * 10_000}}],
)  # fmt: skip
def test_details_of_any_shape_are_read_bounded_and_never_crash(payload: Any) -> None:
    assert len(detail_types(payload)) <= 16
