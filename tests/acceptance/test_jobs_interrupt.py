"""Ctrl-C while following a job: it keeps running (or is cancelled with --cancel-on-interrupt); exit 130."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.fakes.api_server import FakeGoogleApis
from tests.fakes.children import signal_when
from tests.fakes.lifecycle_support import cli_env, point_cli_at, run_cli, seed_job

CANCEL = r"^/v1/projects/p/jobs/j1(:|%3A)cancel$"
REPO = Path(__file__).resolve().parents[2]


def ctrl_c_on_sleep(monkeypatch: pytest.MonkeyPatch, after: int) -> None:
    """Make the ``after``-th sleep of the follow loop raise KeyboardInterrupt, as Ctrl-C would."""
    calls = {"n": 0}

    def sleep(_seconds: float) -> None:
        calls["n"] += 1
        if calls["n"] >= after:
            raise KeyboardInterrupt

    monkeypatch.setattr(time, "sleep", sleep)


@pytest.mark.parametrize("command", [["wait"], ["stream-logs"]])
def test_ctrl_c_leaves_the_job_running_and_says_how_to_cancel(
    fake_apis: FakeGoogleApis, monkeypatch: pytest.MonkeyPatch, command: list[str]
) -> None:
    point_cli_at(monkeypatch, fake_apis)
    seed_job(fake_apis, "j1", ["QUEUED", "RUNNING"])
    ctrl_c_on_sleep(monkeypatch, after=3)
    result = run_cli(["jobs", *command, "j1"])
    assert result.exit_code == 130
    assert "Job [j1] is RUNNING." in result.stderr
    assert "ERROR: interrupted; job j1 was not cancelled and keeps running." in result.stderr
    assert "`mlsubmit jobs cancel j1`" in result.stderr
    assert "Traceback" not in result.stderr
    assert fake_apis.requests_matching("POST", CANCEL) == []
    assert (fake_apis.job("j1") or {}).get("state") == "RUNNING"


def test_cancel_on_interrupt_cancels_through_the_api(
    fake_apis: FakeGoogleApis, monkeypatch: pytest.MonkeyPatch
) -> None:
    point_cli_at(monkeypatch, fake_apis)
    seed_job(fake_apis, "j1", ["RUNNING"])
    ctrl_c_on_sleep(monkeypatch, after=2)
    result = run_cli(["jobs", "wait", "j1", "--cancel-on-interrupt"])
    assert result.exit_code == 130
    assert "asked the service to cancel job j1 (--cancel-on-interrupt)" in result.stderr
    assert len(fake_apis.requests_matching("POST", CANCEL)) == 1
    assert (fake_apis.job("j1") or {}).get("state") == "CANCELLING"


def follow_in_subprocess(server: FakeGoogleApis, sig: signal.Signals, *extra: str) -> tuple[int, str, str]:
    """`python -m mlsubmit jobs wait j1 EXTRA` in a subprocess, sent ``sig`` once it is following the job."""
    env = {**os.environ, **cli_env(server), "MLSUBMIT_POLL_INTERVAL": "0.05"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    proc = subprocess.Popen(
        [sys.executable, "-m", "mlsubmit", "jobs", "wait", "j1", *extra],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    # Signal only once the job is being followed (three polls seen).
    return signal_when(
        proc,
        lambda: len(server.requests_matching("GET", r"/jobs/j1$")) >= 3,
        sig,
        what="mlsubmit never polled the job",
    )


def test_a_real_sigint_to_the_process(fake_apis: FakeGoogleApis) -> None:
    """The whole path with a real Ctrl-C signal."""
    seed_job(fake_apis, "j1", ["QUEUED", "RUNNING"])
    code, stdout, stderr = follow_in_subprocess(fake_apis, signal.SIGINT)
    assert code == 130, stderr
    assert "keeps running" in stderr and "mlsubmit jobs cancel j1" in stderr
    assert "Traceback" not in stderr
    assert stdout == ""
    assert fake_apis.requests_matching("POST", CANCEL) == []


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_sigterm_from_a_ci_system_cancels_with_cancel_on_interrupt(fake_apis: FakeGoogleApis) -> None:
    """CI systems stop builds with SIGTERM; --cancel-on-interrupt must still reach the API before exiting."""
    seed_job(fake_apis, "j1", ["QUEUED", "RUNNING"])
    code, _stdout, stderr = follow_in_subprocess(fake_apis, signal.SIGTERM, "--cancel-on-interrupt")
    assert code == 130, stderr
    assert "asked the service to cancel job j1" in stderr
    assert len(fake_apis.requests_matching("POST", CANCEL)) == 1
