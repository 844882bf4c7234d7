"""``python -I -S keeper.py``: nothing mlsubmit starts outlives it (docs/security.md). ``PARENT_PID GRACE --
CMD...`` ends all CMD started when CMD or the parent ends, ``kill -9`` included (prctl(2) death signal and
subreaper, https://man7.org/linux/man-pages/man2/prctl.2.html); ``--janitor`` removes the folders still listed
(``+PATH``/``-PATH`` lines, hex) at EOF."""

from __future__ import annotations

import os
import signal
import sys
import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
PR_GET_CHILD_SUBREAPER = 37
POLL = 0.02  # seconds between looks at the process table while waiting for processes to end
KILL_ROUNDS = 500  # bounds a final sweep against a fork storm (each round kills everything it sees)

ProcessTable = dict[int, tuple[int, bool, int]]  # pid -> (parent pid, running: not a zombie, process group)


def prctl(option: int, arg: object) -> bool:
    """prctl(2); False where it is missing or refuses."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        return int(ctypes.CDLL(None, use_errno=True).prctl(option, arg, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def process_table() -> ProcessTable | None:
    """pid -> (ppid, running, pgrp) from /proc; None without /proc."""
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
        # "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses, so split after the last ")".
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) >= 3:
            table[int(entry)] = (int(fields[1]), fields[0] not in (b"Z", b"X"), int(fields[2]))
    return table


def descendants(roots: Iterable[int], table: ProcessTable) -> set[int]:
    """The processes below ``roots`` (not the roots themselves), running or not."""
    children: dict[int, list[int]] = {}
    for pid, (ppid, *_) in table.items():
        children.setdefault(ppid, []).append(pid)
    found: set[int] = set()
    todo = list(roots)
    while todo:
        for child in children.get(todo.pop(), ()):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def signal_all(pids: Iterable[int], signum: int) -> None:
    """Send ``signum`` to each pid that still exists."""
    for pid in pids:
        try:  # noqa: SIM105 (contextlib would cost the keeper's start-up time)
            os.kill(pid, signum)
        except (ProcessLookupError, PermissionError):
            pass


def kill_until_gone(find: Callable[[], Iterable[int]]) -> None:
    """SIGKILL what ``find`` names until it names nothing (at most KILL_ROUNDS rounds)."""
    for _ in range(KILL_ROUNDS):
        targets = list(find())
        if not targets:
            return
        signal_all(targets, signal.SIGKILL)
        time.sleep(POLL / 4)


def _reap_any(reaped: dict[int, int]) -> None:
    try:  # every child that ended: the keeper's children are all its own business
        while (found := os.waitpid(-1, os.WNOHANG))[0]:
            reaped[found[0]] = found[1]
    except ChildProcessError:
        pass


def _running_below(root: int, reaped: dict[int, int]) -> list[int]:
    _reap_any(reaped)
    table = process_table() or {}
    return [pid for pid in descendants([root], table) if table[pid][1]]


def _end_tree(root: int, grace_period: float, reaped: dict[int, int]) -> None:
    """SIGTERM everything below ``root`` (us), wait up to ``grace_period`` for it to end, then SIGKILL the rest."""
    running = _running_below(root, reaped)
    signal_all(running, signal.SIGTERM)
    deadline = time.monotonic() + grace_period
    while running and time.monotonic() < deadline:
        time.sleep(POLL)
        running = _running_below(root, reaped)
    kill_until_gone(lambda: _running_below(root, reaped))
    _reap_any(reaped)


def _die_like(status: int) -> int:
    """Exit as the command did: with its exit code, or killed by its signal (without a core dump)."""
    if not os.WIFSIGNALED(status):
        return os.waitstatus_to_exitcode(status)
    signum = os.WTERMSIG(status)
    try:
        import resource

        resource.setrlimit(resource.RLIMIT_CORE, (0, resource.getrlimit(resource.RLIMIT_CORE)[1]))
        signal.signal(signum, signal.SIG_DFL)
    except (ImportError, ValueError, OSError):
        pass
    signal.pthread_sigmask(signal.SIG_SETMASK, ())
    os.kill(os.getpid(), signum)
    return 128 + signum


def _spawn(cmd: Sequence[str], keeper: int) -> int:
    """fork + exec ``cmd`` bound to the keeper: its pid, or OSError as Popen would raise."""
    errors_r, errors_w = os.pipe()  # close-on-exec: EOF when exec succeeded, an errno when it failed
    pid = os.fork()
    if pid == 0:
        try:
            os.close(errors_r)
            signal.pthread_sigmask(signal.SIG_SETMASK, ())
            prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL))
            if os.getppid() != keeper:
                os._exit(137)
            os.execvp(cmd[0], list(cmd))
        except OSError as err:
            os.write(errors_w, str(err.errno or 0).encode())
        finally:
            os._exit(127)
    os.close(errors_w)
    with os.fdopen(errors_r, "rb") as errors:
        failure = errors.read()
    if failure:
        os.waitpid(pid, 0)
        errno = int(failure)
        raise OSError(errno, os.strerror(errno))
    return pid


def keeper_main(argv: Sequence[str]) -> int:
    if len(argv) < 5 or argv[3] != "--":
        sys.stderr.write("usage: keeper.py PARENT_PID GRACE -- CMD...\n")
        return 2
    parent, grace_period, cmd = int(argv[1]), float(argv[2]), list(argv[4:])
    watched = {signal.SIGCHLD, signal.SIGTERM, signal.SIGINT, signal.SIGHUP}
    signal.pthread_sigmask(signal.SIG_BLOCK, watched)
    prctl(PR_SET_CHILD_SUBREAPER, 1)
    prctl(PR_SET_PDEATHSIG, int(signal.SIGTERM))
    if os.getppid() != parent:
        return 137  # the parent died before the binding took effect: start nothing
    me = os.getpid()
    try:
        child = _spawn(cmd, me)
    except OSError as err:
        sys.stderr.write(f"mlsubmit: could not start {cmd[0]}: {err.strerror or err}\n")
        return 127
    reaped: dict[int, int] = {}
    # SIGTERM/SIGINT/SIGHUP while the parent lives came to the whole process group: CMD has them too and ends
    # (or not) on its own; the parent kills the group after its grace period. Only our re-parenting means the
    # parent is gone and we must end CMD ourselves.
    while child not in reaped and os.getppid() == parent:
        signal.sigtimedwait(watched, 1.0)
        _reap_any(reaped)
    _end_tree(me, grace_period, reaped)
    return _die_like(reaped.get(child, 9))


JANITOR_PREFIX = "mlsubmit-"  # the janitor removes nothing but folders whose name starts with this


def janitor_line(op: str, path: str) -> bytes:
    """``+`` (remove at EOF) or ``-`` (done with), then the path in hex: a path may hold newlines."""
    return op.encode("ascii") + os.fsencode(path).hex().encode("ascii") + b"\n"


def janitor_main() -> int:
    import shutil
    import stat
    import tempfile

    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, signal.SIG_IGN)  # only EOF ends us: the paths must be removed
    paths: dict[bytes, None] = {}
    for line in sys.stdin.buffer:
        op, hexed = line[:1], line[1:].rstrip(b"\n")
        try:
            path = bytes.fromhex(hexed.decode("ascii"))
        except ValueError:
            continue  # not a line mlsubmit wrote
        if op == b"+":
            paths[path] = None
        elif op == b"-":
            paths.pop(path, None)
    for path in paths:
        # only a folder mlsubmit could have made: its name, in the (inherited) temporary folder, a directory we own
        parent, name = os.path.split(path)
        if not name.startswith(JANITOR_PREFIX.encode()) or parent != os.fsencode(tempfile.gettempdir()):
            continue
        try:
            info = os.lstat(path)
        except OSError:
            continue
        if stat.S_ISDIR(info.st_mode) and info.st_uid == os.geteuid():
            shutil.rmtree(path, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(janitor_main() if sys.argv[1:] == ["--janitor"] else keeper_main(sys.argv))
