"""A package's digests from one read (docs/training.md): ``content`` (a tarball's tar stream's sha256, else the
file's), ``sha256``, ``md5``, ``crc32c``; cached for large files by path, device, inode, size, mtime and ctime, and
trusted if hashed :data:`RACY_NS` after a change (a rewrite in one tick: https://git-scm.com/docs/racy-git)."""

from __future__ import annotations

import contextlib
import json
import os
import re
import stat
import time
from collections.abc import Iterator, Mapping
from functools import cached_property
from pathlib import Path
from typing import IO, Any, NamedTuple

from mlsubmit.errors import MlsubmitError
from mlsubmit.proc.files import file_kind, parse_json, read_bounded, user_cache_dir

_READ_BUFFER = 4 * 1024 * 1024
#: Files from this size on have their digests cached on disk (smaller ones hash faster than a cache lookup).
CACHE_MIN_SIZE = 16 * 1024 * 1024
MAX_ENTRY_BYTES = 4096  # an entry is ~400 bytes
#: How long after a file's last change its hashing must begin for the digests to be cached and trusted: more
#: than any file system's timestamp tick (FAT's is 2 s; ext4, xfs and tmpfs tick with the kernel's clock).
RACY_NS = 2_000_000_000


class Digests(NamedTuple):
    """What staging needs to know of one file's bytes (see the module docstring)."""

    size: int
    sha256: str
    content: str
    md5: str
    crc32c: str


class Hasher:
    """Feeds sha256, MD5 (unless ``md5=False``) and CRC32C with the same bytes; MD5 runs in a second thread."""

    def __init__(self, md5: bool = True) -> None:
        import hashlib  # only when something is hashed: a dry run of gs:// packages hashes nothing

        import google_crc32c

        self._sha = hashlib.sha256()
        self._md5 = hashlib.md5(usedforsecurity=False) if md5 else None
        self._extend = google_crc32c.extend
        self._crc = self._size = 0
        self._pool: Any = None  # a ThreadPoolExecutor once a large piece arrives
        self._pending: Any = None

    def update(self, data: bytes) -> None:
        """Add `data` (hashlib releases the GIL on large buffers, so the two threads run in parallel)."""
        if not data:
            return
        self._wait()
        self._size += len(data)
        if self._md5 is not None and len(data) >= 256 * 1024:
            if self._pool is None:
                from concurrent.futures import ThreadPoolExecutor

                self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="mlsubmit-md5")
            self._pending = self._pool.submit(self._md5.update, data)
        elif self._md5 is not None:
            self._md5.update(data)
        self._sha.update(data)
        self._crc = self._extend(self._crc, data)

    def _wait(self) -> None:
        if self._pending is not None:
            self._pending.result()
            self._pending = None

    def digests(self, content: str | None = None) -> Digests:
        """The digests of everything added; `content` overrides the content address (default: sha256)."""
        self._wait()
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None
        import base64

        sha = self._sha.hexdigest()
        md5 = "" if self._md5 is None else base64.b64encode(self._md5.digest()).decode("ascii")
        crc32c = base64.b64encode(int(self._crc).to_bytes(4, "big")).decode("ascii")
        return Digests(self._size, sha, content or sha, md5, crc32c)

    def read(self, source: Local, also: Any = None) -> Hasher:
        """Add all of `source` (fed to `also` too, a hashlib object, when given); return self."""
        with opened(source) as handle:
            while chunk := handle.read(_READ_BUFFER):
                self.update(chunk)
                if also is not None:
                    also.update(chunk)
        return self


class Held:
    """A tarball held in memory (or a nameless temporary file): its name, bytes and content address."""

    def __init__(self, name: str, file: IO[bytes], content: str) -> None:
        self.name, self.file, self.content = name, file, content

    def __str__(self) -> str:
        return self.name

    @cached_property
    def digests(self) -> Digests:
        """Its digests, from one read of the held bytes when first asked (a dry run never asks)."""
        return Hasher().read(self).digests(self.content)

    def write(self, folder: Path) -> Path:
        """Write it into ``folder`` under its name (its digests remembered for that file); return the path."""
        path = folder / self.name
        folder.mkdir(parents=True, exist_ok=True)
        with open(path, "wb") as out, opened(self) as data:
            while chunk := data.read(_READ_BUFFER):
                out.write(chunk)
        remember(path, self.digests)
        return path


