"""Stand-ins for following a job: a clock that moves only when the code sleeps, a backend that answers a
script of states, a logging service that answers a script of pages, and Cloud Logging entries."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any


class FakeClock:
    """A clock that only moves when the code under test sleeps."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.sleeps: list[float] = []

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        assert seconds >= 0
        self.sleeps.append(seconds)
        self.now += seconds


class ScriptedBackend:
    """A JobsBackend whose ``get`` answers the next item of a script (a state, a job dict or an exception)."""

    project = "p"

    def __init__(self, script: Iterable[str | dict[str, Any] | Exception], job_id: str = "j1") -> None:
        self.script = list(script)
        self.job_id = job_id
        self.gets = 0
        self.cancels: list[str] = []
        self.cancel_error: Exception | None = None

    def get(self, job_id: str) -> dict[str, Any]:
        assert job_id == self.job_id
        item = self.script[min(self.gets, len(self.script) - 1)]
        self.gets += 1
        if isinstance(item, Exception):
            raise item
        if isinstance(item, dict):
            return dict(item)
        return {"jobId": job_id, "state": item}

    def list(self, filter_: str | None = None, limit: int | None = None) -> list[dict[str, Any]]:
        raise AssertionError("not used")

    def cancel(self, job_id: str) -> None:
        self.cancels.append(job_id)
        if self.cancel_error is not None:
            raise self.cancel_error


def entry(n: int, message: str = "", *, ts: str | None = None, **extra: Any) -> dict[str, Any]:
    """A Cloud Logging entry as the API returns it."""
    out: dict[str, Any] = {
        "insertId": f"id{n:04d}",
        "timestamp": ts or f"2024-01-01T00:00:{n:02d}.000000001Z",
        "severity": "INFO",
        "resource": {"type": "ml_job", "labels": {"job_id": "j1", "task_name": "master-replica-0"}},
        "jsonPayload": {"message": message or f"line {n}"},
    }
    out.update(extra)
    return out


class FakeLoggingService:
    """Stands in for the logging v2 Resource: ``entries().list(body=...).execute()``."""

    def __init__(self, answers: list[dict[str, Any] | Exception]) -> None:
        self.answers = answers
        self.bodies: list[dict[str, Any]] = []

    def entries(self) -> FakeLoggingService:
        return self

    def list(self, body: dict[str, Any]) -> FakeLoggingService:
        self.bodies.append(json.loads(json.dumps(body)))
        return self

    def execute(self, num_retries: int = 0) -> dict[str, Any]:
        answer = self.answers.pop(0) if self.answers else {}
        if isinstance(answer, Exception):
            raise answer
        return answer
