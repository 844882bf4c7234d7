"""The logging v2 ``entries.list`` endpoint of the fake, with entries that can appear over time."""

from __future__ import annotations

import datetime as dt
import itertools
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tests.fakes.filters import FilterError, compile_filter
from tests.fakes.wire import (
    ApiError,
    RecordedRequest,
    Response,
    int_param,
    page,
    parse_rfc3339,
    rfc3339,
    snapshot,
)

# Auto-filled timestamps start here and grow by 1 ms per entry: in the past, so gcloud's `timestamp<now` keeps them.
BASE_TIME = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)
_JOB_IN_FILTER = re.compile(r'resource\.labels\.job_id\s*=\s*"?([^"\s)]+)"?')


@dataclass
class _Stored:
    entry: dict[str, Any]
    job_id: str
    when_state: str | None
    after_list_calls: int


class LogEntries:
    """Entries per job, revealed by job state or by the number of list calls. Serialised by the server."""

    def __init__(self, reached: Callable[[str, str], bool]):
        self.reached = reached
        self.entries: list[_Stored] = []
        self.list_calls: dict[str, int] = {}
        self._counter = itertools.count(1)

    def add(
        self,
        job_id: str,
        entries: list[dict[str, Any]],
        *,
        project: str,
        when_state: str | None,
        after_list_calls: int,
    ) -> list[dict[str, Any]]:
        """Store ``entries`` for ``job_id``, filling what Cloud Logging would (ids, time, resource, severity)."""
        added = []
        for given in entries:
            n = next(self._counter)
            entry = snapshot(given)
            resource = entry.setdefault("resource", {"type": "ml_job", "labels": {}})
            labels = resource.setdefault("labels", {})
            labels.setdefault("job_id", job_id)
            labels.setdefault("project_id", project)
            labels.setdefault("task_name", "master-replica-0")
            entry.setdefault("insertId", f"{n:012d}")
            entry.setdefault("timestamp", rfc3339(BASE_TIME + dt.timedelta(milliseconds=n)))
            entry.setdefault("severity", "INFO")
            entry.setdefault("logName", f"projects/{project}/logs/{labels['task_name']}")
            entry.setdefault("receiveTimestamp", entry["timestamp"])
            if "jsonPayload" not in entry and "textPayload" not in entry and "protoPayload" not in entry:
                entry["textPayload"] = ""
            self.entries.append(_Stored(entry, job_id, when_state, after_list_calls))
            added.append(snapshot(entry))
        return added

    def _visible(self, stored: _Stored) -> bool:
        if stored.when_state is not None and not self.reached(stored.job_id, stored.when_state):
            return False
        return stored.after_list_calls <= 0 or self.list_calls.get(stored.job_id, 0) > stored.after_list_calls

    def list(self, request: RecordedRequest) -> Response:
        """``POST /v2/entries:list``: filter, ``orderBy`` timestamp asc|desc, pageSize (max 1000), pageToken."""
        body = request.json if isinstance(request.json, dict) else {}
        text = body.get("filter") or ""
        for job_id in set(_JOB_IN_FILTER.findall(text)):
            self.list_calls[job_id] = self.list_calls.get(job_id, 0) + 1
        try:
            matches = compile_filter(text)
        except FilterError as exc:
            raise ApiError(400, f"Invalid filter: {exc}") from exc
        order = str(body.get("orderBy") or "timestamp asc").strip().lower()
        if order not in ("timestamp asc", "timestamp desc", "timestamp"):
            raise ApiError(400, f"Invalid orderBy: {body.get('orderBy')!r}; only timestamp is supported.")
        found = [s.entry for s in self.entries if self._visible(s) and matches(s.entry)]
        found.sort(key=lambda e: (parse_rfc3339(e["timestamp"]) or BASE_TIME, e["insertId"]))
        if order == "timestamp desc":
            found.reverse()
        size = int_param(body.get("pageSize"), "page_size")
        items, token = page(found, size, body.get("pageToken"), 50, 1000)
        answer: dict[str, Any] = {"entries": snapshot(items)} if items else {}
        if token:
            answer["nextPageToken"] = token
        return Response(200, answer)
