"""Streaming a job's Cloud Logging entries the way ``gcloud ai-platform jobs stream-logs`` does, minus its warts.

Entries come from ``entries.list`` of the static ``logging.v2`` discovery document (endpoint override
``CLOUDSDK_API_ENDPOINT_OVERRIDES_LOGGING``) with gcloud's filter for the job (command_lib/ml_engine/
log_utils.py ``LogFilters``) plus a timestamp window, and are printed in gcloud's ``LOG_FORMAT`` columns
(severity, local time, task name, trial id, message; tab separated), multi-line messages split into one line
each. Like gcloud's ``LogFetcher`` (command_lib/logs/stream.py) we never ask for the last ``lag`` seconds, so
entries that arrive slightly out of order are still printed in order; unlike gcloud we follow every page,
never print an entry twice (dedupe by insertId and timestamp), and stop as soon as the job is over and its
logs are drained instead of polling for another minute.
"""

from __future__ import annotations

import datetime as dt
import functools
import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Protocol

from mlsubmit import console
from mlsubmit.follow.entries import (
    LogCursor,
    _time_key,
    format_entry,
    parse_timestamp,
)
from mlsubmit.services.answers import PageGuard, need_page
from mlsubmit.services.backends import TERMINAL_STATES, JobsBackend
from mlsubmit.services.ml import Caller, api_error
from mlsubmit.services.poll import PollErrors, state_of, still_running_hint
from mlsubmit.services.retry import PollPolicy

# gcloud's LOG_FORMAT: value(severity, timestamp.date("%Y-%m-%d %H:%M:%S %z", tz=LOCAL), task_name, trial_id,
# message) -- the value printer joins columns with a tab and prints a missing column as empty.
PAGE_SIZE = 1000  # the API's maximum
# Reads after the job ended: normally one or two (ingestion lags a few seconds); the bound keeps a service
# that keeps answering "new" entries for a finished job from holding a pipeline forever.
DRAIN_ROUNDS = 10
LAG_SECONDS = (
    5.0  # gcloud's upper bound: entries younger than this are left for the next poll (MLSUBMIT_LOG_LAG)
)
# A job that ended longer ago than this has all its entries ingested: one read (every page) is the whole log.
SETTLED_AFTER_SECONDS = 60.0
EMIT_BLOCK = 512  # lines per write while streaming
# Control characters other than tab, from a server or a job's own output, never reach the terminal as such
# (``services.answers.neutralize``): an escape sequence in a log line could rewrite what a person or a CI log
# viewer sees.
# One read follows at most this many pages; the next poll goes on from the cursor (the job's state is read in
# between, so a log that grows without end never keeps us from seeing the job end).
MAX_PAGES_PER_READ = 1000
# Cloud Logging allows 60 reads a minute per project: never poll one job's logs more often than every 5 s.
LOGS_POLL = PollPolicy(initial=5.0, factor=1.5, cap=30.0)


def job_log_filter(job_id: str, task_name: str | None = None, *, target: str = "ml") -> str:
    """gcloud's filter for a job's logs, optionally of one task.

    ml (command_lib/ml_engine/log_utils.py): ``ml_job``, or ``cloudml_job`` for old jobs, by job id. Vertex AI
    custom jobs log as ``ml_job`` too, under their numeric id (command_lib/ai/log_util.py).
    """
    if target == "vertex":
        parts = ['resource.type="ml_job"', f'resource.labels.job_id="{job_id}"']
        if task_name:
            parts.append(f'resource.labels.task_name="{task_name}"')
        return " AND ".join(parts)
    parts = ['(resource.type="ml_job" OR resource.type="cloudml_job")', f'resource.labels.job_id="{job_id}"']
    if task_name:
        parts.append(f'(resource.labels.task_name="{task_name}" OR labels.task_name="{task_name}")')
    return " AND ".join(parts)


