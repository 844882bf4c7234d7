"""Following a TFJob (``--target kubernetes``): its state, and its pods' logs merged in time order, each line
prefixed with its replica. Each pod's log is polled with ``timestamps=true`` and ``sinceTime`` (no long-lived
streams); a restarted container is read once with ``previous=true`` first."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from mlsubmit import console
from mlsubmit.errors import ApiError
from mlsubmit.follow.entries import time_key
from mlsubmit.services.answers import neutralize
from mlsubmit.services.backends import TERMINAL_STATES
from mlsubmit.services.kubernetes.tfjobs import KubeJobs, replica_name
from mlsubmit.services.poll import PollErrors, state_of, still_running_hint, wait_before
from mlsubmit.services.retry import PollPolicy

MAX_LINE = 16 * 1024
CONTAINERS = ("tensorflow", "pytorch")


@dataclass
class _PodCursor:
    """What was shown of one pod: the last timestamp, the lines stamped exactly so, its restart count."""

    last: str = ""
    restarts: int = 0
    seen_at_last: set[str] = field(default_factory=set)


def _container(pod: dict[str, Any]) -> tuple[str, int]:
    """The trainer's container (``tensorflow`` in a TFJob, ``pytorch`` in a PyTorchJob) and its restart count."""
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    for cs in [*statuses, *((pod.get("spec") or {}).get("containers") or [])]:  # a spec has no restartCount
        if isinstance(cs, dict) and cs.get("name") in CONTAINERS:
            return str(cs["name"]), int(cs.get("restartCount") or 0)
    return CONTAINERS[0], 0


def _lines(text: str) -> list[tuple[str, str]]:
    """(timestamp, message) of each ``2026-11-27T10:00:00.123456789Z message`` line."""
    split = (line.partition(" ") for line in text.splitlines())
    return [
        (stamp, message[:MAX_LINE]) for stamp, _, message in split if stamp[:1].isdigit() and "T" in stamp
    ]


class LogMerger:
    """One round after another, the new lines of every pod of a TFJob in time order (module docstring)."""

    def __init__(self, backend: KubeJobs, name: str, only: str | None = None) -> None:
        self.backend = backend
        self.name = name
        self.only = only.lower() if only else None  # one replica's logs (``worker-1``), as --task-name
        self.cursors: dict[str, _PodCursor] = {}

    def _read(self, pod: str, cursor: _PodCursor, *, previous: bool, container: str) -> list[tuple[str, str]]:
        since = cursor.last.split(".")[0].rstrip("Z") + "Z" if cursor.last else None  # whole seconds only
        try:
            text = self.backend.log(pod, since=since, previous=previous, container=container)
        except ApiError as err:
            if err.status in (400, 404):  # the container has not started yet, or has no previous instance
                return []
            raise
        last = time_key(cursor.last) if cursor.last else (float("-inf"), 0)
        return [
            (stamp, message)
            for stamp, message in _lines(text)
            if (key := time_key(stamp)) > last or (key == last and message not in cursor.seen_at_last)
        ]

    def round(self) -> list[str]:
        """The lines written since the last round, oldest first, prefixed ``worker-1: ``."""
        merged: list[tuple[tuple[float, int], str, str]] = []
        for pod in self.backend.pods(self.name):
            pod_name = str((pod.get("metadata") or {}).get("name") or "")
            who = replica_name(pod)
            if not pod_name or (self.only is not None and who != self.only):
                continue
            cursor = self.cursors.setdefault(pod_name, _PodCursor())
            container, restarts = _container(pod)
            got: list[tuple[str, str]] = []
            if restarts > cursor.restarts:  # the end of the attempt that ended first
                got += self._read(pod_name, cursor, previous=True, container=container)
                cursor.restarts = restarts
            got += self._read(pod_name, cursor, previous=False, container=container)
            for stamp, message in got:
                if time_key(stamp) > time_key(cursor.last):
                    cursor.last, cursor.seen_at_last = stamp, set()
                cursor.seen_at_last.add(message)
                merged.append((time_key(stamp), who, message))
        merged.sort(key=lambda item: (item[0], item[1]))
        # a log line is the trainer's (or the server's) text: control characters are shown, never obeyed
        return [neutralize(f"{who}: {message}") for _, who, message in merged]


def follow_tfjob(
    backend: KubeJobs,
    job_id: str,
    *,
    logs: bool,
    emit: Callable[[str], None],
    notify: Callable[[str], None],
    poll: PollPolicy,
    hint_flags: str = "",
    timeout: float | None = None,
    task_name: str | None = None,
) -> dict[str, Any]:
    """Poll the job (with ``logs``, its pods' logs too) until it ends: the final job."""
    out = console.current()  # its clock and sleep
    errors = PollErrors(f"polling job {job_id}", still_running_hint(job_id, hint_flags), policy=poll)
    merger = LogMerger(backend, backend.name_of(job_id), task_name) if logs else None
    last_state: str | None = None
    quiet = 0
    deadline = None if timeout is None else out.now() + max(0.0, timeout)
    while True:
        job = errors.call(lambda: backend.get(job_id))
        state = state_of(job)
        news = False
        if state != last_state and state not in TERMINAL_STATES:
            notify(f"Job [{job_id}] is {state}.")
            last_state, news = state, True
        if merger is not None:  # at the end too: the last lines written before it
            for line in errors.call(merger.round):
                emit(line)
                news = True
        if state in TERMINAL_STATES:
            notify(f"Job [{job_id}] is {state}.")
            return job
        quiet = 0 if news else quiet + 1
        out.wait(wait_before(deadline, poll.delay(quiet), job, job_id, timeout, hint_flags))
