"""The run ledger (docs/cost.md): one JSON line per submit (secrets removed) and per job end, in
``$XDG_STATE_HOME/mlsubmit/ledger.jsonl``; each line one ``write`` under ``flock``, bounded; a ledger another user
owns or can write is not used."""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from mlsubmit.errors import LedgerError
from mlsubmit.proc.files import user_dir

FILE = "ledger.jsonl"
FORMAT = 1
MAX_LINE = 8 * 1024 * 1024  # a body is bounded well below this
MAX_FILE = 1024 * 1024 * 1024
# Options whose values are secrets, in any command line (mlsubmit's own and the trainer's after `--`).
_SECRET_OPTION = re.compile(
    r"--?[\w-]*(token|secret|password|passwd|api[-_]?key|credential|auth)[\w-]*", re.I
)
# Values that look like credentials wherever they appear (OAuth access tokens, AWS keys, GitHub tokens, JWTs).
_SECRET_VALUE = re.compile(r"(ya29\.|AKIA[0-9A-Z]{16}|gh[pousr]_|eyJ[\w-]{10,}\.|Bearer\s)", re.I)
REDACTED = "<redacted>"


def ledger_path(env: Mapping[str, str]) -> Path | None:
    """Where the ledger lives; None when there is no state folder (no home)."""
    base = user_dir(env, "XDG_STATE_HOME", ".local/state")
    return None if base is None else base / "mlsubmit" / FILE


def now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def scrub_argv(argv: Sequence[str]) -> list[str]:
    """The command line with secret options' values, and anything like a credential, as ``<redacted>``."""
    out: list[str] = []
    args = iter(argv)
    for arg in args:
        name, eq, _value = arg.partition("=")
        if not _SECRET_OPTION.fullmatch(name):
            out.append(REDACTED if _SECRET_VALUE.search(arg) else arg)
            continue
        out.append(f"{name}={REDACTED}" if eq else arg)
        if not eq and next(args, None) is not None:  # the option's value is the next argument
            out.append(REDACTED)
    return out


