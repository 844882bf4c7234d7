"""Signals and processes (docs/security.md): however mlsubmit ends, no process it started
and no temporary folder outlives it, and SIGTERM acts as Ctrl-C (exit 130).

Every replica of these runs starts a plain child, a helper in a session of its own (``setsid``, like a
TensorBoard) and a daemon (double fork: its parent exits, so it is orphaned at once); all of them record their
pids. mlsubmit runs as a real subprocess with a private TMPDIR, and each case checks pids and that TMPDIR.
"""

from __future__ import annotations

import http.server
import os
import signal
import socketserver
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="pid checks read /proc (Linux)")

REPO = Path(__file__).resolve().parents[2]

# Each replica starts its three descendants, writes STATE/NAME.pid, waits until all replicas have, then does
# what --exit says or sleeps. A descendant's pid goes to STATE/NAME-KIND.kid.
TASK = """\
import json, os, subprocess, sys, time
state, replicas = sys.argv[1], int(sys.argv[2])
exits = dict(arg.split("=") for arg in sys.argv[3:])
task = json.loads(os.environ.get("TF_CONFIG", '{"task": {"type": "chief", "index": 0}}'))["task"]
name = task["type"] if task["type"] in ("chief", "master") else f"{task['type']}-{task['index']}"

def note(file, text):
    with open(os.path.join(state, file + ".tmp"), "w") as f:
        f.write(text)
    os.replace(os.path.join(state, file + ".tmp"), os.path.join(state, file))

sleeper = "import os, sys, time; open(sys.argv[1] + '.tmp', 'w').write(str(os.getpid())); os.replace(sys.argv[1] + '.tmp', sys.argv[1]); time.sleep(120)"
subprocess.Popen([sys.executable, "-c", sleeper, os.path.join(state, name + "-child.kid")])
subprocess.Popen([sys.executable, "-c", sleeper, os.path.join(state, name + "-setsid.kid")], start_new_session=True)
if os.fork() == 0:  # the classic daemon: new session, fork again, the middle process exits
    os.setsid()
    if os.fork() == 0:
        os.execv(sys.executable, [sys.executable, "-c", sleeper, os.path.join(state, name + "-daemon.kid")])
    os._exit(0)
while len([f for f in os.listdir(state) if f.endswith(".kid")]) < 3 * replicas:
    time.sleep(0.01)
note(name + ".pid", str(os.getpid()))
while len([f for f in os.listdir(state) if f.endswith(".pid")]) < replicas:
    time.sleep(0.01)
print(name, "running", flush=True)
if name in exits:
    sys.exit(int(exits[name]))
time.sleep(120)
"""

BACKEND_SETUP = """\
import os, subprocess, sys, time
state = {state!r}
sleeper = "import os, sys, time; open(sys.argv[1] + '.tmp', 'w').write(str(os.getpid())); os.replace(sys.argv[1] + '.tmp', sys.argv[1]); time.sleep(120)"
subprocess.Popen([sys.executable, "-c", sleeper, os.path.join(state, "backend-setsid.kid")], start_new_session=True)
with open(os.path.join(state, "backend.tmp"), "w") as f:
    f.write(str(os.getpid()))
os.replace(os.path.join(state, "backend.tmp"), os.path.join(state, "backend.pid"))
time.sleep(120)
"""


def alive(pid: int) -> bool:
    """Running, as opposed to gone or a zombie nobody reaped (PID 1 in a container may never reap)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read()
    except FileNotFoundError:
        return False
    return stat[stat.rfind(b")") + 2 :].split()[0] not in (b"Z", b"X")


class Run:
    """A trainer package, a state dir, a private TMPDIR; at the end nothing may be left (and nothing is)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.state = root / "state"
        self.tmp = root / "tmp"
        self.package = root / "src" / "trainer"
        for directory in (self.state, self.tmp, self.package):
            directory.mkdir(parents=True)
        (self.package / "__init__.py").write_text("")
        (self.package / "task.py").write_text(TASK)
        self.proc: subprocess.Popen[str] | None = None

    def pids(self) -> list[int]:
        return [int(p.read_text()) for p in sorted([*self.state.glob("*.pid"), *self.state.glob("*.kid")])]

    def start(self, *args: str) -> subprocess.Popen[str]:
        env = {**os.environ, "PYTHONPATH": str(REPO), "TMPDIR": str(self.tmp)}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "mlsubmit", *args],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=self.root,
        )
        return self.proc

    def train(self, *flags: str, replicas: int, exits: tuple[str, ...] = ()) -> subprocess.Popen[str]:
        return self.start(
            "local", "train", "--package-path", str(self.package), "--module-name", "trainer.task",
            "--python", sys.executable, "--grace-period", "0.5", *flags,
            "--", str(self.state), str(replicas), *exits,
        )  # fmt: skip

    def wait_for(self, pattern: str, count: int) -> list[int]:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if len(list(self.state.glob(pattern))) >= count:
                return self.pids()
            assert self.proc is not None and self.proc.poll() is None, self.proc.communicate()
            time.sleep(0.02)
        raise AssertionError(f"{count} × {pattern} did not appear")

    def assert_nothing_left(self, pids: list[int], seconds: float = 5.0) -> None:
        deadline = time.monotonic() + seconds
        while [pid for pid in pids if alive(pid)] and time.monotonic() < deadline:
            time.sleep(0.02)
        assert not [pid for pid in pids if alive(pid)], "processes of the run outlived it"
        while list(self.tmp.iterdir()) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert not list(self.tmp.iterdir()), f"left in TMPDIR: {list(self.tmp.iterdir())}"


