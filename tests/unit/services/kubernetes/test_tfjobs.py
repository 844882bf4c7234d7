"""The pure parts of the TFJob backend and its log merge: states from conditions, the failing replica, the
manifest's name and submission digest, and merged log rounds (mlsubmit.services.kubernetes.tfjobs,
mlsubmit.follow.kubernetes, mlsubmit.targets.tfjob)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from mlsubmit.follow.kubernetes import LogMerger
from mlsubmit.services.kubernetes.tfjobs import pod_failure, state_of_tfjob
from mlsubmit.targets.tfjob import for_cluster, k8s_name, submission_digest

DNS_1035 = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")


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


@pytest.mark.parametrize("job_id", ["my_job", "My_Job", "a" * 128, "x__y", "job_1_", "J"])
def test_names_are_dns_1035_labels_and_distinct(job_id: str) -> None:
    name = k8s_name(job_id)
    assert DNS_1035.fullmatch(name) and len(name) <= 45
    assert k8s_name(job_id.swapcase()) != name or job_id.swapcase() == job_id


def test_the_submission_digest_tells_definitions_apart_and_not_retries() -> None:
    manifest = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "metadata": {"name": "j", "annotations": {}},
        "spec": {"x": 1},
    }
    once = for_cluster(manifest, namespace="team-a")
    again = for_cluster(manifest, namespace="team-a")
    assert once == again and once["metadata"]["annotations"]["mlsubmit/submission"] == submission_digest(once)
    assert for_cluster({**manifest, "spec": {"x": 2}}, namespace="team-a") != once
    queued = for_cluster(manifest, namespace="team-a", queue="q1")
    assert queued["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "q1"
    assert queued["spec"]["runPolicy"]["suspend"] is True
    assert manifest["metadata"] == {"name": "j", "annotations": {}}  # the plan's body is not changed


class FakeLogs:
    """Pods and their timestamped logs, as the backend serves them."""

    def __init__(self) -> None:
        self.pods_: list[dict[str, Any]] = []
        self.logs: dict[tuple[str, bool], list[str]] = {}

    def add(self, name: str, kind: str, index: int, restarts: int = 0) -> None:
        labels = {
            "training.kubeflow.org/replica-type": kind,
            "training.kubeflow.org/replica-index": str(index),
        }
        self.pods_.append(
            {
                "metadata": {"name": name, "labels": labels},
                "status": {"containerStatuses": [{"name": "tensorflow", "restartCount": restarts}]},
            }
        )

    def pods(self, _name: str) -> list[dict[str, Any]]:
        return self.pods_

    def log(self, pod: str, *, since: str | None = None, previous: bool = False, container: str = "") -> str:
        assert container == "tensorflow"
        lines = self.logs.get((pod, previous), [])
        return "".join(f"{line}\n" for line in lines if not since or line[:19] >= since[:19])


def test_rounds_merge_in_time_order_and_show_each_line_once() -> None:
    fake = FakeLogs()
    fake.add("j-chief-0", "chief", 0)
    fake.add("j-worker-0", "worker", 0)
    fake.logs[("j-chief-0", False)] = ["2026-11-27T10:00:01.5Z chief a", "2026-11-27T10:00:02Z chief b"]
    fake.logs[("j-worker-0", False)] = [
        "2026-11-27T10:00:01.25Z worker a",
        "2026-11-27T10:00:01.75Z worker b",
    ]
    merger = LogMerger(fake, "j")  # type: ignore[arg-type]
    assert merger.round() == [
        "worker-0: worker a",
        "chief-0: chief a",
        "worker-0: worker b",
        "chief-0: chief b",
    ]
    assert merger.round() == []
    fake.logs[("j-chief-0", False)].append("2026-11-27T10:00:02Z chief c")  # same stamp as the last one shown
    fake.pods_[1]["status"]["containerStatuses"][0]["restartCount"] = 1  # the worker restarted
    fake.logs[("j-worker-0", True)] = fake.logs[("j-worker-0", False)] + ["2026-11-27T10:00:03Z worker dying"]
    fake.logs[("j-worker-0", False)] = ["2026-11-27T10:00:04Z worker again"]
    assert merger.round() == ["chief-0: chief c", "worker-0: worker dying", "worker-0: worker again"]
    fake.logs[("j-chief-0", False)].append("2026-11-27T10:00:05Z \x1b[2Jcleared?")
    assert merger.round() == ["chief-0: \\x1b[2Jcleared?"]  # shown, not obeyed
    only = LogMerger(fake, "j", "Worker-0")  # type: ignore[arg-type]  # --task-name
    assert only.round() == [f"worker-0: worker {w}" for w in ("a", "b", "dying", "again")]
