"""Supervision of a local cluster through the real CLI, without TensorFlow: a failing
worker ends the run within 2 s, Ctrl-C / TERM end it, a replica ignoring TERM is killed, the maximum running time
holds, and in every case no replica process survives (checked by pid)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fakes.children import kill_survivors, pid_alive

REPO = Path(__file__).resolve().parents[2]

# Each replica writes STATE/NAME.pid, then waits until every replica has; what it does next comes from its args.
LIFE_TASK = """\
import argparse, json, os, signal, subprocess, sys, time
parser = argparse.ArgumentParser()
parser.add_argument("--state", required=True)
parser.add_argument("--replicas", type=int, required=True)
parser.add_argument("--exit", action="append", default=[], help="NAME=CODE: exit with CODE once all are up")
parser.add_argument("--ignore-term", action="append", default=[])
parser.add_argument("--grandchild", action="append", default=[], help="NAME: start a sleeping child first")
args = parser.parse_args()
task = json.loads(os.environ["TF_CONFIG"])["task"]
kind = task.get("type", "chief")  # gcloud's single process: an empty task
name = kind if kind in ("chief", "master") else f"{kind}-{task['index']}"

def note(suffix, text):
    path = os.path.join(args.state, f"{name}.{suffix}")
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.replace(path + ".tmp", path)

if name in args.ignore_term:
    signal.signal(signal.SIGTERM, lambda *_: note("got-term", str(time.time())))
if name in args.grandchild:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    note("child", str(child.pid))
note("pid", str(os.getpid()))
while len([f for f in os.listdir(args.state) if f.endswith(".pid")]) < args.replicas:
    time.sleep(0.01)
print(name, "running", flush=True)
codes = dict(item.split("=") for item in args.exit)
if name in codes:
    note("exit", str(time.time()))
    sys.exit(int(codes[name]))
deadline = time.time() + 120
while time.time() < deadline:
    time.sleep(0.05)
"""


@pytest.fixture
def life(tmp_path: Path) -> Iterator[Path]:
    """A trainer package and an empty state dir; any replica still running at the end fails the test (and dies)."""
    trainer = tmp_path / "src" / "trainer"
    trainer.mkdir(parents=True)
    (trainer / "__init__.py").write_text("")
    (trainer / "task.py").write_text(LIFE_TASK)
    (tmp_path / "state").mkdir()
    yield tmp_path
    survivors = kill_survivors(replica_pids(tmp_path))
    assert not survivors, f"replica processes left behind: {survivors}"


def replica_pids(tmp_path: Path) -> list[int]:
    state = tmp_path / "state"
    return [int(p.read_text()) for p in sorted(state.glob("*.pid")) + sorted(state.glob("*.child"))]


def start(tmp_path: Path, *cli_args: str, app_args: list[str], replicas: int) -> subprocess.Popen[str]:
    cmd = [
        sys.executable, "-m", "mlsubmit", "local", "train",
        "--package-path", str(tmp_path / "src" / "trainer"), "--module-name", "trainer.task", "--python", sys.executable,
        *cli_args, "--", "--state", str(tmp_path / "state"), "--replicas", str(replicas), *app_args,
    ]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_for_pids(tmp_path: Path, count: int, proc: subprocess.Popen[str]) -> list[int]:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        pids = list((tmp_path / "state").glob("*.pid"))
        if len(pids) == count:
            return replica_pids(tmp_path)
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.02)
    raise AssertionError("replicas did not start")


def test_worker_exiting_3_ends_the_run_within_2_seconds(life: Path) -> None:
    proc = start(
        life, "--distributed", "--worker-count", "2", "--parameter-server-count", "1",
        app_args=["--exit", "worker-1=3"], replicas=4,
    )  # fmt: skip
    pids = wait_for_pids(life, 4, proc)
    _, stderr = proc.communicate(timeout=30)
    ended = time.time()
    exited = float((life / "state" / "worker-1.exit").read_text())
    assert proc.returncode == 1
    assert "ERROR: [worker-1] exited with status 3; stopped all replicas." in stderr
    assert ended - exited < 2.0, f"took {ended - exited:.2f}s after the worker's exit"
    assert not [pid for pid in pids if pid_alive(pid)]


def test_ctrl_c_stops_every_replica(life: Path) -> None:
    proc = start(
        life, "--distributed", "--worker-count", "1", "--parameter-server-count", "1", "--evaluator-count", "1",
        app_args=[], replicas=4,
    )  # fmt: skip
    pids = wait_for_pids(life, 4, proc)
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 130
    assert "ERROR: interrupted (SIGINT); stopped all replicas." in stderr
    assert not [pid for pid in pids if pid_alive(pid)]


def test_sigterm_stops_every_replica(life: Path) -> None:
    proc = start(
        life, "--distributed", "--worker-count", "1", "--parameter-server-count", "0", app_args=[], replicas=2
    )
    pids = wait_for_pids(life, 2, proc)
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 130
    assert "interrupted (SIGTERM)" in stderr
    assert not [pid for pid in pids if pid_alive(pid)]


def test_replica_ignoring_term_is_killed(life: Path) -> None:
    # The chief finishes; ps-0 shrugs off TERM and must be KILLed after the grace period; its grandchild too.
    proc = start(
        life, "--distributed", "--worker-count", "1", "--parameter-server-count", "1", "--grace-period", "0.5",
        app_args=["--exit", "chief=0", "--ignore-term", "ps-0", "--grandchild", "ps-0"], replicas=3,
    )  # fmt: skip
    wait_for_pids(life, 3, proc)
    stdout, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 0, stderr
    assert (life / "state" / "ps-0.got-term").exists()  # TERM first...
    pids = replica_pids(life)
    assert len(pids) == 4  # 3 replicas and ps-0's child
    assert not [pid for pid in pids if pid_alive(pid)]  # ...then KILL
    assert "[chief] chief running" in stdout.splitlines()


def test_maximum_running_time_from_the_config(life: Path) -> None:
    config = life / "job.yaml"
    config.write_text("trainingInput:\n  scheduling:\n    maxRunningTime: 1.5s\n")
    proc = start(life, "--config", str(config), app_args=[], replicas=1)
    pids = wait_for_pids(life, 1, proc)
    _, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 1
    assert "ERROR: the run exceeded its maximum running time of 1.5s" in stderr
    assert not [pid for pid in pids if pid_alive(pid)]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux only")
def test_replicas_die_with_a_killed_supervisor(life: Path) -> None:
    proc = start(
        life, "--distributed", "--worker-count", "1", "--parameter-server-count", "1", app_args=[], replicas=3
    )
    pids = wait_for_pids(life, 3, proc)
    proc.kill()  # SIGKILL: no chance to clean up, the kernel must do it
    proc.communicate(timeout=30)
    deadline = time.monotonic() + 10
    while [pid for pid in pids if pid_alive(pid)] and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [pid for pid in pids if pid_alive(pid)]


def test_seven_replicas_start_and_stop_cleanly(life: Path) -> None:
    proc = start(
        life, "--distributed", "--worker-count", "4", "--parameter-server-count", "2",
        app_args=["--exit", "chief=0"], replicas=7,
    )  # fmt: skip
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 0, stderr
    assert "[chief] chief running" in stdout.splitlines()
    # The others may be stopped before they print, but whatever they printed is whole and correctly labelled.
    for line in stdout.splitlines():
        assert re.fullmatch(r"\[(chief|worker-[0-3]|ps-[01])\] \1 running", line), line
    pids = replica_pids(life)
    assert len(pids) == 7 and not [pid for pid in pids if pid_alive(pid)]