@pytest.fixture
def run(tmp_path: Path) -> Iterator[Run]:
    the_run = Run(tmp_path)
    yield the_run
    if the_run.proc is not None and the_run.proc.poll() is None:
        the_run.proc.kill()
        the_run.proc.communicate()
    for pid in the_run.pids():  # never leave a failing test's processes on the machine
        if alive(pid):
            os.kill(pid, signal.SIGKILL)


CLUSTER = (
    "--distributed",
    "--worker-count",
    "1",
    "--parameter-server-count",
    "1",
)  # 3 replicas, 9 descendants


@pytest.mark.timeout(30)
def test_a_normal_end_ends_every_helper_even_in_its_own_session(run: Run) -> None:
    proc = run.train(*CLUSTER, replicas=3, exits=("chief=0",))
    out, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
    assert "[chief] chief running" in out.splitlines()
    assert "Traceback" not in err
    assert len(run.pids()) == 12
    run.assert_nothing_left(run.pids(), seconds=0)  # already gone when mlsubmit returns


@pytest.mark.timeout(30)
def test_a_single_process_run_ends_its_daemon_too(run: Run) -> None:
    proc = run.train(replicas=1, exits=("chief=4",))
    _, err = proc.communicate(timeout=20)
    assert proc.returncode == 4, err
    run.assert_nothing_left(run.pids(), seconds=0)


@pytest.mark.timeout(30)
def test_a_failed_replica_ends_the_run_and_everything_in_it(run: Run) -> None:
    proc = run.train(*CLUSTER, replicas=3, exits=("worker-0=3",))
    _, err = proc.communicate(timeout=20)
    assert proc.returncode == 1
    assert "ERROR: [worker-0] exited with status 3; stopped all replicas." in err
    assert "Traceback" not in err
    run.assert_nothing_left(run.pids(), seconds=0)


@pytest.mark.timeout(30)
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_an_interrupt_exits_130_and_ends_everything(run: Run, signum: signal.Signals) -> None:
    proc = run.train(*CLUSTER, replicas=3)
    pids = run.wait_for("*.pid", 3)
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=20)
    assert proc.returncode == 130
    assert f"ERROR: interrupted ({signum.name}); stopped all replicas." in err
    assert "Traceback" not in err
    run.assert_nothing_left(pids, seconds=0)


@pytest.mark.timeout(30)
def test_kill_9_of_mlsubmit_ends_every_process_of_the_run(run: Run) -> None:
    proc = run.train(*CLUSTER, replicas=3)
    pids = run.wait_for("*.pid", 3)
    assert len(pids) == 12
    proc.kill()  # SIGKILL: mlsubmit cannot clean up; its keepers, bound by the kernel, must
    proc.communicate(timeout=10)
    run.assert_nothing_left(pids, seconds=5)


@pytest.mark.timeout(30)
def test_kill_9_while_a_replica_ignores_term_still_ends_it(run: Run) -> None:
    (run.package / "stubborn.py").write_text(
        "import signal, sys\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "sys.argv[0] = 'trainer.task'\nimport runpy\nrunpy.run_module('trainer.task', run_name='__main__')\n"
    )
    proc = run.start(
        "local", "train", "--package-path", str(run.package), "--module-name", "trainer.stubborn",
        "--python", sys.executable, "--grace-period", "0.5", "--", str(run.state), "1",
    )  # fmt: skip
    pids = run.wait_for("*.pid", 1)
    proc.kill()
    proc.communicate(timeout=10)
    run.assert_nothing_left(pids, seconds=5)  # TERM ignored: KILL after the 0.5 s grace period


# --- SIGTERM from a CI runner during build and upload ------------------------------------------------------


