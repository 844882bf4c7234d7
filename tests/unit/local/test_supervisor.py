"""Process supervision of local replicas (mlsubmit.local.supervisor), with tiny `python -c` replicas."""

from __future__ import annotations

import io
import os
import re
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from mlsubmit.console import Console, using
from mlsubmit.errors import LocalRunError
from mlsubmit.local.supervisor import (
    Launch,
    PrefixedOutput,
    ReplicaFailedError,
    RunInterruptedError,
    RunTimeoutError,
    describe_exit,
    supervise,
)
from tests.fakes.children import pid_alive


class Captured(io.BytesIO):
    """A BytesIO that stays readable after the supervisor is done with it."""

    def lines(self) -> list[str]:
        return self.getvalue().decode().splitlines()


def launch(name: str, code: str, tmp_path: Path, primary: bool = False) -> Launch:
    return Launch(
        name=name,
        primary=primary,
        argv=[sys.executable, "-c", code],
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        cwd=str(tmp_path),
    )


def chief_after(path: Path, then: str, tmp_path: Path) -> Launch:
    """The primary: waits until ``path`` exists (the other replica is up), then runs ``then``."""
    wait = f"import os, time\nwhile not os.path.exists({str(path)!r}): time.sleep(0.01)\n"
    return launch("chief", wait + then, tmp_path, primary=True)


def run(launches: Sequence[Launch], **kwargs: float) -> tuple[int, Captured, Captured]:
    out, err = Captured(), Captured()
    kwargs.setdefault("grace_period", 0.5)
    code = supervise(launches, PrefixedOutput(out, err), **kwargs)
    return code, out, err


# whole or absent (os.replace): the tests poll for the file, then read it
WRITE_PID = "import os; open({path!r} + '.part', 'w').write(str(os.getpid())); os.replace({path!r} + '.part', {path!r})\n"


def test_primary_exit_status_is_returned_and_others_are_stopped(tmp_path: Path) -> None:
    pidfile = tmp_path / "worker.pid"
    worker = launch("worker-0", WRITE_PID.format(path=str(pidfile)) + "import time; time.sleep(60)", tmp_path)
    chief = chief_after(pidfile, "print('bye')\nraise SystemExit(4)", tmp_path)
    code, out, _ = run([worker, chief])
    assert code == 4
    assert out.lines() == ["[chief] bye"]
    assert not pid_alive(int(pidfile.read_text()))


def test_output_is_prefixed_per_line_and_never_mixed(tmp_path: Path) -> None:
    # Two replicas write long lines in small pieces at the same time; every relayed line must be whole.
    body = (
        "import sys\n"
        "for i in range(200):\n"
        "    for ch in '{ch}' * 300:\n"
        "        sys.stdout.write(ch)\n"
        "    sys.stdout.write('\\n'); sys.stdout.flush()\n"
        "    print('err', i, file=sys.stderr)\n"
        "sys.stdout.write('tail-without-newline')\n"
    )
    worker = launch("worker-0", body.format(ch="w"), tmp_path)
    chief = launch("chief", body.format(ch="c") + "import time; time.sleep(0.3)", tmp_path, primary=True)
    code, out, err = run([worker, chief])
    assert code == 0
    for line in out.lines():
        assert re.fullmatch(
            r"\[worker-0\] (w{300}|tail-without-newline)|\[chief\] (c{300}|tail-without-newline)", line
        )
    assert out.lines().count("[worker-0] " + "w" * 300) == 200
    assert out.lines().count("[chief] " + "c" * 300) == 200
    assert err.lines().count("[chief] err 199") == 1
    assert all(line.startswith(("[chief] err ", "[worker-0] err ")) for line in err.lines())


