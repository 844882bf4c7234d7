"""The TFJob's log merge: pods' rounds in time order, each line once, restarts' previous logs, --task-name."""

from __future__ import annotations

from typing import Any

from mlsubmit.follow.kubernetes import LogMerger


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