@pytest.mark.timeout(30)
def test_sigterm_during_the_build_ends_the_backend_and_removes_temp_folders(run: Run) -> None:
    (run.package.parent / "setup.py").write_text(BACKEND_SETUP.format(state=str(run.state)))
    proc = run.start(
        "training", "job_1", "--package-path", str(run.package), "--module-name", "trainer.task",
        "--region", "us-central1", "--staging-bucket", "gs://bucket", "--runtime-version", "2.11", "--dry-run",
    )  # fmt: skip
    pids = run.wait_for("backend*.?id", 2)
    assert list(run.tmp.iterdir())  # the build's temporary folders exist now
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=20)
    assert proc.returncode == 130, err
    assert err.strip().splitlines() == ["ERROR: interrupted."]
    run.assert_nothing_left(pids, seconds=5)
    assert not list(run.package.parent.glob("*.egg-info"))


@pytest.mark.timeout(30)
def test_kill_9_during_the_build_ends_the_backend_and_removes_temp_folders(run: Run) -> None:
    (run.package.parent / "setup.py").write_text(BACKEND_SETUP.format(state=str(run.state)))
    proc = run.start(
        "training", "job_1", "--package-path", str(run.package), "--module-name", "trainer.task",
        "--region", "us-central1", "--staging-bucket", "gs://bucket", "--runtime-version", "2.11", "--dry-run",
    )  # fmt: skip
    pids = run.wait_for("backend*.?id", 2)
    assert len(list(run.tmp.iterdir())) == 2  # the plan's folder and the backend's
    proc.kill()
    proc.communicate(timeout=10)
    run.assert_nothing_left(pids, seconds=5)


class _Silent(http.server.BaseHTTPRequestHandler):
    """Accepts a request and never answers (a stalled upload)."""

    def do_POST(self) -> None:
        self.server.got_request.set()  # type: ignore[attr-defined]
        time.sleep(30)

    do_GET = do_PUT = do_POST

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def silent_server() -> Iterator[socketserver.ThreadingTCPServer]:
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _Silent)
    server.daemon_threads = True
    server.got_request = threading.Event()  # type: ignore[attr-defined]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.mark.timeout(30)
def test_sigterm_during_the_upload_exits_130_and_removes_temp_folders(
    run: Run, silent_server: socketserver.ThreadingTCPServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    host = f"127.0.0.1:{silent_server.server_address[1]}"
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", f"http://{host}")
    monkeypatch.setenv("CLOUDSDK_AUTH_ACCESS_TOKEN", "token-for-the-loopback-fake")
    monkeypatch.setenv("CLOUDSDK_CORE_PROJECT", "proj")
    monkeypatch.setenv("CLOUDSDK_API_ENDPOINT_OVERRIDES_ML", f"http://{host}/")
    proc = run.start(
        "training", "job_1", "--package-path", str(run.package), "--module-name", "trainer.task",
        "--region", "us-central1", "--staging-bucket", "gs://bucket", "--runtime-version", "2.11",
    )  # fmt: skip
    assert silent_server.got_request.wait(20), proc.communicate()  # type: ignore[attr-defined]
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=20)
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    run.assert_nothing_left([], seconds=0)


# --- local tune --from-package: its working folder and the wheel's, under kill -9 (issue 18) ---------------

WHEEL_SETUP = """\
import os, sys, time
from setuptools import setup
if "bdist_wheel" in sys.argv:  # the wheel for --from-package: hold still so the test can kill mlsubmit here
    with open(os.path.join({state!r}, "backend.tmp"), "w") as f:
        f.write(str(os.getpid()))
    os.replace(os.path.join({state!r}, "backend.tmp"), os.path.join({state!r}, "backend.pid"))
    time.sleep(120)
setup(name="trainer", version="0.1", packages=["trainer"])
"""

TUNE_CONFIG = """\
trainingInput:
  hyperparameters:
    goal: MAXIMIZE
    hyperparameterMetricTag: accuracy
    maxTrials: 1
    params:
    - {parameterName: units, type: DISCRETE, discreteValues: [16]}
"""


@pytest.mark.timeout(60)
def test_kill_9_of_local_tune_from_package_while_the_wheel_builds_leaves_no_folder(run: Run) -> None:
    # The tune's working folder and the wheel's build folder exist at the kill; the janitor must remove both.
    (run.package.parent / "setup.py").write_text(WHEEL_SETUP.format(state=str(run.state)))
    config = run.root / "tune.yaml"
    config.write_text(TUNE_CONFIG)
    proc = run.start(
        "local", "tune", "--package-path", str(run.package), "--module-name", "trainer.task",
        "--python", sys.executable, "--from-package", "--config", str(config), "--job-dir", str(run.root / "out"),
    )  # fmt: skip
    pids = run.wait_for("backend.pid", 1)
    names = sorted(p.name.rsplit("-", 1)[0] for p in run.tmp.iterdir())
    assert "mlsubmit-run" in names and "mlsubmit-wheel" in names, names
    proc.kill()
    proc.communicate(timeout=10)
    run.assert_nothing_left(pids, seconds=5)
