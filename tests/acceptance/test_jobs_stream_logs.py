"""`mlsubmit jobs stream-logs` against the loopback ml and logging APIs: order, no repeats, pages, outcomes."""

from __future__ import annotations

import re

import pytest

from tests.fakes.api_server import FakeGoogleApis
from tests.fakes.lifecycle_support import message_column, parse_json, point_cli_at, run_cli, seed_job

ENTRIES_LIST = r"^/v2/entries(:|%3A)list$"
STATES = ["QUEUED", "PREPARING", "RUNNING", "RUNNING", "RUNNING"]


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch, fake_apis: FakeGoogleApis) -> None:
    point_cli_at(monkeypatch, fake_apis)


def test_lines_appear_in_order_once_while_the_job_runs(fake_apis: FakeGoogleApis) -> None:
    seed_job(fake_apis, "j1", [*STATES, "SUCCEEDED"])
    fake_apis.add_log_lines("j1", ["preparing"], when_state="PREPARING", task_name="service")
    fake_apis.add_log_lines("j1", ["epoch 1", "epoch 2"], when_state="RUNNING")
    fake_apis.add_log_lines("j1", ["epoch 3"], after_list_calls=4)
    fake_apis.add_log_lines("j1", ["done"], when_state="SUCCEEDED")
    result = run_cli(["jobs", "stream-logs", "j1"])
    assert result.exit_code == 0, result.stderr
    assert message_column(result.stdout) == ["preparing", "epoch 1", "epoch 2", "epoch 3", "done"]
    first = result.stdout.splitlines()[0].split("\t")
    assert first[0] == "INFO" and first[2] == "service" and first[3] == ""
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d [+-]\d{4}", first[1])
    assert "Job [j1] is SUCCEEDED." in result.stderr
    # More than one poll was needed, and the later ones only asked for what came after the last line.
    lists = fake_apis.requests_matching("POST", ENTRIES_LIST)
    assert len(lists) >= 4
    assert 'timestamp>="' in lists[-1].json["filter"]
    assert lists[0].json["resourceNames"] == ["projects/p"]


def test_entries_sharing_a_timestamp_are_printed_once_each(fake_apis: FakeGoogleApis) -> None:
    seed_job(fake_apis, "j1", [*STATES, "SUCCEEDED"])
    same = "2024-01-01T00:00:01.000000000Z"
    fake_apis.add_log_entries("j1", [{"timestamp": same, "textPayload": "a"}], when_state="RUNNING")
    fake_apis.add_log_entries("j1", [{"timestamp": same, "textPayload": "b"}], after_list_calls=5)
    result = run_cli(["jobs", "stream-logs", "j1"])
    assert result.exit_code == 0
    assert message_column(result.stdout) == ["a", "b"]


def test_a_failed_job_exits_1_after_its_last_lines(fake_apis: FakeGoogleApis) -> None:
    seed_job(fake_apis, "j1", [*STATES, "FAILED"], error_message="The replica master 0 exited with status 1.")
    fake_apis.add_log_lines(
        "j1",
        ['Traceback (most recent call last):\n  File "task.py"\nValueError: x'],
        when_state="RUNNING",
        severity="ERROR",
    )
    fake_apis.add_log_lines("j1", ["worker exiting"], when_state="FAILED", task_name="worker-replica-0")
    result = run_cli(["jobs", "stream-logs", "j1"])
    assert result.exit_code == 1
    # A multi-line message is split, each line with the columns in front.
    assert message_column(result.stdout) == [
        "Traceback (most recent call last):",
        '  File "task.py"',
        "ValueError: x",
        "worker exiting",
    ]
    assert all(line.startswith("ERROR\t") for line in result.stdout.splitlines()[:3])
    assert "ERROR: job j1 ended in state FAILED: The replica master 0 exited with status 1." in result.stderr


def test_many_pages_are_all_followed(fake_apis: FakeGoogleApis) -> None:
    seed_job(fake_apis, "j1", ["RUNNING", "SUCCEEDED"])
    lines = [f"step {n}" for n in range(2100)]
    fake_apis.add_log_lines("j1", lines)
    result = run_cli(["jobs", "stream-logs", "j1"])
    assert result.exit_code == 0
    assert message_column(result.stdout) == lines
    tokens = [r.json.get("pageToken") for r in fake_apis.requests_matching("POST", ENTRIES_LIST)]
    assert tokens[:3] == [None, "1000", "2000"]


def test_json_format_prints_the_job_on_stdout_and_logs_on_stderr(fake_apis: FakeGoogleApis) -> None:
    seed_job(fake_apis, "j1", ["RUNNING", "CANCELLED"])
    fake_apis.add_log_lines("j1", ["hello"])
    result = run_cli(["jobs", "stream-logs", "j1", "--format", "json"])
    assert result.exit_code == 1
    job = parse_json(result)
    assert (job["jobId"], job["state"]) == ("j1", "CANCELLED")
    assert message_column(result.stderr) == ["hello"]


def test_task_name_narrows_the_filter(fake_apis: FakeGoogleApis) -> None:
    seed_job(fake_apis, "j1", ["RUNNING", "SUCCEEDED"])
    fake_apis.add_log_lines("j1", ["from master"])
    fake_apis.add_log_lines("j1", ["from worker"], task_name="worker-replica-0")
    result = run_cli(["jobs", "stream-logs", "j1", "--task-name", "worker-replica-0"])
    assert result.exit_code == 0
    assert message_column(result.stdout) == ["from worker"]


def test_logging_errors_are_retried(fake_apis: FakeGoogleApis) -> None:
    seed_job(fake_apis, "j1", ["RUNNING", "SUCCEEDED"])
    fake_apis.add_log_lines("j1", ["one", "two"])
    fake_apis.inject("POST", ENTRIES_LIST, 500, times=2)
    result = run_cli(["jobs", "stream-logs", "j1"])
    assert result.exit_code == 0, result.stderr
    assert message_column(result.stdout) == ["one", "two"]


def test_logging_permission_denied_is_one_clear_error(fake_apis: FakeGoogleApis) -> None:
    seed_job(fake_apis, "j1", ["RUNNING", "SUCCEEDED"])
    fake_apis.inject_permission_denied("logging.logEntries.list", "POST", ENTRIES_LIST)
    result = run_cli(["jobs", "stream-logs", "j1"])
    assert result.exit_code == 1
    assert "ERROR: reading logs of job j1 failed: HTTP 403 PERMISSION_DENIED" in result.stderr
    assert "Traceback" not in result.stderr
