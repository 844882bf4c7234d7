"""One Cloud Logging entry as gcloud prints it (``LOG_FORMAT``: severity, local time, task, trial, message; tab
separated), control characters neutralised, and the cursor that prints every entry once (docs/jobs.md)."""

from __future__ import annotations

import datetime as dt
import functools
import json
from collections.abc import Mapping
from typing import Any

from mlsubmit.job.vocab import as_dict
from mlsubmit.services.answers import neutralize

TIME_FORMAT = "%Y-%m-%d %H:%M:%S %z"
# Cloud Logging takes entries of at most 256 KB (https://cloud.google.com/logging/quotas): a longer message is
# cut there, so one enormous line neither floods the terminal nor holds several copies in memory.
MAX_MESSAGE_CHARS = 256 * 1024


@functools.lru_cache(maxsize=4096)
def parse_timestamp(text: str) -> tuple[dt.datetime, int]:
    """(UTC datetime to the second, nanoseconds) of an RFC 3339 time (0-9 fractional digits): Cloud Logging's
    nanoseconds, which ``datetime`` cannot hold, order entries exactly. ValueError on anything else."""
    value = text.strip()
    if value[-1:] in ("Z", "z"):
        value = value[:-1] + "+00:00"
    nanos = 0
    if "." in value:
        head, _, rest = value.partition(".")
        digits = len(rest) - len(rest.lstrip("0123456789"))
        nanos = int((rest[:digits] + "000000000")[:9])
        value = head + rest[digits:]
    moment = dt.datetime.fromisoformat(value)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.timezone.utc)
    return moment.astimezone(dt.timezone.utc), nanos


@functools.lru_cache(maxsize=4096)
def time_key(text: str) -> tuple[float, int]:
    """The order of an RFC 3339 time (to the nanosecond); one that cannot be read sorts first."""
    try:
        moment, nanos = parse_timestamp(text)
    except (ValueError, IndexError):
        return (0.0, 0)
    return (moment.timestamp(), nanos)


def entry_fields(entry: Mapping[str, Any]) -> dict[str, Any]:
    """The columns of one entry, as gcloud's _EntryToDict: severity, timestamp, task_name and trial_id (from the
    resource labels or labels: _GetLabelAttributes), message (a ``jsonPayload``'s, a ``textPayload``, or empty)."""
    labels = as_dict(entry.get("labels"))
    task = (
        as_dict(as_dict(entry.get("resource")).get("labels")).get("task_name")
        or labels.get("task_name")
        or labels.get("ml.googleapis.com/task_name")
        or "unknown_task"
    )
    trial = labels.get("trial_id") or labels.get("ml.googleapis.com/trial_id")
    message = ""
    payload = entry.get("jsonPayload")
    if isinstance(payload, dict):
        message = str(payload.get("message") or "")
    elif entry.get("textPayload") is not None:
        message = str(entry["textPayload"])
    return {
        "severity": str(entry.get("severity") or "DEFAULT"),
        "timestamp": str(entry.get("timestamp") or ""),
        "task_name": str(task),
        "trial_id": str(trial) if trial is not None else None,
        "message": message,
    }


def format_time(text: str, tz: dt.tzinfo | None = None) -> str:
    """``2024-01-01 00:00:00 +0000`` style, in ``tz`` (None: the local zone, as gcloud's ``tz=LOCAL``)."""
    try:
        moment, _nanos = parse_timestamp(text)
    except (ValueError, IndexError):
        return text
    return moment.astimezone(tz).strftime(TIME_FORMAT)  # tz None: the local zone


def format_entry(
    entry: Mapping[str, Any],
    *,
    tz: dt.tzinfo | None = None,
    allow_multiline: bool = False,
    trial_column: bool = True,
) -> list[str]:
    """The printed lines of one entry: one per message line, each with the columns in front (gcloud's
    SplitMultiline); ``trial_column=False``: no trial id, as ``gcloud ai custom-jobs stream-logs``."""
    fields = entry_fields(entry)
    columns = [fields["severity"], format_time(fields["timestamp"], tz), fields["task_name"]]
    if trial_column:
        columns.append(fields["trial_id"] or "")
    prefix = neutralize("\t".join(columns))
    message: str = fields["message"]
    if len(message) > MAX_MESSAGE_CHARS:  # a service's (or a proxy's) entry past Cloud Logging's own limit
        message = f"{message[:MAX_MESSAGE_CHARS]} [... {len(message) - MAX_MESSAGE_CHARS} more characters]"
    if allow_multiline:
        return [f"{prefix}\t{neutralize(message, keep_newlines=True)}"]
    return [f"{prefix}\t{neutralize(line)}" for line in message.splitlines() or [""]]


class LogCursor:
    """The newest timestamp printed and the entries printed at it: ``timestamp>=T`` fetches late entries of ``T``,
    the ids seen at ``T`` keep them from printing twice."""

    def __init__(self) -> None:
        self.bound: str | None = None
        self._bound_key: tuple[float, int] = (float("-inf"), 0)
        self._seen: dict[tuple[str, str], tuple[float, int]] = {}

    def lower_filter(self) -> str | None:
        return f'timestamp>="{self.bound}"' if self.bound else None

    def accept(self, entry: Mapping[str, Any]) -> bool:
        """True (and remember it) if ``entry`` was not printed before (insertId + timestamp)."""
        insert_id = entry.get("insertId") or json.dumps(entry, sort_keys=True, default=str)
        ident = (str(insert_id), str(entry.get("timestamp") or ""))
        if ident in self._seen:
            return False
        key = time_key(ident[1])
        if key < self._bound_key:
            return False  # older than what we printed: the service answered outside our window
        if key > self._bound_key:
            self._bound_key, self.bound = key, ident[1]
            self._seen = {seen: k for seen, k in self._seen.items() if k >= key}
        self._seen[ident] = key
        return True
