"""A job's Cloud Logging entries as ``gcloud ai-platform jobs stream-logs`` streams them (gcloud's filter and
``lag`` as command_lib/ml_engine/log_utils.py and command_lib/logs/stream.py), but every page followed, no entry
printed twice, and the stream stopped once the job is over and its logs are drained."""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from mlsubmit import console
from mlsubmit.follow.entries import LogCursor, format_entry, parse_timestamp, time_key
from mlsubmit.services.answers import PageGuard, need_page
from mlsubmit.services.backends import TERMINAL_STATES, JobsBackend
from mlsubmit.services.ml import Caller, api_error
from mlsubmit.services.poll import PollErrors, state_of, still_running_hint
from mlsubmit.services.retry import PollPolicy

PAGE_SIZE = 1000  # the API's maximum
# Reads after the job ended: normally one or two; the bound keeps a log that never stops growing from holding on
DRAIN_ROUNDS = 10
LAG_SECONDS = 5.0  # gcloud's upper bound: entries younger than this wait for the next poll (MLSUBMIT_LOG_LAG)
SETTLED_AFTER_SECONDS = 60.0  # a job that ended longer ago has its whole log ingested: one read is all of it
EMIT_BLOCK = 512  # lines per write while streaming
# pages per read; the next poll goes on from the cursor (the job's state is read in between)
MAX_PAGES_PER_READ = 1000
# Cloud Logging allows 60 reads a minute per project: never poll one job's logs more often than every 5 s.
LOGS_POLL = PollPolicy(initial=5.0, factor=1.5, cap=30.0)


def job_log_filter(job_id: str, task_name: str | None = None, *, target: str = "ml") -> str:
    """gcloud's filter for a job's logs (of one task): ml v1 jobs log as ``ml_job`` or, old ones, ``cloudml_job``
    (command_lib/ml_engine/log_utils.py); Vertex AI's as ``ml_job`` by numeric id (command_lib/ai/log_util.py)."""
    vertex = target == "vertex"
    kind = 'resource.type="ml_job"' if vertex else '(resource.type="ml_job" OR resource.type="cloudml_job")'
    parts = [kind, f'resource.labels.job_id="{job_id}"']
    task = f'resource.labels.task_name="{task_name}"'
    if task_name:
        parts.append(task if vertex else f'({task} OR labels.task_name="{task_name}")')
    return " AND ".join(parts)


_CUSTOM_JOB_NAME = re.compile(
    r"^projects/[^/]+/locations/[^/]+/(?:customJobs|hyperparameterTuningJobs)/(\d+)$"
)


def log_source(job: Mapping[str, Any], job_id: str) -> tuple[str, str]:
    """(target, the job id its entries carry): a Vertex AI job's numeric id (its ``name``'s end), else ``job_id``."""
    match = _CUSTOM_JOB_NAME.match(str(job.get("name") or ""))
    return ("vertex", match.group(1)) if match else ("ml", job_id)


@dataclasses.dataclass
class LogReader:
    """Reads new entries of one job through the logging v2 ``services.rest`` Resource, page by page."""

    service: Any
    project: str
    job_id: str
    _: dataclasses.KW_ONLY
    caller: Caller = dataclasses.field(default_factory=Caller)
    task_name: str | None = None
    target: str = "ml"
    now: Callable[[], dt.datetime] = lambda: dt.datetime.now(dt.timezone.utc)
    lag: float = LAG_SECONDS
    page_size: int = PAGE_SIZE

    def __post_init__(self) -> None:
        self.base_filter = job_log_filter(self.job_id, self.task_name, target=self.target)
        self.trial_column = self.target != "vertex"
        self.cursor = LogCursor()

    def new_entries(self, *, settled: bool = False) -> Iterator[dict[str, Any]]:
        """Entries not printed before, oldest first, every page, lazily (an error mid-way loses nothing: the
        cursor moves past what was yielded only). Unless ``settled`` (the job ended), not the last ``lag`` s."""
        from googleapiclient.errors import HttpError

        parts = [self.base_filter, self.cursor.lower_filter()]
        if not settled:
            until = (self.now() - dt.timedelta(seconds=self.lag)).astimezone(dt.timezone.utc)
            parts.append(f'timestamp<"{until.strftime("%Y-%m-%dT%H:%M:%S.%fZ")}"')
        body: dict[str, Any] = {
            "resourceNames": [f"projects/{self.project}"],
            "filter": " AND ".join(p for p in parts if p),
            "orderBy": "timestamp asc",
            "pageSize": self.page_size,
        }
        what = f"reading logs of job {self.job_id}"
        # an empty page with a token (Cloud Logging still searching) or a repeated token ends this read only
        guard = PageGuard(what, strict=False, max_pages=MAX_PAGES_PER_READ)
        while True:
            try:
                answer = self.caller.execute(
                    functools.partial(self.service.entries().list, body=dict(body)), what
                )
            except HttpError as err:
                raise api_error(err, what, self.project, "logging.logEntries.list") from None
            page_entries, token = need_page(answer, "entries", what)
            new = 0
            for entry in sorted(
                page_entries,
                key=lambda e: (time_key(str(e.get("timestamp", ""))), str(e.get("insertId", ""))),
            ):
                if self.cursor.accept(entry):
                    new += 1
                    yield entry
            if not guard.advance(token, new):
                return
            body["pageToken"] = token


def stream_job_logs(
    backend: JobsBackend,
    open_reader: Callable[[dict[str, Any]], LogReader],
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
    """Print the job's log lines until it has ended and its log is drained: the final job."""
    out = console.current()
    hint = still_running_hint(job_id, hint_flags)
    log_errors = PollErrors(f"reading logs of job {job_id}", hint, policy=poll)
    job_errors = PollErrors(f"polling job {job_id}", hint, policy=poll)
    reader: LogReader | None = None
    final: dict[str, Any] | None = None
    last_state: str | None = None
    quiet = 0
    drains = 0
    complete = False

    def print_new(source: LogReader, settled: bool) -> int:
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
        try:
            ended = parse_timestamp(str(job.get("endTime") or ""))[0]
        except (ValueError, IndexError):
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