def test_failed_replica_stops_the_run_and_is_named(tmp_path: Path) -> None:
    pidfile = tmp_path / "chief.pid"
    worker = launch("worker-1", "import time; time.sleep(0.2); raise SystemExit(3)", tmp_path)
    chief = launch(
        "chief", WRITE_PID.format(path=str(pidfile)) + "import time; time.sleep(60)", tmp_path, primary=True
    )
    started = time.monotonic()
    with pytest.raises(ReplicaFailedError, match=r"^\[worker-1\] exited with status 3; stopped all replicas"):
        run([worker, chief])
    assert time.monotonic() - started < 10  # nowhere near the chief's 60 s
    assert not pid_alive(int(pidfile.read_text()))


def test_replica_ignoring_term_is_killed_after_the_grace_period(tmp_path: Path) -> None:
    pidfile = tmp_path / "ps.pid"
    ps = launch(
        "ps-0",
        "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        + WRITE_PID.format(path=str(pidfile))
        + "time.sleep(60)",
        tmp_path,
    )
    chief = launch(
        "chief",
        f"import os, time\nwhile not os.path.exists({str(pidfile)!r}): time.sleep(0.01)",
        tmp_path,
        primary=True,
    )
    code, _, _ = run([ps, chief], grace_period=0.3)
    assert code == 0
    assert not pid_alive(int(pidfile.read_text()))


def test_grandchildren_in_the_replicas_group_are_stopped(tmp_path: Path) -> None:
    pidfile = tmp_path / "grandchild.pid"
    chief = launch(
        "chief",
        "import subprocess, sys\n"
        "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        f"open({str(pidfile)!r}, 'w').write(str(p.pid))\n",
        tmp_path,
        primary=True,
    )
    assert run([chief])[0] == 0
    assert not pid_alive(int(pidfile.read_text()))


def test_maximum_running_time(tmp_path: Path) -> None:
    chief = launch("chief", "import time; time.sleep(60)", tmp_path, primary=True)
    with pytest.raises(RunTimeoutError, match=r"maximum running time of 0\.5s"):
        run([chief], max_running_time=0.5)


@pytest.mark.timeout(20)
def test_the_console_clock_times_the_run(tmp_path: Path) -> None:
    """The run is timed by the command's console (a test's fake clock: each look is ten minutes later)."""
    ticks = iter(range(0, 10**9, 600))
    chief = launch("chief", "import time; time.sleep(60)", tmp_path, primary=True)
    with using(Console(clock=lambda: float(next(ticks)))), pytest.raises(RunTimeoutError, match="of 3600s"):
        run([chief], max_running_time=3600)


def test_worker_finishing_first_is_fine(tmp_path: Path) -> None:
    worker = launch("worker-0", "pass", tmp_path)
    chief = launch("chief", "import time; time.sleep(0.5)", tmp_path, primary=True)
    assert run([worker, chief])[0] == 0


def test_unstartable_replica_is_a_local_run_error(tmp_path: Path) -> None:
    bad = Launch(name="chief", primary=True, argv=[str(tmp_path / "no-python")], env={}, cwd=str(tmp_path))
    with pytest.raises(LocalRunError, match=r"could not start \[chief\]"):
        run([bad])


def test_sigint_to_the_supervisor_stops_everything(tmp_path: Path) -> None:
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("signal handlers need the main thread")
    pidfile = tmp_path / "chief.pid"
    chief = launch(
        "chief", WRITE_PID.format(path=str(pidfile)) + "import time; time.sleep(60)", tmp_path, primary=True
    )

    def interrupt_when_started() -> None:
        while not pidfile.exists():
            time.sleep(0.01)
        os.kill(os.getpid(), 2)

    threading.Thread(target=interrupt_when_started, daemon=True).start()
    with pytest.raises(RunInterruptedError, match=r"interrupted \(SIGINT\)") as info:
        supervise([chief], PrefixedOutput(Captured(), Captured()), grace_period=0.5)
    assert info.value.exit_status == 130
    assert not pid_alive(int(pidfile.read_text()))