_CUSTOM_JOB_NAME = re.compile(
    r"^projects/[^/]+/locations/[^/]+/(?:customJobs|hyperparameterTuningJobs)/(\d+)$"
)


def log_source(job: Mapping[str, Any], job_id: str) -> tuple[str, str]:
    """(target, the job id its log entries carry): a Vertex AI custom (or tuning) job logs under its numeric id, which
    its resource ``name`` ends with; an ml job under its job id."""
    match = _CUSTOM_JOB_NAME.match(str(job.get("name") or ""))
    return ("vertex", match.group(1)) if match else ("ml", job_id)


class EntrySource(Protocol):
    """Where :func:`stream_job_logs` gets entries from (a :class:`LogReader`, or a stand-in in tests)."""

    trial_column: bool  # whether printed lines have gcloud's trial id column (ml: yes, Vertex: no)

    def new_entries(self, *, settled: bool = False) -> Iterator[dict[str, Any]]:
        """Entries not returned before, oldest first."""
        ...


def _end_time(job: Mapping[str, Any]) -> dt.datetime | None:
    """The job's ``endTime`` (ml v1 and Vertex both have it), None when absent or unreadable."""
    text = job.get("endTime")
    if not isinstance(text, str) or not text:
        return None
    try:
        return parse_timestamp(text)[0]
    except (ValueError, IndexError):
        return None


