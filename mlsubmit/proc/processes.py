"""Child processes and temporary folders that never outlive mlsubmit (docs/security.md).

Everything mlsubmit starts (the replicas of ``local train``, a project's build backend, pip) runs in a session of
its own under a *keeper* (:mod:`mlsubmit.proc.keeper`, see there for how): on Linux the kernel tells the keeper when
mlsubmit dies, however it dies, and everything the command starts, even in a session of its own, stays below
the keeper, which ends it all when the command ends or mlsubmit is gone. While children run, mlsubmit itself is
a subreaper too (:func:`reaping`) and at the end kills every process it started that is still below it: the
keepers and anything that escaped them. Without /proc and prctl (not Linux) the keeper is skipped and process
groups are all there is.

Temporary folders come from :func:`temporary_directory`: removed on the way out as usual, and also by a
*janitor* (``keeper.py --janitor``) that holds their list and removes what is left of them when its stdin
reaches EOF, which happens when mlsubmit ends in any way, ``kill -9`` included (on every POSIX system).
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import IO, Any

from mlsubmit.proc import keeper
from mlsubmit.proc.keeper import KILL_ROUNDS, POLL, descendants, process_table, signal_all

KEEPER_PATH = os.path.abspath(keeper.__file__)


def _reap(pids: set[int]) -> None:
    """waitpid(WNOHANG) each of our own children in ``pids`` (never waitpid(-1): others' children are theirs)."""
    for pid in pids:
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)


def keeper_supported() -> bool:
    """Whether children can be bound to us: Linux with /proc, and an interpreter to run the keeper."""
    return (
        sys.platform.startswith("linux")
        and bool(sys.executable)
        and os.path.isdir("/proc/self")
        and os.path.isfile(KEEPER_PATH)  # not inside a zip archive
    )


def bound_argv(argv: Sequence[str], grace_period: float) -> list[str]:
    """``argv`` run under a keeper bound to this process's life (Linux); ``argv`` itself elsewhere."""
    if not keeper_supported():
        return list(argv)
    return [sys.executable, "-I", "-S", KEEPER_PATH, str(os.getpid()), repr(float(grace_period)), "--", *argv]


def kill_started_since(before: set[int]) -> None:
    """SIGKILL every process below us that is not below one of the children in ``before``, until none is left.

    We are a subreaper meanwhile (:func:`reaping`), so what a killed process leaves behind is re-parented to
    us and seen in the next round; our own zombies are reaped so they stop counting.
    """
    me = os.getpid()
    for _ in range(KILL_ROUNDS):
        table = process_table()
        if table is None:
            return
        janitor = getattr(_janitor, "pid", None)
        ours = {
            pid for pid, (ppid, _) in table.items() if ppid == me and pid not in before and pid != janitor
        }
        _reap(ours)
        targets = {pid for pid in ours | descendants(ours, table) if table[pid][1]}
        if not targets:
            return
        signal_all(targets, signal.SIGKILL)
        time.sleep(POLL / 4)


def _children_of(pid: int) -> set[int]:
    table = process_table() or {}
    return {child for child, (ppid, _) in table.items() if ppid == pid}


_reaping_lock = threading.Lock()
_reaping_depth = 0
_reaping_before: set[int] = set()
_reaping_was = 0


@contextlib.contextmanager
def reaping() -> Iterator[None]:
    """Within the block this process is a child subreaper; when the outermost block ends, whatever was started
    in it is killed.

    Processes that were already our children when the outermost block began are left alone. Blocks nest and may
    overlap across threads (``local tune`` runs trials side by side): an inner block's end must not kill, or
    reap, the processes of a run that is still going, so the sweep waits for the last block to end (each run's
    keeper has already ended its own tree by then).
    """
    global _reaping_depth, _reaping_before, _reaping_was
    if not keeper_supported():
        yield
        return
    import ctypes

    with _reaping_lock:
        if _reaping_depth == 0:
            _reaping_before = _children_of(os.getpid())
            was = ctypes.c_int(0)
            keeper.prctl(keeper.PR_GET_CHILD_SUBREAPER, ctypes.byref(was))
            _reaping_was = was.value
            keeper.prctl(keeper.PR_SET_CHILD_SUBREAPER, 1)
        _reaping_depth += 1
    try:
        yield
    finally:
        with _reaping_lock:
            _reaping_depth -= 1
            if _reaping_depth == 0:
                kill_started_since(_reaping_before)
                if not _reaping_was:
                    keeper.prctl(keeper.PR_SET_CHILD_SUBREAPER, 0)