Local = Path | Held  # a local package: a file, or a tarball mlsubmit holds


@contextlib.contextmanager
def opened(local: Local) -> Iterator[IO[bytes]]:
    """``local``'s bytes from their start: the file opened for reading, or the held bytes rewound."""
    if isinstance(local, Held):
        local.file.seek(0)
        yield local.file
    else:
        with open(local, "rb") as handle:
            yield handle


_known: dict[tuple[str, int, int, int, int], Digests] = {}


def _identity(path: Path) -> tuple[str, int, int, int, int]:
    st = os.stat(path)
    return (os.path.realpath(path), st.st_dev, st.st_ino, st.st_size, st.st_ctime_ns)


def remember(path: Path, digests: Digests) -> None:
    """Record the digests of a file just written (valid while its size, inode and change time hold)."""
    _known[_identity(path)] = digests


def cache_dir_for(environ: Mapping[str, str]) -> Path | None:
    """``$XDG_CACHE_HOME/mlsubmit/digests`` (or under ``~/.cache``); None without a home directory."""
    base = user_cache_dir(environ)
    return None if base is None else base / "mlsubmit" / "digests"


def _cache_entry(path: Path, cache_dir: Path) -> tuple[Path, str] | None:
    st = os.stat(path)
    if st.st_size < CACHE_MIN_SIZE:
        return None
    key = json.dumps(
        [os.path.realpath(path), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]
    )
    import hashlib

    return cache_dir / f"{hashlib.sha256(key.encode()).hexdigest()[:40]}.json", key


def _untrusted(path: Path, info: os.stat_result | None = None) -> str | None:
    """Why ``path`` (a cache folder, its parent, or an entry's ``info``) is not only ours to write, else None."""
    if info is None:
        try:
            info = os.lstat(path)
        except FileNotFoundError:
            return None  # nothing there yet: created by us, private
        except OSError as err:
            return f"{path} cannot be examined ({err.strerror or err})"
        if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode):
            return f"{path} is not a plain folder"
    if info.st_uid != os.geteuid():
        return f"{path} belongs to another user"
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return f"{path} can be written by other users"
    return None


def _cache_problem(entry: tuple[Path, str]) -> str | None:
    return _untrusted(entry[0].parent) or _untrusted(entry[0].parent.parent)


def _cached(entry: tuple[Path, str], size: int) -> Digests | None:
    """The entry's digests, or None (absent, or ignored with a warning: it cannot be trusted or is damaged)."""
    path = entry[0]
    try:
        info = os.lstat(path)
    except OSError:
        return None  # absent: hash the file
    problem = _cache_problem(entry)
    if problem is None and not stat.S_ISREG(info.st_mode):
        problem = f"{path} is {file_kind(info.st_mode)}, not a regular file"
    problem = problem or _untrusted(path, info)
    if problem is None:
        try:
            data = parse_json(read_bounded(str(path), what="a cache entry", max_bytes=MAX_ENTRY_BYTES))
            if not isinstance(data, dict):
                raise ValueError("not a JSON object")
            if data.pop("key", None) != entry[1]:
                return None  # another file's entry (a shortened hash): not ours
            hashed_ns = data.pop("hashed_ns", None)
            found = Digests(**data)
            if not _well_formed(found):
                problem = f"{path} does not hold well-formed digests"
            elif found.size != size:
                problem = f"{path} names {found.size} bytes, but the file has {size}"
            elif not _settled(entry, hashed_ns):
                return None  # hashed too soon after a change (or by an older mlsubmit): hash the file, no warning
            else:
                return found
        except (MlsubmitError, ValueError, TypeError) as err:
            problem = f"{path} cannot be read ({str(err)[:120]})"
    import logging  # only to say why a cache entry is not trusted

    logging.getLogger(__name__).warning(
        "digest cache entry ignored: %s; the file is hashed instead.", problem
    )
    return None


def _settled(entry: tuple[Path, str], hashed_ns: object) -> bool:
    """Whether hashing began :data:`RACY_NS` or more after the key's change time (the module docstring)."""
    changed_ns = json.loads(entry[1])[-1]
    return type(hashed_ns) is int and type(changed_ns) is int and hashed_ns - changed_ns >= RACY_NS


