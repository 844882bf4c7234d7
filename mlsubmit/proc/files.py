"""The one reader for files a user points mlsubmit at (job configs, and any other small file): bounded in kind,
size and time. It sits beside errors.py at the bottom of the house, so every layer may use it.

A path may name anything: ``/dev/zero`` (endless), a FIFO (blocks until someone writes), a directory, a huge
file. Only regular files are read, opened without blocking (``O_NONBLOCK``: opening a FIFO for reading would
otherwise wait for a writer), and never more than ``max_bytes`` + 1 bytes are read, whatever ``stat`` claimed
(files under /proc report size 0). Every failure is one line naming the file (README "Config files").
"""

from __future__ import annotations

import os
import stat

from mlsubmit.errors import ConfigFileError, MlsubmitError

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
) -> bytes:
    """The bytes of the regular file ``path`` (symlinks followed), at most ``max_bytes`` of them.

    Raises ``error`` (ConfigFileError, exit 2, by default) for a missing, unreadable, non-regular or oversized
    file; the message names the file and never shows its content.
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
        if info.st_size > max_bytes:
            raise error(f"{path}: file is {info.st_size} bytes; the limit is {max_bytes} bytes.")
        chunks: list[bytes] = []
        size = 0
        while size <= max_bytes:
            chunk = os.read(fd, min(1 << 20, max_bytes + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
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
