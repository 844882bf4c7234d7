"""Log streaming pieces: gcloud's filter and columns, timestamps, dedupe, paging, the stream loop."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator
from typing import Any

import httplib2
import pytest
from googleapiclient.errors import HttpError

from mlsubmit.console import Console, using
from mlsubmit.errors import ApiError
from mlsubmit.follow.entries import LogCursor, entry_fields, format_entry, format_time, parse_timestamp
from mlsubmit.follow.logs import DRAIN_ROUNDS, LogReader, job_log_filter, log_source, stream_job_logs
from mlsubmit.services.ml import Caller, RetryPolicy
from mlsubmit.services.retry import PollPolicy
from tests.fakes.follow import FakeClock, FakeLoggingService, ScriptedBackend, entry

UTC = dt.timezone.utc


# -- filter, timestamps and columns -------------------------------------------------------------------------


def test_filter_is_gclouds() -> None:
    # command_lib/ml_engine/log_utils.py LogFilters, joined with AND as stream.LogFetcher does.
    assert job_log_filter("train_1") == (
        '(resource.type="ml_job" OR resource.type="cloudml_job") AND resource.labels.job_id="train_1"'
    )
    assert job_log_filter("j", "worker-replica-0").endswith(
        ' AND (resource.labels.task_name="worker-replica-0" OR labels.task_name="worker-replica-0")'
    )


def test_vertex_filter_is_gcloud_ais() -> None:
    # command_lib/ai/log_util.py _LogFilters: custom jobs log as ml_job under their numeric id.
    assert job_log_filter("123", target="vertex") == 'resource.type="ml_job" AND resource.labels.job_id="123"'
    assert job_log_filter("123", "workerpool0-0", target="vertex").endswith(
        ' AND resource.labels.task_name="workerpool0-0"'
    )


@pytest.mark.parametrize(
    ("job", "source"),
    [
        ({"jobId": "train_1", "state": "RUNNING"}, ("ml", "train_1")),
        ({"jobId": "my_job", "name": "projects/p/locations/us-central1/customJobs/4242"}, ("vertex", "4242")),
        ({"jobId": "x", "name": "projects/p/jobs/x"}, ("ml", "train_1")),
    ],
)
def test_log_source_finds_the_id_the_entries_carry(job: dict[str, Any], source: tuple[str, str]) -> None:
    assert log_source(job, "train_1") == source


@pytest.mark.parametrize(
    ("text", "when", "nanos"),
    [
        ("2024-01-01T00:00:00Z", dt.datetime(2024, 1, 1, tzinfo=UTC), 0),
        ("2024-01-01T00:00:00.123456789Z", dt.datetime(2024, 1, 1, tzinfo=UTC), 123456789),
        ("2024-01-01T00:00:00.5Z", dt.datetime(2024, 1, 1, tzinfo=UTC), 500000000),
        ("2024-01-01T02:00:01.25+02:00", dt.datetime(2024, 1, 1, 0, 0, 1, tzinfo=UTC), 250000000),
    ],
)
def test_parse_timestamp_keeps_nanoseconds(text: str, when: dt.datetime, nanos: int) -> None:
    assert parse_timestamp(text) == (when, nanos)


def test_format_time_like_gclouds_date_format() -> None:
    assert format_time("2024-01-01T00:00:00.999999999Z", UTC) == "2024-01-01 00:00:00 +0000"
    plus2 = dt.timezone(dt.timedelta(hours=2))
    assert format_time("2024-01-01T23:30:00Z", plus2) == "2024-01-02 01:30:00 +0200"
    assert format_time("not a time", UTC) == "not a time"


@pytest.mark.parametrize(
    ("given", "fields"),
    [
        (
            {"severity": "ERROR", "jsonPayload": {"message": "boom", "levelname": "ERROR", "x": 1}},
            {"severity": "ERROR", "task_name": "unknown_task", "trial_id": None, "message": "boom"},
        ),
        ({"textPayload": "plain"}, {"severity": "DEFAULT", "message": "plain"}),
        ({"protoPayload": {"@type": "t"}, "severity": "NOTICE"}, {"severity": "NOTICE", "message": ""}),
        ({"jsonPayload": {"no_message": 1}}, {"message": ""}),
        (
            {"resource": {"labels": {"task_name": "ps-replica-0"}}, "labels": {"task_name": "other"}},
            {"task_name": "ps-replica-0"},
        ),
        ({"labels": {"task_name": "worker-replica-2"}}, {"task_name": "worker-replica-2"}),
        (
            {"labels": {"ml.googleapis.com/task_name": "w-1", "ml.googleapis.com/trial_id": "4"}},
            {"task_name": "w-1", "trial_id": "4"},
        ),
        ({"labels": {"trial_id": "7"}}, {"trial_id": "7"}),
    ],
)
def test_entry_fields_follow_gclouds_entry_to_dict(given: dict[str, Any], fields: dict[str, Any]) -> None:
    got = entry_fields(given)
    assert {key: got[key] for key in fields} == fields


def test_format_entry_is_tab_separated_like_gclouds_value_printer() -> None:
    lines = format_entry(entry(1, "hello", labels={"trial_id": "3"}), tz=UTC)
    assert lines == ["INFO\t2024-01-01 00:00:01 +0000\tmaster-replica-0\t3\thello"]


def test_vertex_lines_have_no_trial_column() -> None:
    lines = format_entry(entry(1, "hello"), tz=UTC, trial_column=False)
    assert lines == ["INFO\t2024-01-01 00:00:01 +0000\tmaster-replica-0\thello"]


def test_multiline_messages_become_one_line_each_with_the_columns() -> None:
    lines = format_entry(entry(2, "Traceback:\n  File x\nValueError: bad\n"), tz=UTC)
    prefix = "INFO\t2024-01-01 00:00:02 +0000\tmaster-replica-0\t\t"
    assert lines == [prefix + "Traceback:", prefix + "  File x", prefix + "ValueError: bad"]
    assert format_entry(entry(2, "a\nb"), tz=UTC, allow_multiline=True) == [prefix + "a\nb"]


def test_an_empty_message_still_prints_one_line() -> None:
    assert format_entry({"textPayload": "", "timestamp": "2024-01-01T00:00:00Z"}, tz=UTC) == [
        "DEFAULT\t2024-01-01 00:00:00 +0000\tunknown_task\t\t"
    ]


# -- cursor ------------------------------------------------------------------------------------------------


def test_cursor_never_accepts_an_entry_twice() -> None:
    cursor = LogCursor()
    first, second = entry(1), entry(2)
    assert cursor.lower_filter() is None
    assert [cursor.accept(e) for e in (first, second, first, second)] == [True, True, False, False]
    assert cursor.lower_filter() == f'timestamp>="{second["timestamp"]}"'


def test_cursor_accepts_new_entries_at_the_newest_timestamp() -> None:
    cursor = LogCursor()
    same = "2024-01-01T00:00:05Z"
    assert cursor.accept(entry(1, ts=same))
    assert cursor.accept(entry(2, ts=same))  # another insertId at the same time: a different entry
    assert not cursor.accept(entry(1, ts=same))
    assert cursor.lower_filter() == f'timestamp>="{same}"'


def test_cursor_orders_by_nanoseconds_not_by_text() -> None:
    cursor = LogCursor()
    assert cursor.accept(entry(1, ts="2024-01-01T00:00:00.1Z"))
    # Textually "...00.09Z" > "...00.1Z"; in time it is older and outside the window.
    assert not cursor.accept(entry(2, ts="2024-01-01T00:00:00.09Z"))
    assert cursor.accept(entry(3, ts="2024-01-01T00:00:00.100000001Z"))


# -- reader ------------------------------------------------------------------------------------------------


NOW = dt.datetime(2024, 6, 1, 12, 0, 0, tzinfo=UTC)


def reader_for(service: FakeLoggingService, **kwargs: Any) -> LogReader:
    return LogReader(
        service, "p", "j1", caller=Caller(policy=RetryPolicy(attempts=1)), now=lambda: NOW, **kwargs
    )


def test_reader_asks_for_the_job_in_time_order_with_gclouds_window() -> None:
    service = FakeLoggingService([{"entries": [entry(1), entry(2)]}, {}])
    reader = reader_for(service)
    assert [e["insertId"] for e in reader.new_entries()] == ["id0001", "id0002"]
    assert list(reader.new_entries(settled=True)) == []
    first, second = service.bodies
    assert first == {
        "resourceNames": ["projects/p"],
        "filter": job_log_filter("j1") + ' AND timestamp<"2024-06-01T11:59:55.000000Z"',
        "orderBy": "timestamp asc",
        "pageSize": 1000,
    }
    # After printing, only entries at or after the newest one; once settled, no upper bound.
    assert second["filter"] == job_log_filter("j1") + ' AND timestamp>="2024-01-01T00:00:02.000000001Z"'


def test_reader_follows_every_page_and_drops_repeats() -> None:
    service = FakeLoggingService(
        [
            {"entries": [entry(1), entry(2)], "nextPageToken": "t1"},
            {"entries": [entry(2), entry(3)]},
            {"entries": [entry(3), entry(4)]},  # the next poll: 3 is at the lower bound and comes back
        ]
    )
    reader = reader_for(service, task_name="master-replica-0", page_size=2)
    assert [e["insertId"] for e in reader.new_entries()] == ["id0001", "id0002", "id0003"]
    assert [e["insertId"] for e in reader.new_entries()] == ["id0004"]
    assert [b.get("pageToken") for b in service.bodies] == [None, "t1", None]
    assert all(b["pageSize"] == 2 for b in service.bodies)
    assert 'labels.task_name="master-replica-0"' in service.bodies[0]["filter"]


def test_reader_sorts_a_page_by_time() -> None:
    service = FakeLoggingService([{"entries": [entry(3), entry(1), entry(2)]}])
    assert [e["insertId"] for e in reader_for(service).new_entries()] == ["id0001", "id0002", "id0003"]


def test_reader_turns_http_errors_into_api_errors() -> None:
    content = json.dumps(
        {"error": {"code": 403, "message": "no logs for you", "status": "PERMISSION_DENIED"}}
    )
    error = HttpError(httplib2.Response({"status": 403}), content.encode())
    with pytest.raises(ApiError) as caught:
        list(reader_for(FakeLoggingService([error])).new_entries())
    assert caught.value.status == 403
    assert "no logs for you" in str(caught.value)
    assert "logging.logEntries.list" in str(caught.value)


# -- the stream loop ---------------------------------------------------------------------------------------


class ScriptedSource:
    """An EntrySource answering one scripted batch (or exception) per read; records ``settled``."""

    trial_column = True

    def __init__(self, batches: list[list[dict[str, Any]] | Exception]) -> None:
        self.batches = batches
        self.settled: list[bool] = []

    def new_entries(self, *, settled: bool = False) -> Iterator[dict[str, Any]]:
        self.settled.append(settled)
        batch = self.batches.pop(0) if self.batches else []
        if isinstance(batch, Exception):
            raise batch
        yield from batch


def stream(
    backend: ScriptedBackend, source: ScriptedSource
) -> tuple[dict[str, Any], list[str], list[str], FakeClock]:
    clock = FakeClock()
    lines: list[str] = []
    states: list[str] = []
    opened: list[dict[str, Any]] = []

    def open_reader(job: dict[str, Any]) -> ScriptedSource:
        opened.append(job)
        return source

    with using(Console(sleep=clock.sleep)):
        job = stream_job_logs(
            backend,
            open_reader,
            "j1",
            emit=lambda block: lines.extend(block.split("\n")),
            on_state=lambda j: states.append(j["state"]),
            poll=PollPolicy(initial=1.0, factor=2.0, cap=4.0, error_budget=3),
            tz=UTC,
        )
    assert len(opened) == 1 and opened[0]["state"] == states[0]  # opened once, with the first job read
    return job, [line.rsplit("\t", 1)[1] for line in lines], states, clock


def test_stream_prints_in_order_until_the_job_ends_and_the_logs_are_drained() -> None:
    backend = ScriptedBackend(["QUEUED", "RUNNING", "RUNNING", "FAILED"])
    source = ScriptedSource([[], [entry(1), entry(2, "a\nb")], [], [entry(3)], []])
    job, messages, states, clock = stream(backend, source)
    assert job["state"] == "FAILED"
    assert messages == ["line 1", "a", "b", "line 3"]
    assert states == ["QUEUED", "RUNNING", "FAILED"]
    # Once the job has ended: one interval's grace, then reads without the upper bound until one is empty.
    assert source.settled == [False, False, False, True, True]
    assert backend.gets == 4
    assert clock.sleeps == [1.0, 1.0, 2.0, 1.0, 1.0]


def test_stream_retries_a_failed_read_without_losing_lines() -> None:
    backend = ScriptedBackend(["RUNNING", "SUCCEEDED"])
    busy = ApiError("HTTP 503", status=503)
    source = ScriptedSource([[entry(1)], busy, [entry(2)], []])
    job, messages, _, _ = stream(backend, source)
    assert job["state"] == "SUCCEEDED"
    assert messages == ["line 1", "line 2"]


def test_stream_gives_up_after_the_error_budget() -> None:
    busy = ApiError("HTTP 503", status=503)
    with pytest.raises(ApiError, match="reading logs of job j1 failed 3 times in a row"):
        stream(ScriptedBackend(["RUNNING"]), ScriptedSource([busy, busy, busy]))


def test_draining_a_finished_job_is_bounded() -> None:
    class EndlessSource:
        trial_column = False

        def __init__(self) -> None:
            self.reads = 0

        def new_entries(self, *, settled: bool = False) -> Iterator[dict[str, Any]]:
            self.reads += 1
            yield entry(self.reads % 60)

    source = EndlessSource()
    notes: list[str] = []
    with using(Console(sleep=lambda _s: None, notify=notes.append)):
        job = stream_job_logs(
            ScriptedBackend(["SUCCEEDED"]),
            lambda _job: source,
            "j1",
            emit=lambda _line: None,
            on_state=lambda _job: None,
        )
    assert job["state"] == "SUCCEEDED"
    assert source.reads == DRAIN_ROUNDS
    assert notes == ["Job [j1] has ended but its log is still growing; stopped reading it."]


# -- a finished job: no idle time -------------------------------------------------------------------------


def stream_finished(
    ended_seconds_ago: float, batches: list[list[dict[str, Any]]], **kwargs: Any
) -> tuple[ScriptedSource, FakeClock]:
    """Stream a job that is already SUCCEEDED, ``ended_seconds_ago`` before a fixed wall clock."""
    wall = dt.datetime(2026, 11, 24, 12, 0, 0, tzinfo=UTC)
    ended = (wall - dt.timedelta(seconds=ended_seconds_ago)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    backend = ScriptedBackend([{"jobId": "j1", "state": "SUCCEEDED", "endTime": ended}])
    source = ScriptedSource(batches)
    clock = FakeClock()
    with using(Console(sleep=clock.sleep)):
        stream_job_logs(
            backend,
            lambda _job: source,
            "j1",
            emit=lambda _block: None,
            on_state=lambda _job: None,
            poll=PollPolicy(initial=5.0, factor=1.5, cap=30.0),
            now=lambda: wall + dt.timedelta(seconds=sum(clock.sleeps)),
            **kwargs,
        )
    return source, clock


def test_a_job_that_ended_long_ago_is_read_once_without_sleeping() -> None:
    source, clock = stream_finished(3600, [[entry(1), entry(2)], [entry(3)]])
    assert source.settled == [True]  # one settled read (it follows every page) is the whole log
    assert clock.sleeps == []


def test_a_job_that_just_ended_waits_only_for_the_ingestion_lag_then_drains() -> None:
    source, clock = stream_finished(2, [[entry(1)], []])
    assert clock.sleeps[0] == pytest.approx(3.0)  # until LAG_SECONDS after endTime, not a whole interval
    assert source.settled == [True, True]  # recently ended: read until a read comes back empty


def test_the_ingestion_lag_is_a_setting() -> None:
    _source, clock = stream_finished(2, [[entry(1)], []], lag=2.5)
    assert clock.sleeps[0] == pytest.approx(0.5)
    _source, clock = stream_finished(2, [[entry(1)], []], lag=0)
    assert clock.sleeps == [pytest.approx(5.0)]  # no wait for ingestion: only the poll between the two reads


def test_lines_are_written_in_blocks_not_one_write_each() -> None:
    backend = ScriptedBackend(["SUCCEEDED"])
    blocks: list[str] = []
    with using(Console(sleep=lambda _s: None)):
        stream_job_logs(
            backend,
            lambda _job: ScriptedSource([[entry(n) for n in range(1, 1201)], []]),
            "j1",
            emit=blocks.append,
            on_state=lambda _job: None,
        )
    lines = [line for block in blocks for line in block.split("\n")]
    assert len(lines) == 1200 and lines[-1].endswith("line 1200")
    assert len(blocks) == 3  # 512 + 512 + 176


@pytest.mark.parametrize(
    ("message", "shown"),
    [
        ("\x1b[2Jcleared", "\\x1b[2Jcleared"),
        ("bell\x07", "bell\\x07"),
        ("tab\tstays", "tab\tstays"),
        ("c1\x9bcsi", "c1\\x9bcsi"),
    ],
)
def test_control_characters_from_the_server_are_neutralised(message: str, shown: str) -> None:
    [line] = format_entry(entry(1, message), tz=UTC)
    assert line.split("\t", 4)[4] == shown
