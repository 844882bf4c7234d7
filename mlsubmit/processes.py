"""Child processes that never outlive mlsubmit (README "Security", "Processes and files").

Everything mlsubmit starts (the replicas of ``local train``, a project's build backend, pip) runs under a
*keeper*: this file run as a script, ``python -I -S processes.py PARENT_PID GRACE -- CMD...``. On Linux the
keeper

* asks the kernel for SIGTERM when mlsubmit dies, however it dies, ``kill -9`` included (``PR_SET_PDEATHSIG``),
  and starts CMD with SIGKILL as CMD's own parent-death signal;
* is a child subreaper (``PR_SET_CHILD_SUBREAPER``): whatever CMD starts, even in a session of its own
  (``setsid``: a TensorBoard, a data server), is re-parented to the keeper rather than to PID 1 when its parent
  ends, so it can still be found below the keeper and ended;
* when CMD ends, or when mlsubmit is gone, sends SIGTERM to every process below it, waits up to GRACE seconds,
  SIGKILLs what is left (until nothing is), then exits with CMD's status (or dies of CMD's signal).

While children run, mlsubmit itself is a subreaper too (:func:`reaping`) and at the end kills every process it
started that is still below it: the keepers and anything that escaped them. Without /proc and prctl (not Linux)
the keeper is skipped and process groups are all there is.

Temporary folders come from :func:`temporary_directory`: removed on the way out as usual, and also by a
*janitor* (this file run with ``--janitor``) that holds their list and removes what is left of them when its
stdin reaches EOF, which happens when mlsubmit ends in any way, ``kill -9`` included (on every POSIX system).
See https://man7.org/linux/man-pages/man2/prctl.2.html.

The script part imports only the standard library: it runs isolated (``-I -S``) in a few milliseconds.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import IO, Any

_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36
_PR_GET_CHILD_SUBREAPER = 37
_POLL = 0.02  # seconds between looks at the process table while waiting for processes to end
_KILL_ROUNDS = 500  # bounds the final sweep against a fork storm (each round kills everything it sees)
KEEPER_PATH = os.path.abspath(__file__)

ProcessTable = dict[int, tuple[int, bool]]  # pid -> (parent pid, running: not a zombie)


# --- shared: the process table and prctl ------------------------------------------------------------------


def _prctl(option: int, arg: Any) -> bool:
    """prctl(2) through ctypes; False where it is missing or refuses."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        return int(ctypes.CDLL(None, use_errno=True).prctl(option, arg, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def process_table() -> ProcessTable | None:
    """Every process visible in /proc as pid -> (ppid, running); None where there is no /proc."""
    try:
        entries = os.listdir("/proc")
    except OSError:
        return None
    table: ProcessTable = {}
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue  # gone meanwhile
        # "pid (comm) state ppid ...": comm may hold spaces and parentheses, so split after the last ")".
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) >= 2:
            table[int(entry)] = (int(fields[1]), fields[0] not in (b"Z", b"X"))
    return table


def descendants(roots: Iterable[int], table: ProcessTable) -> set[int]:
    """The processes below ``roots`` (not the roots themselves), running or not."""
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    found: set[int] = set()
    todo = list(roots)
    while todo:
        for child in children.get(todo.pop(), ()):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def _signal_all(pids: Iterable[int], signum: int) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signum)


def _reap(pids: Iterable[int]) -> dict[int, int]:
    """waitpid(WNOHANG) each of our own children in ``pids``; returns the wait statuses collected."""
    statuses = {}
    for pid in pids:
        try:
            got, status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            continue  # not ours (yet), or already reaped
        if got:
            statuses[got] = status
    return statuses


# --- the mlsubmit side ------------------------------------------------------------------------------------


def keeper_supported() -> bool:
    """Whether children can be bound to us: Linux with /proc, and an interpreter to run the keeper."""
    return sys.platform.startswith("linux") and bool(sys.executable) and os.path.isdir("/proc/self")


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
    for _ in range(_KILL_ROUNDS):
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
        _signal_all(targets, signal.SIGKILL)
        time.sleep(_POLL / 4)


def _children_of(pid: int) -> set[int]:
    table = process_table() or {}
    return {child for child, (ppid, _) in table.items() if ppid == pid}


@contextlib.contextmanager
def reaping() -> Iterator[None]:
    """Within the block this process is a child subreaper; at its end, whatever was started in it is killed.

    Processes that were already our children when the block began are left alone.
    """
    if not keeper_supported():
        yield
        return
    import ctypes

    before = _children_of(os.getpid())
    was = ctypes.c_int(0)
    _prctl(_PR_GET_CHILD_SUBREAPER, ctypes.byref(was))
    _prctl(_PR_SET_CHILD_SUBREAPER, 1)
    try:
        yield
    finally:
        kill_started_since(before)
        if not was.value:
            _prctl(_PR_SET_CHILD_SUBREAPER, 0)


_janitor: Any = None  # the janitor's Popen, started with the first temporary folder


def _tell_janitor(line: str) -> None:
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
        _janitor.stdin.write(line.encode("utf-8", "surrogateescape") + b"\n")
        _janitor.stdin.flush()
    except OSError:
        pass


