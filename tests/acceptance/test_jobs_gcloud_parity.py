"""Parity with the live oracle: `mlsubmit jobs stream-logs` prints the same lines as gcloud's.

gcloud needs about ten seconds here (it checks whether the job ended only every 10 s), so its run starts before
the first test (tests/fakes/early.py); mlsubmit returns as soon as the ended job's log is drained.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.fakes.api_server import FakeGoogleApis
from tests.fakes.cli import run_cli_process
from tests.fakes.early import Start, early
from tests.fakes.gcloud_oracle import GcloudRun, run_gcloud
from tests.fakes.lifecycle_support import PROJECT, cli_env

pytestmark = pytest.mark.gcloud

ENTRIES: list[dict[str, Any]] = [
    {"jsonPayload": {"message": "hello", "levelname": "INFO", "extra": 1}},
    {
        "textPayload": 'Traceback (most recent call last):\n  File "task.py", line 1\nValueError: x\n',
        "severity": "ERROR",
    },
    {"textPayload": "", "labels": {"trial_id": "3"}},
    {
        "jsonPayload": {"message": "from a worker"},
        "resource": {"type": "ml_job", "labels": {"job_id": "j1", "task_name": "worker-replica-1"}},
        "severity": "WARNING",
    },
    {"protoPayload": {"@type": "type.googleapis.com/x"}, "severity": "NOTICE"},
    {"jsonPayload": {"message": "late, nanosecond time"}, "timestamp": "2024-01-01T00:00:07.123456789Z"},
]


def ended_job_with_entries(server: FakeGoogleApis) -> None:
    server.add_job({"jobId": "j1", "state": "SUCCEEDED", "trainingInput": {}}, project=PROJECT)
    server.add_log_entries("j1", ENTRIES, project=PROJECT)


@early
def gcloud_stream_logs(start: Start) -> GcloudRun:
    with FakeGoogleApis() as server:
        ended_job_with_entries(server)
        return run_gcloud(
            ["ai-platform", "jobs", "stream-logs", "j1", "--polling-interval", "1", "--project", PROJECT],
            server,
            cwd=start.tmp.mktemp("gcloud-stream-logs"),
            env={"TZ": "UTC"},
            base_env=start.env,
        )


def test_log_lines_match_gclouds(fake_apis: FakeGoogleApis, tmp_path_factory: pytest.TempPathFactory) -> None:
    ended_job_with_entries(fake_apis)  # the same entries gcloud read from its own server
    reference = gcloud_stream_logs.result(tmp_path_factory)
    assert reference.returncode == 0, reference.stderr
    ours = run_cli_process(["jobs", "stream-logs", "j1"], env={**cli_env(fake_apis), "TZ": "UTC"})
    assert ours.returncode == 0, ours.stderr
    assert len(reference.stdout.splitlines()) == 8  # the oracle really printed every line
    assert ours.stdout == reference.stdout