def canonical_hash(value: Any) -> str:
    """sha256 of ``value`` as canonical JSON (sorted keys, no spaces): the body's and the flags' hash."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def file_hash(path: str | Path | None) -> str | None:
    """``sha256:...`` of the file at ``path``; None without one (or when it cannot be read)."""
    if not path:
        return None
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    except OSError:
        return None
    return "sha256:" + digest.hexdigest()


def git_state(folder: str | Path) -> dict[str, Any] | None:
    """The commit checked out in ``folder`` and whether the tree differs; None outside a repository (or git)."""
    import subprocess

    def git(*args: str) -> str | None:
        # No timeout: subprocess waits for one by polling with time.sleep, which the follow step after a submit
        # (and its tests) own; both commands are local reads, and no lock is taken (GIT_OPTIONAL_LOCKS=0).
        env = {**os.environ, "GIT_OPTIONAL_LOCKS": "0", "GIT_TERMINAL_PROMPT": "0"}
        try:
            done = subprocess.run(
                ["git", "-C", str(folder), *args],
                capture_output=True,
                text=True,
                check=False,
                stdin=subprocess.DEVNULL,
                env=env,
            )
        except (OSError, subprocess.SubprocessError):
            return None
        return done.stdout if done.returncode == 0 else None

    if not (commit := git("rev-parse", "HEAD")):
        return None
    status = git("status", "--porcelain", "--untracked-files=no")
    return {"commit": commit.strip(), "dirty": bool(status and status.strip())}


def images_of(body: Any) -> list[str]:
    """Every image a body names (``imageUri``, ``image``, ``executorImageUri``), once each, in order."""
    found: list[str] = []

    def walk(value: Any) -> None:
        items = (
            value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
        )
        for key, item in items:
            if key in ("imageUri", "image", "executorImageUri") and isinstance(item, str):
                if item not in found:
                    found.append(item)
            else:
                walk(item)

    walk(body)
    return found


def _trusted(info: os.stat_result, what: str, path: Path) -> None:
    if info.st_uid != os.geteuid() or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise LedgerError(
            f"the run ledger {what} {path} is owned or writable by another user: not trusted, so not used "
            "(make it yours and not group/world-writable, or point XDG_STATE_HOME elsewhere)"
        )


def _open(path: Path, flags: int) -> int:
    folder = path.parent
    if flags & os.O_CREAT:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        _trusted(os.stat(folder), "folder", folder)
        fd = os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError as err:
        raise LedgerError(f"the run ledger {path}: {err.strerror or err}") from None
    info = os.fstat(fd)
    try:
        if not stat.S_ISREG(info.st_mode):
            raise LedgerError(f"the run ledger {path} is not a regular file: not used")
        _trusted(info, "file", path)
    except LedgerError:
        os.close(fd)
        raise
    return fd


def append(path: Path, record: Mapping[str, Any]) -> None:
    """Add one line, atomically: under an exclusive lock, one write; a torn last line is closed first."""
    import fcntl

    data = (json.dumps(record, sort_keys=True, separators=(",", ":"), default=str) + "\n").encode()
    if len(data) > MAX_LINE:
        raise LedgerError(
            f"a ledger line of {len(data)} bytes is over the {MAX_LINE}-byte bound: not written"
        )
    fd = _open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT)  # read: the last byte, to close a torn line
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        size = os.fstat(fd).st_size
        if size >= MAX_FILE:
            raise LedgerError(
                f"the run ledger {path} is over {MAX_FILE} bytes: start a new one (move it away)"
            )
        if size and os.pread(fd, 1, size - 1) != b"\n":
            data = b"\n" + data  # a writer killed mid-line: end its torn line so this one stays whole
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    except OSError as err:
        raise LedgerError(f"the run ledger {path}: {err.strerror or err}") from None
    finally:
        os.close(fd)  # closing releases the lock


def read(path: Path) -> tuple[list[dict[str, Any]], list[str]]:
    """Every record, oldest first, and a word for each line skipped (torn by a killed writer, or not JSON)."""
    if not path.exists():
        return [], []
    fd = _open(path, os.O_RDONLY)
    if os.fstat(fd).st_size > MAX_FILE:
        os.close(fd)
        raise LedgerError(f"the run ledger {path} is over {MAX_FILE} bytes: move it away to start a new one")
    records: list[dict[str, Any]] = []
    notes: list[str] = []
    with os.fdopen(fd, "rb") as handle:
        for number, line in enumerate(_lines(handle), start=1):
            if line is None:
                notes.append(f"{path}:{number}: longer than {MAX_LINE} bytes: skipped")
                continue
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except (ValueError, RecursionError):
                record = None
            if not isinstance(record, dict) or not isinstance(record.get("jobId"), str):
                notes.append(f"{path}:{number}: torn or not a ledger record (a writer was killed?): skipped")
                continue
            records.append(record)
    return records, notes


def _lines(handle: Any) -> Iterator[bytes | None]:
    """Each line, None for one longer than MAX_LINE (its rest skipped)."""
    while line := handle.readline(MAX_LINE + 1):
        if len(line) > MAX_LINE and not line.endswith(b"\n"):
            while line and not line.endswith(b"\n"):
                line = handle.readline(MAX_LINE + 1)
            yield None
        else:
            yield line


def _time(value: Any) -> datetime | None:
    text = value.replace("Z", "+00:00") if isinstance(value, str) else ""
    if not (match := re.fullmatch(r"(.*?\d\d:\d\d:\d\d)(\.\d+)?([+-]\d\d:\d\d)?", text)):
        return None
    try:
        return datetime.fromisoformat(match.group(1) + (match.group(3) or "+00:00"))
    except ValueError:
        return None


def end_record(job_id: str, job: Mapping[str, Any], manifest: Mapping[str, Any] | None) -> dict[str, Any]:
    """The ``end`` line of a job: state, exit code, times, and their cost at the manifest's $/h (or None)."""
    state = str(job.get("state") or "").removeprefix("JOB_STATE_")
    start, end = _time(job.get("startTime")), _time(job.get("endTime"))
    hours = None if start is None or end is None else max((end - start).total_seconds(), 0) / 3600
    estimate = (manifest or {}).get("estimate") or {}
    rate = estimate.get("usdPerHour") if isinstance(estimate, dict) else None
    if isinstance(rate, (int, float)) and estimate.get("trials"):
        rate = rate * max(int(estimate.get("parallelTrials") or 1), 1)  # trials run side by side
    cost = round(rate * hours, 2) if isinstance(rate, (int, float)) and hours is not None else None
    record: dict[str, Any] = {
        "format": FORMAT,
        "kind": "end",
        "time": now(),
        "jobId": job_id,
        "state": state,
        "startTime": job.get("startTime"),
        "endTime": job.get("endTime"),
        "hours": None if hours is None else round(hours, 6),
        "cost": cost,
    }
    error = job.get("error") if isinstance(job.get("error"), dict) else None
    if error and "code" in error:
        record["exitCode"] = error["code"]
    return record


def latest(records: Sequence[dict[str, Any]], job_id: str, kind: str) -> dict[str, Any] | None:
    """The newest record of ``kind`` for ``job_id``."""
    return next((r for r in reversed(records) if r.get("jobId") == job_id and r.get("kind") == kind), None)