def test_module_argv_runs_like_python_dash_m(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "main.py").write_text(
        "import sys\nprint(__name__, __spec__.name, sys.argv[1:], sys.path[0], sorted(k for k in globals() if not k.startswith('__')))\n"
    )
    argv = [sys.executable, "-m", "pkg.main", "--a", "1"]
    code, out, _ = run(
        [Launch(name="chief", primary=True, argv=argv, env=dict(os.environ), cwd=str(tmp_path))]
    )
    assert code == 0
    assert out.lines() == [f"[chief] __main__ pkg.main ['--a', '1'] {tmp_path} ['sys']"]


@pytest.mark.parametrize(
    ("returncode", "text"),
    [(0, "exited with status 0"), (3, "exited with status 3"), (-9, "was killed by SIGKILL")],
)
def test_exit_descriptions(returncode: int, text: str) -> None:
    assert describe_exit(returncode) == text


def test_a_primary_killed_by_a_signal_gives_a_shells_status(tmp_path: Path) -> None:
    code, _, _ = run([launch("chief", "import os; os.kill(os.getpid(), 9)", tmp_path, primary=True)])
    assert code == 137


# A replica run by buildah: stopped, buildah reports its process's end as an error line (issue 27, smaller items).
BUILDAH_LIKE = """\
import os, pathlib, signal, sys, time
def stopped(*_):
    print("Error: exit status 143", file=sys.stderr, flush=True)
    os._exit(1)
signal.signal(signal.SIGTERM, stopped)
pathlib.Path({path!r}).write_text("up")
time.sleep(60)
"""


def test_an_engines_exit_line_for_a_replica_the_run_stopped_is_not_an_error(tmp_path: Path) -> None:
    ready = tmp_path / "worker.up"
    worker = launch("worker-0", BUILDAH_LIKE.format(path=str(ready)), tmp_path)
    chief = chief_after(ready, "print('done')", tmp_path)
    code, out, err = run([worker, chief])
    assert code == 0 and out.lines() == ["[chief] done"]
    assert err.lines() == ["[worker-0] stopped as the run ended (the engine said: Error: exit status 143)"]
    output = PrefixedOutput(Captured(), Captured())
    output.write_line("worker-0", b"Error: exit status 1\n", to_stderr=True)  # not stopped: as it came
    assert output._streams[1].getvalue() == b"[worker-0] Error: exit status 1\n"  # type: ignore[attr-defined]


class SlowStream(Captured):
    """A terminal that takes a while per write (a starved machine, a slow pipe): the relay lags the replica."""

    def flush(self) -> None:
        time.sleep(0.01)


def test_output_still_arriving_after_the_replica_ends_is_relayed_whole(tmp_path: Path) -> None:
    # 400 lines at >= 10 ms each take >= 4 s to relay, after the replica has long exited; a relay that keeps
    # relaying is waited for (READER_JOIN_TIMEOUT is a quiet time, not a total).
    code = "for i in range(400): print('line', i)"
    out, err = SlowStream(), Captured()
    status = supervise(
        [launch("chief", code, tmp_path, primary=True)], PrefixedOutput(out, err), grace_period=0.5
    )
    assert status == 0
    assert out.lines()[-1] == "[chief] line 399" and len(out.lines()) == 400


def test_a_pipe_a_silent_daemon_holds_open_is_given_up_quickly(tmp_path: Path) -> None:
    # The replica daemonises a grandchild that keeps its stdout and says nothing: the run ends about
    # READER_JOIN_TIMEOUT after the replica, not when the daemon does.
    code = (
        "import os, sys, time\n"
        "print('bye', flush=True)\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    time.sleep(20)\n"
        "    os._exit(0)\n"
    )
    started = time.monotonic()
    status, out, _ = run([launch("chief", code, tmp_path, primary=True)])
    assert status == 0 and out.lines() == ["[chief] bye"]
    assert time.monotonic() - started < 10