@contextlib.contextmanager
def temporary_directory(prefix: str) -> Iterator[str]:
    """:class:`tempfile.TemporaryDirectory`, and removed by the janitor should this process die meanwhile."""
    import tempfile

    holder = tempfile.TemporaryDirectory(prefix=prefix)
    try:
        _tell_janitor("+" + holder.name)
        with holder as tmp:
            yield tmp
    finally:
        _tell_janitor("-" + holder.name)


def _janitor_main() -> int:
    """Read ``+PATH`` / ``-PATH`` lines until EOF (our parent is gone), then remove the paths still listed."""
    import shutil

    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, signal.SIG_IGN)  # only EOF ends us: the paths must be removed
    paths: dict[bytes, None] = {}
    for line in sys.stdin.buffer:
        path = line.rstrip(b"\n")
        if path[:1] == b"+":
            paths[path[1:]] = None
        else:
            paths.pop(path[1:], None)
    for path in paths:
        shutil.rmtree(os.fsdecode(path), ignore_errors=True)
    return 0


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
) -> Any:
    """Like :func:`subprocess.run` (returns a CompletedProcess), but ``cmd`` and all it starts end with us.

    ``cmd`` runs in its own session under a keeper. If we are interrupted (Ctrl-C, SIGTERM) while it runs, its
    group gets SIGTERM, then after ``grace_period`` everything it started is killed, and the interrupt goes on.
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
        try:
            out, err = proc.communicate()
        except BaseException:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(grace_period)
            raise
        return subprocess.CompletedProcess(list(cmd), proc.returncode, out, err)


# --- the keeper (this file run as a script) ---------------------------------------------------------------


def _end_tree(root: int, grace_period: float, reaped: dict[int, int]) -> None:
    """SIGTERM everything below ``root`` (us), wait up to ``grace_period`` for it to end, then SIGKILL the rest."""
    table = process_table() or {}
    below = descendants([root], table)
    _signal_all((pid for pid in below if table[pid][1]), signal.SIGTERM)
    deadline = time.monotonic() + grace_period
    while True:
        reaped.update(_reap(_children_of(root)))
        table = process_table() or {}
        running = [pid for pid in descendants([root], table) if table[pid][1]]
        if not running:
            return
        if time.monotonic() >= deadline:
            break
        time.sleep(_POLL)
    for _ in range(_KILL_ROUNDS):
        _signal_all(running, signal.SIGKILL)
        time.sleep(_POLL / 4)
        reaped.update(_reap(_children_of(root)))
        table = process_table() or {}
        running = [pid for pid in descendants([root], table) if table[pid][1]]
        if not running:
            break
    reaped.update(_reap(_children_of(root)))


def _die_like(status: int) -> int:
    """Exit as the command did: with its exit code, or killed by its signal (without a core dump)."""
    if not os.WIFSIGNALED(status):
        return os.waitstatus_to_exitcode(status)
    signum = os.WTERMSIG(status)
    with contextlib.suppress(ImportError, ValueError, OSError):
        import resource

        resource.setrlimit(resource.RLIMIT_CORE, (0, resource.getrlimit(resource.RLIMIT_CORE)[1]))
    with contextlib.suppress(ValueError, OSError):
        signal.signal(signum, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_SETMASK, ())
    os.kill(os.getpid(), signum)
    return 128 + signum


def keeper_main(argv: Sequence[str]) -> int:
    """``processes.py PARENT_PID GRACE -- CMD...``: run CMD bound to PARENT_PID's life, then end its tree."""
    if len(argv) < 5 or argv[3] != "--":
        sys.stderr.write("usage: processes.py PARENT_PID GRACE -- CMD...\n")
        return 2
    parent, grace_period, cmd = int(argv[1]), float(argv[2]), list(argv[4:])
    watched = {signal.SIGCHLD, signal.SIGTERM, signal.SIGINT, signal.SIGHUP}
    signal.pthread_sigmask(signal.SIG_BLOCK, watched)
    _prctl(_PR_SET_CHILD_SUBREAPER, 1)
    _prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM))
    if os.getppid() != parent:
        return 137  # mlsubmit died before the binding took effect: start nothing
    me = os.getpid()

    def bind_to_keeper() -> None:  # in CMD's process between fork and exec; the keeper has a single thread
        signal.pthread_sigmask(signal.SIG_SETMASK, ())
        _prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL))
        if os.getppid() != me:
            os._exit(137)

    import subprocess

    try:
        child = subprocess.Popen(cmd, preexec_fn=bind_to_keeper)
    except OSError as err:
        sys.stderr.write(f"mlsubmit: could not start {cmd[0]}: {err.strerror or err}\n")
        return 127
    reaped: dict[int, int] = {}
    # SIGTERM/SIGINT/SIGHUP while mlsubmit lives came to the whole process group: CMD has them too, and ends
    # (or not) on its own; mlsubmit kills the group after its grace period. Only our re-parenting means
    # mlsubmit is gone and we must end CMD ourselves.
    while child.pid not in reaped and os.getppid() == parent:
        signal.sigtimedwait(watched, 1.0)
        reaped.update(_reap(_children_of(me) | {child.pid}))
    _end_tree(me, grace_period, reaped)
    child.returncode = 0  # reaped by us, not by Popen
    return _die_like(reaped.get(child.pid, 9))


if __name__ == "__main__":
    sys.exit(_janitor_main() if sys.argv[1:] == ["--janitor"] else keeper_main(sys.argv))