_janitor: Any = None  # the janitor's Popen, started with the first temporary folder


def _tell_janitor(op: str, path: str) -> None:
    global _janitor
    import subprocess

    if _janitor is None or _janitor.poll() is not None:
        if not sys.executable:
            return
        try:
            _janitor = subprocess.Popen(
                [sys.executable, "-I", "-S", KEEPER_PATH, "--janitor"],
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,  # Ctrl-C and a runner's signal to our group must not end it early
            )
        except OSError:
            return  # best effort: the folder is still removed on every ordinary way out
    try:
        _janitor.stdin.write(keeper.janitor_line(op, path))
        _janitor.stdin.flush()
    except OSError:
        pass


@contextlib.contextmanager
def temporary_directory(prefix: str) -> Iterator[str]:
    """:class:`tempfile.TemporaryDirectory`, and removed by the janitor should this process die meanwhile."""
    import tempfile

    holder = tempfile.TemporaryDirectory(prefix=prefix)
    try:
        _tell_janitor("+", holder.name)
        with holder as tmp:
            yield tmp
    finally:
        _tell_janitor("-", holder.name)


def run_bound(
    cmd: Sequence[str],
    *,
    cwd: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    stdin: int | IO[Any] | None = None,
    stdout: int | IO[Any] | None = None,
    stderr: int | IO[Any] | None = None,
    capture_output: bool = False,
    grace_period: float = 2.0,
    timeout: float | None = None,
) -> Any:
    """Like :func:`subprocess.run` (returns a CompletedProcess), but ``cmd`` and all it starts end with us.

    ``cmd`` runs in its own session under a keeper. If we are interrupted (Ctrl-C, SIGTERM) while it runs, its
    group gets SIGTERM, then after ``grace_period`` everything it started is killed, and the interrupt goes on.
    After ``timeout`` seconds (None: no limit) it is ended the same way and ``subprocess.TimeoutExpired`` raised.
    """
    import subprocess

    if capture_output:
        stdout = stderr = subprocess.PIPE
    with reaping():
        proc = subprocess.Popen(
            bound_argv(cmd, grace_period),
            cwd=cwd,
            env=None if env is None else dict(env),
            stdin=stdin,
            stdout=stdout,
            stderr=stderr,
            start_new_session=True,
        )
        with _ended_on_error(proc, grace_period):
            out, err = proc.communicate(timeout=timeout)
        return subprocess.CompletedProcess(list(cmd), proc.returncode, out, err)


@contextlib.contextmanager
def _ended_on_error(proc: Any, grace_period: float) -> Iterator[None]:
    """On any exception in the block (an interrupt, a timeout) ``proc``'s group gets SIGTERM and up to
    ``grace_period`` seconds to end (its keeper then kills what is left), and the exception goes on."""
    import subprocess

    try:
        yield
    except BaseException:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(grace_period)
        raise


#: Longest output line :func:`run_streamed` passes on; the rest of a longer line is dropped (a progress bar
#: redrawn with carriage returns is one "line" until its newline).
MAX_LINE_BYTES = 4096


def run_streamed(
    cmd: Sequence[str],
    on_line: Callable[[str], None],
    *,
    cwd: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    grace_period: float = 2.0,
    max_line: int = MAX_LINE_BYTES,
) -> int:
    """Run ``cmd`` as :func:`run_bound` does, passing each line of its output (stdout and stderr together,
    decoded, without the newline, cut at ``max_line`` bytes) to ``on_line`` as it comes; its exit status."""
    import subprocess

    with reaping():
        proc = subprocess.Popen(
            bound_argv(cmd, grace_period),
            cwd=cwd,
            env=None if env is None else dict(env),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        assert proc.stdout is not None
        with proc.stdout, _ended_on_error(proc, grace_period):
            cut = False  # the rest of an over-long line is being skipped
            while chunk := proc.stdout.readline(max_line):
                longer = len(chunk) >= max_line and not chunk.endswith(b"\n")  # the line goes on
                if not cut:
                    text = chunk.rstrip(b"\r\n").decode("utf-8", errors="replace")
                    on_line(text + " [...]" if longer else text)
                cut = longer
            return proc.wait()