def _rfc3339(moment: dt.datetime) -> str:
    return moment.astimezone(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class LogReader:
    """Reads new entries of one job through the logging v2 ``services.rest`` Resource, page by page."""

    def __init__(
        self,
        service: Any,
        project: str,
        job_id: str,
        *,
        caller: Caller | None = None,
        task_name: str | None = None,
        target: str = "ml",
        now: Callable[[], dt.datetime] = lambda: dt.datetime.now(dt.timezone.utc),
        lag: float = LAG_SECONDS,
        page_size: int = PAGE_SIZE,
    ) -> None:
        self.service = service
        self.project = project
        self.job_id = job_id
        self.caller = caller or Caller()
        self.base_filter = job_log_filter(job_id, task_name, target=target)
        self.trial_column = target != "vertex"
        self.now = now
        self.lag = lag
        self.page_size = page_size
        self.cursor = LogCursor()

    def request_filter(self, settled: bool) -> str:
        """The filter of the next read: the job, after what we printed, and (unless ``settled``: the job has
        ended, nothing newer will be written) older than ``lag`` seconds."""
        parts = [self.base_filter]
        lower = self.cursor.lower_filter()
        if lower:
            parts.append(lower)
        if not settled:
            parts.append(f'timestamp<"{_rfc3339(self.now() - dt.timedelta(seconds=self.lag))}"')
        return " AND ".join(parts)

    def new_entries(self, *, settled: bool = False) -> Iterator[dict[str, Any]]:
        """Entries not printed before, oldest first, following every page. Lazy: a long backlog is printed
        page by page, and an error in the middle loses nothing (the cursor only moves past what was yielded)."""
        from googleapiclient.errors import HttpError

        body: dict[str, Any] = {
            "resourceNames": [f"projects/{self.project}"],
            "filter": self.request_filter(settled),
            "orderBy": "timestamp asc",
            "pageSize": self.page_size,
        }
        what = f"reading logs of job {self.job_id}"
        # Cloud Logging may answer an empty page with a token while it searches; a service that keeps doing so
        # (or repeats a token) ends this read, and the next poll starts again from the cursor.
        guard = PageGuard(what, strict=False, max_pages=MAX_PAGES_PER_READ)
        while True:
            try:
                answer = self.caller.execute(
                    functools.partial(self.service.entries().list, body=dict(body)), what
                )
            except HttpError as err:
                raise api_error(err, what, self.project, "logging.logEntries.list") from None
            page_entries, token = need_page(answer, "entries", what)
            entries = sorted(
                page_entries,
                key=lambda e: (_time_key(str(e.get("timestamp", ""))), str(e.get("insertId", ""))),
            )
            new = 0
            for entry in entries:
                if self.cursor.accept(entry):
                    new += 1
                    yield entry
            if not guard.advance(token, new):
                return
            body["pageToken"] = token


def stream_job_logs(
    backend: JobsBackend,
    open_reader: Callable[[dict[str, Any]], EntrySource],
    job_id: str,
    *,
    emit: Callable[[str], None],
    on_state: Callable[[dict[str, Any]], None],
    poll: PollPolicy = LOGS_POLL,
    tz: dt.tzinfo | None = None,
    allow_multiline: bool = False,
    hint_flags: str = "",
    now: Callable[[], dt.datetime] = lambda: dt.datetime.now(dt.timezone.utc),
    lag: float = LAG_SECONDS,
) -> dict[str, Any]:
    """Print the job's log lines through ``emit`` until the job has ended and its logs are drained; return the
    final job.

    ``open_reader(job)`` is called once with the first job read (a Vertex job's log is found by the numeric
    id in that resource). Each round reads the job's state (``on_state`` on every change), then new entries,
    ``emit`` gets blocks of up to ``EMIT_BLOCK`` lines joined by newlines (one write each, not one per line).
    Once the job is in a terminal state we wait until ``lag`` seconds (``LAG_SECONDS``) after its ``endTime`` (one interval when
    the job has none: Cloud Logging ingests with a few seconds' delay), then read without the ``lag`` window. A
    job that ended over ``SETTLED_AFTER_SECONDS`` ago is complete after that one read; otherwise we read until
    a read comes back empty (at most ``DRAIN_ROUNDS``), so the last lines are never cut off. The interval backs
    off while nothing new appears.
    """
    out = console.current()  # waits and notices (tests set one with a fake clock)
    hint = still_running_hint(job_id, hint_flags)
    log_errors = PollErrors(f"reading logs of job {job_id}", hint, policy=poll)
    job_errors = PollErrors(f"polling job {job_id}", hint, policy=poll)
    reader: EntrySource | None = None
    final: dict[str, Any] | None = None
    last_state: str | None = None
    quiet = 0
    drains = 0
    complete = False

    def print_new(source: EntrySource, settled: bool) -> int:
        count = 0
        block: list[str] = []
        try:
            for entry in source.new_entries(settled=settled):
                block += format_entry(
                    entry, tz=tz, allow_multiline=allow_multiline, trial_column=source.trial_column
                )
                count += 1
                if len(block) >= EMIT_BLOCK:
                    emit("\n".join(block))
                    block = []
        finally:  # what was read is printed even when the next page fails (the cursor has moved past it)
            if block:
                emit("\n".join(block))
        return count

    def settle(job: dict[str, Any]) -> bool:
        """Wait until the job's last entries are ingested; True when one read will then be the whole log."""
        ended = _end_time(job)
        if ended is None:
            out.wait(poll.delay(0))
            return False
        age = (now() - ended).total_seconds()
        if age < lag:
            out.wait(lag - age)
        return age >= SETTLED_AFTER_SECONDS

    while True:
        if final is None:
            job = job_errors.call(lambda: backend.get(job_id))
            if reader is None:
                reader = open_reader(job)
            state = state_of(job)
            if state != last_state:
                on_state(job)
                last_state, quiet = state, 0
            if state in TERMINAL_STATES:
                final = job
                complete = settle(job)
                continue
        assert reader is not None
        printed = log_errors.call(functools.partial(print_new, reader, final is not None))
        if final is not None:
            drains += 1
            if not printed or complete:
                return final
            if drains >= DRAIN_ROUNDS:
                out.notify(f"Job [{job_id}] has ended but its log is still growing; stopped reading it.")
                return final
        if printed:
            quiet = 0
        out.wait(poll.delay(quiet))
        quiet += 1
