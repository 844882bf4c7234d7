"""The pure parts of the TFJob backend: states from conditions and the failing replica
(mlsubmit.services.kubernetes.tfjobs)."""

from __future__ import annotations

from typing import Any

import pytest

from mlsubmit.services.kubernetes.tfjobs import pod_failure, state_of_tfjob


def conditions(*kinds: str, deleted: bool = False) -> dict[str, Any]:
    meta = {"deletionTimestamp": "2026-11-27T10:00:00Z"} if deleted else {}
    return {"metadata": meta, "status": {"conditions": [{"type": k, "status": "True"} for k in kinds]}}


@pytest.mark.parametrize(
    ("obj", "state"),
    [
        ({}, "QUEUED"),
        (conditions("Created"), "QUEUED"),
        (conditions("Created", "Suspended"), "QUEUED"),
        (conditions("Created", "Running"), "RUNNING"),
        (conditions("Created", "Running", "Restarting"), "RUNNING"),
        (conditions("Created", "Running", "Succeeded"), "SUCCEEDED"),
        (conditions("Created", "Running", "Failed"), "FAILED"),
        (conditions("Created", "Running", deleted=True), "CANCELLING"),
        (conditions("Created", "Failed", deleted=True), "FAILED"),
        ({"status": {"conditions": [{"type": "Running", "status": "False"}]}}, "QUEUED"),
        ({"status": {"conditions": "garbage"}}, "QUEUED"),
    ],
)
def test_state_from_conditions(obj: dict[str, Any], state: str) -> None:
    assert state_of_tfjob(obj) == state


def test_the_failing_replica_is_named_by_type_index_and_exit_code() -> None:
    pod = {
        "metadata": {
            "labels": {
                "training.kubeflow.org/replica-type": "worker",
                "training.kubeflow.org/replica-index": "3",
            }
        },
        "status": {
            "containerStatuses": [{"state": {"terminated": {"exitCode": 137, "reason": "OOMKilled"}}}]
        },
    }
    assert pod_failure(pod) == "worker-3 exited with code 137 (OOMKilled)"
    pod["status"] = {"containerStatuses": [{"state": {"terminated": {"exitCode": 0}}}]}
    assert pod_failure(pod) is None