def _well_formed(found: Digests) -> bool:
    # The content address goes into an object name: take only well-formed entries.
    hex64, b64 = r"[0-9a-f]{64}", r"[A-Za-z0-9+/]+=*"
    shapes = [(found.sha256, hex64, 64), (found.content, hex64, 64), (found.md5, b64, 24)]
    shapes.append((found.crc32c, b64, 8))
    return type(found.size) is int and all(
        isinstance(v, str) and len(v) == n and re.fullmatch(shape, v) for v, shape, n in shapes
    )


def _store(entry: tuple[Path, str], digests: Digests, hashed_ns: int) -> None:
    if _cache_problem(entry) is not None or not _settled(entry, hashed_ns):
        return  # never write into a folder others control (the warning came with the lookup), nor racy digests
    try:
        entry[0].parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        import tempfile  # shutil and its compressors: only when a cache entry is written

        fd, tmp = tempfile.mkstemp(dir=entry[0].parent, prefix=".tmp-")
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump({"key": entry[1], **digests._asdict(), "hashed_ns": hashed_ns}, handle)
        os.replace(tmp, entry[0])
    except OSError:
        pass  # a cache only: a read-only home still stages


def drop(taken: Stamp | None) -> None:
    """Remove a cache entry the service contradicted (an object at its name with other bytes)."""
    if taken is not None and _cache_problem(taken[:2]) is None:
        with contextlib.suppress(OSError):
            taken[0].unlink()


def digests_of(path: Local, *, also: Any = None, cache_dir: Path | None = None, md5: bool = True) -> Digests:
    """The digests of `path`: held, remembered, cached (`cache_dir`, large files) or read once (``md5`` False:
    ``""``, cached only by :func:`keep`); `also`, a hashlib object, is fed the same bytes (read all the same)."""
    if isinstance(path, Held):
        if also is not None:
            Hasher(md5=False).read(path, also)
        return path.digests
    entry = None
    hashed_ns = time.time_ns()  # before the stat that makes the entry's key: see _settled
    if also is None:
        if (found := _known.get(_identity(path))) is not None:
            return found
        entry = _cache_entry(path, cache_dir) if cache_dir is not None else None
        if entry is not None and (cached := _cached(entry, os.stat(path).st_size)) is not None:
            return cached
    hasher = Hasher(md5=md5).read(path, also)
    remembered = _known.get(_identity(path))
    digests = hasher.digests(remembered.content if remembered else None)
    if digests.md5 and entry is not None and _cache_entry(path, cache_dir or Path()) == entry:  # unchanged
        _store(entry, digests, hashed_ns)
    return digests


Stamp = tuple[Path, str, int]  # the cache entry, its key, and when the stamp was taken (ns, wall clock)


def stamp(path: Local, cache_dir: Path | None) -> Stamp | None:
    """What identifies this version of `path` in the digest cache (None: not cached, a small or held file, or no
    cache). Taken before hashing: :func:`keep` stores digests only while the file still has the same stamp."""
    taken_ns = time.time_ns()
    try:
        entry = _cache_entry(path, cache_dir) if cache_dir is not None and isinstance(path, Path) else None
    except OSError:
        return None  # hashing it names the problem
    return None if entry is None else (*entry, taken_ns)


def keep(path: Local, taken: Stamp | None, digests: Digests) -> None:
    """Cache a complete set of digests (MD5 included) of `path` if it is unchanged since `taken`."""
    if taken is None or not digests.md5 or isinstance(path, Held):
        return
    with contextlib.suppress(OSError):
        if _cache_entry(path, taken[0].parent) == taken[:2]:  # unchanged
            _store(taken[:2], digests, taken[2])


def md5_of(path: Local) -> str:
    """Base64 MD5 of the file (one read), as Cloud Storage reports ``md5Hash``."""
    import base64
    import hashlib

    md5 = hashlib.md5(usedforsecurity=False)
    with opened(path) as handle:
        while chunk := handle.read(_READ_BUFFER):
            md5.update(chunk)
    return base64.b64encode(md5.digest()).decode("ascii")
