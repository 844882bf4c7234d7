"""Start a local run's replicas under keepers, relay their output in whole prefixed lines, and end every one
(docs/local.md): the primary's end gives the status; a replica failing, a signal or the time limit an error."""

from __future__ import annotations

import contextlib
import errno
import os
import re
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from types import FrameType
from typing import IO

from mlsubmit import console
from mlsubmit.errors import (
    LocalRunError,
    ReplicaFailedError,
    RunInterruptedError,
    RunStoppedError,
    RunTimeoutError,
)
from mlsubmit.local.interpreter import is_import_failure, missing_module
from mlsubmit.proc.keeper import proc_stats
from mlsubmit.proc.processes import keeper_supported, popen_bound, reaping

# What a container engine prints for a replica it ran when that replica is stopped (buildah: "Error: exit status
# 143"); rewritten for replicas the run stopped, so a clean run does not read as a failure.
_ENGINE_EXIT = rb"Error: exit status \d+"  # a pattern: re compiles it when first used
POLL_INTERVAL = 0.02  # seconds; bounds how late we notice an exit or a signal
# Output is relayed until the pipes close, but a pipe a daemonised grandchild holds open is given up after this
# long without a line, and every pipe after READER_DRAIN_CAP (what a trainer printed last is often the error).
READER_JOIN_TIMEOUT = 2.0
READER_DRAIN_CAP = 30.0
_PIPES = {"stdin": subprocess.DEVNULL, "stdout": subprocess.PIPE, "stderr": subprocess.PIPE}


@dataclass(frozen=True)
class Launch:
    """One replica to start: its display name, whether it is the primary, and how to run it."""

    name: str
    primary: bool
    argv: Sequence[str]
    env: Mapping[str, str]
    cwd: str


class PrefixedOutput:
    """Writes whole lines, each prefixed with its replica's name, to two binary streams without mixing them."""

    def __init__(self, stdout: IO[bytes], stderr: IO[bytes]) -> None:
        self._streams = (stdout, stderr)
        self._lock = threading.Lock()
        self.import_failures: set[str] = set()  # replicas whose output said an import failed
        self.missing_modules: set[str] = set()  # the modules those tracebacks named
        self.stopped: set[str] = set()  # replicas the run stopped (the primary ended, or it was cut short)

    def write_line(self, name: str, line: bytes, *, to_stderr: bool) -> None:
        """Write ``[name] line``; a final line without newline gets one so the next prefix starts a line."""
        if is_import_failure(line):
            self.import_failures.add(name)
            module = missing_module(line)
            if module:
                self.missing_modules.add(module)
        if name in self.stopped and re.fullmatch(_ENGINE_EXIT, line.strip()):
            line = b"stopped as the run ended (the engine said: " + line.strip() + b")"
        stream = self._streams[1 if to_stderr else 0]
        with self._lock:
            # Prefix, line and newline written apart: a long line is never copied to join them.
            stream.write(b"[" + name.encode() + b"] ")
            stream.write(line)
            if not line.endswith(b"\n"):
                stream.write(b"\n")
            stream.flush()

    def note(self, text: str) -> None:
        """Write a line of mlsubmit's own to stderr, between whole lines of the replicas."""
        with self._lock:
            self._streams[1].write(text.encode() + b"\n")
            self._streams[1].flush()


@dataclass
class _Running:
    """A started replica, the threads relaying its output; its pid is its process group's (start_new_session)."""

    launch: Launch
    proc: subprocess.Popen[bytes]
    readers: list[threading.Thread]
    last_line: list[float]  # when a reader last relayed a line (monotonic), shared by both readers

    def signal_group(self, signum: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signum)


def _live_groups(running: Sequence[_Running]) -> list[_Running]:
    """The replicas whose group has a running process; zombies (PID 1 may never reap) don't count where /proc is."""
    for replica in running:
        replica.proc.poll()  # reap our own child, so it stops counting as soon as it exits
    stats = proc_stats()
    if stats is not None:
        pgids = {int(f[2]) for f in stats.values() if len(f) >= 3 and f[0] not in (b"Z", b"X")}
        return [r for r in running if r.proc.pid in pgids]
    alive = []
    for replica in running:
        try:
            os.killpg(replica.proc.pid, 0)
        except ProcessLookupError:
            continue
        except PermissionError:
            pass
        alive.append(replica)
    return alive


def describe_exit(returncode: int) -> str:
    """``exited with status 3`` / ``was killed by SIGKILL``."""
    if returncode < 0:
        try:
            return f"was killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"was killed by signal {-returncode}"
    return f"exited with status {returncode}"


def supervise(
    launches: Sequence[Launch],
    output: PrefixedOutput,
    *,
    grace_period: float,
    max_running_time: float | None = None,
    stop: threading.Event | None = None,
) -> int:
    """Run ``launches`` until the primary ends: its exit status; ``stop`` set raises RunStoppedError. Whatever
    happens (LocalRunError when a replica cannot start), every replica's process group is gone on return."""
    if sum(1 for launch in launches if launch.primary) != 1:
        raise ValueError("exactly one launch must be the primary")
    caught: list[int] = []
    running: list[_Running] = []
    clock = console.current().now  # a test's console may bring a fake clock
    with signals_recorded(caught):
        try:
            with reaping():  # on leaving, whatever is left below us (even in its own session) is killed
                try:
                    for launch in launches:
                        if caught:
                            break
                        running.append(_start(launch, output, grace_period))
                    return _watch(running, caught, max_running_time, clock, stop)
                finally:
                    output.stopped.update(r.launch.name for r in running if r.proc.poll() is None)
                    _stop_all(running, caught, grace_period, clock)
        finally:
            _drain(running)


