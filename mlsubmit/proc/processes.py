"""Child processes and temporary folders that never outlive mlsubmit (docs/security.md): each child runs in
its own session under a keeper (:mod:`mlsubmit.proc.keeper`, Linux; process groups elsewhere), mlsubmit is a
subreaper while they run (:func:`reaping`), and a janitor removes :func:`temporary_directory` folders."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import IO, TYPE_CHECKING, Any

from mlsubmit.proc import keeper
from mlsubmit.proc.keeper import descendants, kill_until_gone, process_table

if TYPE_CHECKING:
    import subprocess

KEEPER_PATH = os.path.abspath(keeper.__file__)


def keeper_supported() -> bool:
    """Linux with /proc, and an interpreter to run the keeper."""
    return (
        sys.platform.startswith("linux")
        and bool(sys.executable)
        and os.path.isdir("/proc/self")
        and os.path.isfile(KEEPER_PATH)  # not inside a zip archive
    )


_reaping_lock = threading.Lock()
_reaping_depth = 0
_reaping_before: set[int] = set()
_reaping_was = 0


@contextlib.contextmanager
def reaping() -> Iterator[None]:
    """A child subreaper in the block; what was started in it is killed when the last of the blocks (they nest and
    overlap across threads, as ``local tune``'s trials) ends."""
    global _reaping_depth, _reaping_before, _reaping_was
    if not keeper_supported():
        yield
        return
    import ctypes

    with _reaping_lock:
        if _reaping_depth == 0:
            me = os.getpid()
            _reaping_before = {pid for pid, (ppid, *_) in (process_table() or {}).items() if ppid == me}
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
                kill_until_gone(lambda: _started_since(_reaping_before))
                if not _reaping_was:
                    keeper.prctl(keeper.PR_SET_CHILD_SUBREAPER, 0)


def _started_since(before: set[int]) -> set[int]:
    """The running processes below us but those below the children in ``before`` (and the janitor)."""
    table, me, janitor = process_table() or {}, os.getpid(), getattr(_janitor, "pid", None)
    ours = {pid for pid, (ppid, *_) in table.items() if ppid == me and pid not in before and pid != janitor}
    for pid in ours:  # our zombies stop counting (never waitpid(-1): others' children are theirs)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)
    return {pid for pid in ours | descendants(ours, table) if table[pid][1]}


_janitor: Any = None  # the janitor's Popen, started with the first temporary folder


def _tell_janitor(op: str, path: str) -> None:
    global _janitor
    import subprocess

    if not sys.executable:
        return
    with contextlib.suppress(OSError):  # best effort: the folder is still removed on every ordinary way out
        if _janitor is None or _janitor.poll() is not None:
            _janitor = subprocess.Popen(
                [sys.executable, "-I", "-S", KEEPER_PATH, "--janitor"],
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,  # Ctrl-C and a runner's signal to our group must not end it early
            )
        _janitor.stdin.write(keeper.janitor_line(op, path))
        _janitor.stdin.flush()


@contextlib.contextmanager
def temporary_directory(prefix: str) -> Iterator[str]:
    """:class:`tempfile.TemporaryDirectory`, removed by the janitor should this process die meanwhile."""
    import tempfile

    holder = tempfile.TemporaryDirectory(prefix=prefix)
    try:
        _tell_janitor("+", holder.name)
        with holder as tmp:
            yield tmp
    finally:
        _tell_janitor("-", holder.name)


def popen_bound(
    cmd: Sequence[str], grace_period: float, cwd: Any, env: Mapping[str, str] | None, **io: Any
) -> subprocess.Popen[bytes]:
    """``subprocess.Popen`` of ``cmd`` in a session of its own under a keeper bound to our life (Linux)."""
    import subprocess

    keeper = [sys.executable, "-I", "-S", KEEPER_PATH, str(os.getpid()), repr(float(grace_period)), "--"]
    return subprocess.Popen(
        [*keeper, *cmd] if keeper_supported() else list(cmd),
        cwd=cwd,
        env=None if env is None else dict(env),
        start_new_session=True,
        **io,
    )


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
) -> subprocess.CompletedProcess[Any]:
    """:func:`subprocess.run`, but ``cmd`` and all it starts end with us: on an exception (Ctrl-C, ``timeout``)
    its group gets SIGTERM, everything it started is killed after ``grace_period``, and the exception goes on."""
    import subprocess

    if capture_output:
        stdout = stderr = subprocess.PIPE
    with _bound(cmd, grace_period, cwd, env, stdin=stdin, stdout=stdout, stderr=stderr) as proc:
        out, err = proc.communicate(timeout=timeout)
    return subprocess.CompletedProcess(list(cmd), proc.returncode, out, err)


@contextlib.contextmanager
def _bound(
    cmd: Sequence[str], grace_period: float, cwd: Any, env: Mapping[str, str] | None, **io: Any
) -> Iterator[subprocess.Popen[bytes]]:
    """:func:`popen_bound` under :func:`reaping`; on an exception its group gets SIGTERM and ``grace_period`` s."""
    import subprocess

    with reaping():
        proc = popen_bound(cmd, grace_period, cwd, env, **io)
        try:
            yield proc
        except BaseException:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(grace_period)
            raise


#: Longest output line :func:`run_streamed` passes on; the rest is dropped (a progress bar redrawn with
#: carriage returns is one "line" until its newline).
MAX_LINE_BYTES = 4096


def run_streamed(
    cmd: Sequence[str],
    on_line: Callable[[str], None],
    *,
    env: Mapping[str, str] | None = None,
    max_line: int = MAX_LINE_BYTES,
) -> int:
    """Run ``cmd`` as :func:`run_bound` does, each line of its output (cut at ``max_line``) to ``on_line``."""
    import subprocess

    io = {"stdin": subprocess.DEVNULL, "stdout": subprocess.PIPE, "stderr": subprocess.STDOUT}
    with _bound(cmd, 2.0, None, env, **io) as proc:
        assert proc.stdout is not None
        with proc.stdout:
            cut = False  # the rest of an over-long line is being skipped
            while chunk := proc.stdout.readline(max_line):
                longer = len(chunk) >= max_line and not chunk.endswith(b"\n")  # the line goes on
                if not cut:
                    text = chunk.rstrip(b"\r\n").decode("utf-8", errors="replace")
                    on_line(text + " [...]" if longer else text)
                cut = longer
            return proc.wait()
