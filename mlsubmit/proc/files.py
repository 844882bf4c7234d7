"""The one reader for files a user points mlsubmit at (job configs, and any other small file): bounded in kind,
size and time. It sits beside errors.py at the bottom of the house, so every layer may use it.

A path may name anything: ``/dev/zero`` (endless), a FIFO (blocks until someone writes), a directory, a huge
file. Only regular files are read, opened without blocking (``O_NONBLOCK``: opening a FIFO for reading would
otherwise wait for a writer), and never more than ``max_bytes`` + 1 bytes are read, whatever ``stat`` claimed
(files under /proc report size 0). Every failure is one line naming the file (docs/config.md).
Files mlsubmit wrote itself (a study, a cache entry) are read the same way: another program may have replaced
them.
"""

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
    """``a directory``, ``a FIFO (named pipe)``, ... for a ``st_mode`` that is not a regular file."""
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
    """The bytes of the regular file ``path`` (symlinks followed), at most ``max_bytes`` of them.

    Raises ``error`` (ConfigFileError, exit 2, by default) for a missing, unreadable, non-regular or oversized
    file; the message names the file and never shows its content. ``tail``: a larger file is not an error, its
    last ``max_bytes`` are returned (a log another program keeps appending to).
    """
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as err:
        raise error(f"{path}: {_failure(err, what, reading=False)}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise error(f"{path}: is {file_kind(info.st_mode)}, not a regular file; pass {what}.")
        if tail and info.st_size > max_bytes:
            os.lseek(fd, info.st_size - max_bytes, os.SEEK_SET)
        elif info.st_size > max_bytes:
            raise error(f"{path}: file is {info.st_size} bytes; the limit is {max_bytes} bytes.")
        chunks: list[bytes] = []
        size = 0
        while size <= max_bytes:
            chunk = os.read(fd, min(1 << 20, max_bytes + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > max_bytes and tail:
            return b"".join(chunks)[-max_bytes:]
        if size > max_bytes:
            raise error(f"{path}: file is larger than {max_bytes} bytes; the limit is {max_bytes} bytes.")
        return b"".join(chunks)
    except OSError as err:
        raise error(f"{path}: {_failure(err, what, reading=True)}") from None
    finally:
        os.close(fd)


def _failure(err: OSError, what: str, *, reading: bool) -> str:
    """What went wrong opening or reading a file, and what to do (never the file's content)."""
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
    """``json.loads``, where nesting too deep for the parser is a ValueError like any other malformed text (not a
    RecursionError, which would end the command as a bug). Not UTF-8 is a ValueError too (UnicodeDecodeError)."""
    try:
        return json.loads(data)
    except RecursionError:
        raise ValueError("nested too deeply") from None


def expand_user(raw: str, what: str) -> Path:
    """``raw`` with a leading ``~`` or ``~user`` expanded; a UsageError naming ``what`` (a flag) when there is no
    such home directory (``$HOME`` unset and no password entry, or no such user), never a RuntimeError."""
    try:
        return Path(raw).expanduser()
    except RuntimeError:
        head = raw.split("/", 1)[0]
        raise UsageError(
            f"{what} {raw}: {head} names no home directory here (no such user, or $HOME is unset); write the "
            "path in full"
        ) from None


def user_cache_dir(environ: Mapping[str, str]) -> Path | None:
    """``$XDG_CACHE_HOME``, else ``~/.cache`` (``$HOME``, else the user's home in the password database); None
    when there is none: a machine user with no home directory, or a home that does not exist. A relative
    ``XDG_CACHE_HOME`` is ignored (https://specifications.freedesktop.org/basedir-spec/latest/), and so is
    ``os.path.expanduser``'s fallback, a literal ``~`` that would make a folder of that name here."""
    return user_dir(environ, "XDG_CACHE_HOME", ".cache")


def user_dir(environ: Mapping[str, str], variable: str, under_home: str) -> Path | None:
    """``$variable`` (an XDG base directory, when absolute), else ``~/under_home``; None as for
    :func:`user_cache_dir` (``XDG_STATE_HOME`` and ``.local/state`` for the run ledger, docs/cost.md)."""
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
