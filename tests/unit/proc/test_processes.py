"""The keeper and the helpers of mlsubmit.proc.processes, with tiny `python -c` commands (Linux)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mlsubmit.proc.processes import (
    KEEPER_PATH,
    descendants,
    process_table,
    reaping,
    run_bound,
    run_streamed,
)

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="prctl and /proc are Linux only")

SETSID_HELPER = (
    "import subprocess, sys\n"
    "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'], start_new_session=True)\n"
    "import os\n"
    "with open(sys.argv[1] + '.part', 'w') as f: f.write(str(p.pid))\n"
    "os.replace(sys.argv[1] + '.part', sys.argv[1])\n"  # whole or absent: the test polls for it
)


def running(pid: int) -> bool:
    table = process_table() or {}
    return pid in table and table[pid][1]


def gone_within(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while running(pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    return not running(pid)


@pytest.mark.timeout(20)
@pytest.mark.parametrize(("code", "returncode"), [("pass", 0), ("raise SystemExit(7)", 7)])
def test_run_bound_returns_the_commands_status_and_output(code: str, returncode: int) -> None:
    proc = run_bound([sys.executable, "-c", f"print('out'); {code}"], capture_output=True)
    assert (proc.returncode, proc.stdout) == (returncode, b"out\n")
    assert proc.args == [sys.executable, "-c", f"print('out'); {code}"]


@pytest.mark.timeout(20)
def test_the_keeper_dies_of_the_commands_signal() -> None:
    proc = run_bound([sys.executable, "-c", "import os; os.kill(os.getpid(), 9)"], grace_period=0.5)
    assert proc.returncode == -signal.SIGKILL


@pytest.mark.timeout(20)
def test_what_the_command_leaves_in_its_own_session_ends_with_it(tmp_path: Path) -> None:
    pidfile = tmp_path / "helper.pid"
    proc = run_bound([sys.executable, "-c", SETSID_HELPER, str(pidfile)], grace_period=0.5)
    assert proc.returncode == 0
    assert not running(int(pidfile.read_text()))


@pytest.mark.timeout(20)
def test_the_keeper_ends_everything_when_its_parent_dies(tmp_path: Path) -> None:
    # A parent starts a keeper bound to itself and is then SIGKILLed: the keeper must end the command's tree.
    pidfile = tmp_path / "helper.pid"
    command = [sys.executable, "-c", SETSID_HELPER + "import time; time.sleep(60)", str(pidfile)]
    parent = subprocess.Popen(
        [sys.executable, "-c",
         "import os, subprocess, sys, time\n"
         "subprocess.Popen([sys.executable, '-I', '-S', sys.argv[1], str(os.getpid()), '0.5', '--', *sys.argv[2:]])\n"
         "time.sleep(60)", KEEPER_PATH, *command],
    )  # fmt: skip
    deadline = time.monotonic() + 10
    while not pidfile.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    table = process_table() or {}
    tree = descendants([parent.pid], table)
    helper = int(pidfile.read_text())
    parent.kill()
    parent.wait()
    assert gone_within(helper, 5)
    assert all(gone_within(pid, 5) for pid in tree)  # the keeper and the command too


@pytest.mark.timeout(20)
def test_a_keeper_whose_parent_is_already_gone_starts_nothing(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    proc = subprocess.run(
        [sys.executable, "-I", "-S", KEEPER_PATH, "1", "0.5", "--", sys.executable, "-c",
         f"open({str(marker)!r}, 'w')"],
    )  # fmt: skip
    assert proc.returncode == 137
    assert not marker.exists()


@pytest.mark.timeout(20)
def test_reaping_kills_what_was_started_in_the_block_and_leaves_older_children(tmp_path: Path) -> None:
    older = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        with reaping():
            newer = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        assert not running(newer.pid)  # killed and reaped (by the sweep, so Popen sees no status)
        assert older.poll() is None
    finally:
        older.kill()
        older.wait()


def test_overlapping_reaping_blocks_leave_the_other_runs_processes_alone(tmp_path: Path) -> None:
    """Two runs side by side (as `local tune` runs trials): the first to finish must not kill or reap the other's."""
    import threading

    done = tmp_path / "second-finished"
    second_started = threading.Event()
    first_done = threading.Event()
    outcome: dict[str, int | None] = {}

    def second_run() -> None:
        with reaping():
            code = f"import pathlib, time; time.sleep(0.6); pathlib.Path({str(done)!r}).write_text('ok')"
            proc = subprocess.Popen([sys.executable, "-c", code])
            second_started.set()
            first_done.wait(10)
            outcome["second"] = proc.wait(10)

    thread = threading.Thread(target=second_run)
    with reaping():  # the first run begins, then the second starts its process, then the first ends
        thread.start()
        assert second_started.wait(10)
        subprocess.run([sys.executable, "-c", "pass"], check=True)
    first_done.set()
    thread.join(15)
    assert outcome["second"] == 0  # not killed (-9) nor reaped behind the Popen's back
    assert done.read_text() == "ok"  # it ran to its end


def test_run_streamed_passes_each_line_as_it_comes_bounded_and_returns_the_status() -> None:
    code = (
        "import sys\n"
        "print('one', flush=True)\n"
        "sys.stderr.write('two\\n'); sys.stderr.flush()\n"
        "print('x' * 50 + 'y' * 50)\n"
        "print('after', end='')\n"
        "sys.exit(4)\n"
    )
    lines: list[str] = []
    status = run_streamed([sys.executable, "-c", code], lines.append, max_line=60)
    assert status == 4
    assert lines == ["one", "two", "x" * 50 + "y" * 10 + " [...]", "after"]