def _watch(
    running: list[_Running],
    caught: list[int],
    max_running_time: float | None,
    clock: Callable[[], float],
    stop: threading.Event | None = None,
) -> int:
    deadline = None if max_running_time is None else clock() + max_running_time
    while True:
        if caught:
            name = signal.Signals(caught[0]).name
            raise RunInterruptedError(f"interrupted ({name}); stopped all replicas.")
        if stop is not None and stop.is_set():
            raise RunStoppedError("stopped on request; stopped all replicas.")
        codes = [(replica, replica.proc.poll()) for replica in running]
        primary_code = next((code for r, code in codes if r.launch.primary), None)
        failed = [r for r, code in codes if not r.launch.primary and code not in (None, 0)]
        # A replica that failed in the same instant as a failing primary is the likelier cause: name it.
        if failed and primary_code != 0:
            first = failed[0]
            raise ReplicaFailedError(
                f"[{first.launch.name}] {describe_exit(first.proc.returncode)}; stopped all replicas. "
                "Its output above says why."
            )
        if primary_code is not None:  # as a shell reports it: 128 + N for death by signal N
            return 128 - primary_code if primary_code < 0 else primary_code
        if deadline is not None and clock() >= deadline:
            raise RunTimeoutError(
                f"the run exceeded its maximum running time of {max_running_time:g}s and was stopped, "
                "as the service would cancel it; raise --max-running-time (scheduling.maxRunningTime) if needed."
            )
        time.sleep(POLL_INTERVAL)


def _start(launch: Launch, output: PrefixedOutput, grace_period: float) -> _Running:
    path = os.pathsep.join(os.get_exec_path(dict(launch.env)))
    try:
        # The keeper starts the command; check here what Popen would check, so the error stays the same.
        if keeper_supported() and shutil.which(launch.argv[0], path=path) is None:
            raise OSError(errno.ENOENT, "no such executable file")
        proc = popen_bound(launch.argv, grace_period, launch.cwd, launch.env, **_PIPES)
    except OSError as err:
        raise LocalRunError(
            f"could not start [{launch.name}] ({launch.argv[0]}): {err.strerror or err}."
        ) from err
    last_line = [time.monotonic()]
    readers = [
        threading.Thread(target=_relay, args=(pipe, launch.name, output, to_stderr, last_line), daemon=True)
        for pipe, to_stderr in ((proc.stdout, False), (proc.stderr, True))
    ]
    for reader in readers:
        reader.start()
    return _Running(launch, proc, readers, last_line)


def _drain(running: list[_Running]) -> None:
    """Wait for the relays to end while they relay (the daemon threads die with us)."""
    start = time.monotonic()
    for replica in running:
        for reader in replica.readers:
            while reader.is_alive():
                # quiet since the drain began, or since its last line
                until = min(start + READER_DRAIN_CAP, max(start, replica.last_line[0]) + READER_JOIN_TIMEOUT)
                if time.monotonic() >= until:
                    break
                reader.join(until - time.monotonic())


#: The most of one output line relayed at once: a longer one goes on as further prefixed lines, so a 64 MiB line
#: costs a few of these, not copies of itself (docs/local.md); below glibc's mmap threshold (128 KiB).
MAX_RELAY_LINE = 64 * 1024


def _relay(
    pipe: IO[bytes] | None, name: str, output: PrefixedOutput, to_stderr: bool, last_line: list[float]
) -> None:
    assert pipe is not None
    with pipe:
        for line in iter(lambda: pipe.readline(MAX_RELAY_LINE), b""):
            last_line[0] = time.monotonic()
            try:
                output.write_line(name, line, to_stderr=to_stderr)
            except (OSError, ValueError):
                # Our own stdout went away (closed pipe): keep draining so the replica never blocks on a full pipe.
                continue


def _stop_all(
    running: list[_Running], caught: list[int], grace_period: float, clock: Callable[[], float]
) -> None:
    signals_before = len(caught)
    # Groups whose leader already exited may still hold its children: they are stopped too.
    alive = _live_groups(running)
    for replica in alive:
        replica.signal_group(signal.SIGTERM)
    deadline = clock() + grace_period
    while alive and clock() < deadline and len(caught) == signals_before:
        time.sleep(POLL_INTERVAL)
        alive = _live_groups(alive)
    for replica in alive:
        replica.signal_group(signal.SIGKILL)
    for replica in running:
        with contextlib.suppress(ChildProcessError):
            replica.proc.wait()
    # SIGKILL cannot be caught, but takes a moment to land on every member of a group; wait for that briefly
    # so that "no process left behind" holds when we return.
    settle = clock() + 2.0
    while alive and clock() < settle:
        alive = _live_groups(alive)
        if alive:
            time.sleep(POLL_INTERVAL)


@contextlib.contextmanager
def signals_recorded(caught: list[int]) -> Iterator[None]:
    """SIGINT/SIGTERM/SIGHUP appended to ``caught`` in the block (main thread only); the handler only appends."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def record(signum: int, frame: FrameType | None) -> None:
        caught.append(signum)

    previous = {
        signum: signal.signal(signum, record) for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    }
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
