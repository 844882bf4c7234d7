"""The one reader for files a user points mlsubmit at, bounded in kind, size and time (regular files only, opened
``O_NONBLOCK``, never more than ``max_bytes`` + 1 bytes read); each failure one line naming it (docs/config.md)."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mlsubmit.errors import ConfigFileError, MlsubmitError, UsageError

MAX_CONFIG_BYTES = 4 * 1024 * 1024

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def file_kind(mode: int) -> str:
    """``a directory``, ``a FIFO (named pipe)``, ... for a non-regular ``st_mode``."""
    for test, name in _KINDS:
        if test(mode):
            return name
    return "not a regular file"


def read_bounded(
    path: str,
    *,
    what: str = "a YAML or JSON job config file",
    max_bytes: int = MAX_CONFIG_BYTES,
    error: type[MlsubmitError] = ConfigFileError,
    tail: bool = False,
) -> bytes:
    """The bytes of the regular file ``path``, at most ``max_bytes``; else ``error`` naming the file (never its
    content). ``tail``: a larger file gives its last ``max_bytes`` (a log another program appends to)."""
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as err:
        raise error(f"{path}: {_failure(err, what, reading=False)}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise error(f"{path}: is {file_kind(info.st_mode)}, not a regular file; pass {what}.")
        if info.st_size > max_bytes and not tail:
            raise error(f"{path}: file is {info.st_size} bytes; the limit is {max_bytes} bytes.")
        if info.st_size > max_bytes:
            os.lseek(fd, info.st_size - max_bytes, os.SEEK_SET)
        chunks: list[bytes] = []
        size = 0
        while size <= max_bytes and (chunk := os.read(fd, min(1 << 20, max_bytes + 1 - size))):
            chunks.append(chunk)
            size += len(chunk)
        if size > max_bytes and not tail:
            raise error(f"{path}: file is larger than {max_bytes} bytes; the limit is {max_bytes} bytes.")
        return b"".join(chunks)[-max_bytes:]
    except OSError as err:
        raise error(f"{path}: {_failure(err, what, reading=True)}") from None
    finally:
        os.close(fd)


def _failure(err: OSError, what: str, *, reading: bool) -> str:
    if isinstance(err, FileNotFoundError):
        return "no such file; check the path."
    if isinstance(err, PermissionError):
        return "permission denied; make the file readable."
    if isinstance(err, BlockingIOError):
        return f"cannot be read without waiting; pass {what}."
    if isinstance(err, IsADirectoryError):
        return f"is a directory, not a regular file; pass {what}."
    if reading:
        return f"cannot read: {err.strerror or err}."
    return f"cannot open: {err.strerror or err}; pass {what}."


def parse_json(data: bytes | str) -> Any:
    """``json.loads``, where nesting too deep is a ValueError (not a RecursionError, a bug's exit)."""
    try:
        return json.loads(data)
    except RecursionError:
        raise ValueError("nested too deeply") from None


def expand_user(raw: str, what: str) -> Path:
    """``raw`` with ``~`` or ``~user`` expanded; a UsageError naming ``what`` (a flag) when there is no such home."""
    try:
        return Path(raw).expanduser()
    except RuntimeError:
        head = raw.split("/", 1)[0]
        raise UsageError(
            f"{what} {raw}: {head} names no home directory here (no such user, or $HOME is unset); write the "
            "path in full"
        ) from None


def user_cache_dir(environ: Mapping[str, str]) -> Path | None:
    """``$XDG_CACHE_HOME``, else ``~/.cache``; None as for :func:`user_dir`."""
    return user_dir(environ, "XDG_CACHE_HOME", ".cache")


def user_dir(environ: Mapping[str, str], variable: str, under_home: str) -> Path | None:
    """``$variable`` when absolute, else ``~/under_home`` (``$HOME``, else the password database); None for a
    user without an existing home. A relative XDG variable is ignored
    (https://specifications.freedesktop.org/basedir-spec/latest/), and so is ``expanduser``'s literal ``~``."""
    xdg = environ.get(variable) or ""
    if os.path.isabs(xdg):
        return Path(xdg)
    home = environ.get("HOME") or ""
    if not home:
        try:
            import pwd

            home = pwd.getpwuid(os.getuid()).pw_dir
        except (ImportError, KeyError):
            return None
    if not os.path.isabs(home) or not os.path.isdir(home):
        return None
    return Path(home) / under_home


def package_dir_problem(path: Path, shown: str) -> str | None:
    """Why ``path`` (``shown`` in messages) cannot be a ``--package-path`` (a directory holding ``__init__.py``)."""
    if not path.exists():
        return f"{shown}: no such directory"
    if not path.is_dir():
        return f"{shown} is a file; pass the directory that holds the trainer's __init__.py"
    if not (path / "__init__.py").is_file():
        return (
            f"{shown} has no __init__.py, so it is not a Python package; create an empty "
            f"{path / '__init__.py'} (the cloud build needs it too)"
        )
    return None
