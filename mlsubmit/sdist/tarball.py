"""Byte-reproducible .tar.gz files (entry order, mtimes, owners, modes and the gzip header pinned), named by the
sha256 of their uncompressed tar stream, taken while it is written."""

from __future__ import annotations

import io
import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, NamedTuple

from mlsubmit.errors import PackagingError
from mlsubmit.sdist import never_ship
from mlsubmit.sdist.digest import Held

if TYPE_CHECKING:
    import tarfile

#: Every entry's mtime. 1980-01-02 rather than 0: wheels are zip files, and zip cannot store dates before
#: 1980, so `pip install` of an sdist whose files date from 1970 can fail when it builds the wheel.
FIXED_MTIME = 315619200
#: zlib level: 6 is ~3x faster than 9 on large packages for ~1% more bytes. Part of the reproducible output.
COMPRESS_LEVEL = 6
_COPY_BUFFER = 1024 * 1024
#: Bounds of what write_tarball keeps in memory for its caller (Python modules are rarely past a few 100 kB).
MAX_KEPT_FILE_BYTES = 2 * 1024 * 1024
MAX_KEPT_BYTES = 64 * 1024 * 1024
#: A tarball of files up to this size in all is built in memory; a larger one in a nameless temporary file.
MAX_HELD_BYTES = 64 * 1024 * 1024


class TarEntry(NamedTuple):
    """A regular file to put in the archive: its contents come from `source` (a path) or `data`."""

    arcname: str
    source: Path | None = None
    data: bytes | None = None
    executable: bool = False
    keep: bool = False  # a `source` whose bytes the caller wants back (write_tarball's `kept`)


def _tarinfo(name: str, size: int, executable: bool) -> tarfile.TarInfo:
    """The only two modes we write: 0o755 for directories and executables, 0o644 for the rest."""
    import tarfile

    info = tarfile.TarInfo(name)
    info.size, info.mtime, info.mode = size, FIXED_MTIME, 0o755 if executable else 0o644
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    return info


def _sha256(size: int) -> Any:
    """A sha256 for `size` bytes: CPython's own below 256 KiB, where loading OpenSSL's costs more than it saves."""
    for name in ("_sha2", "_sha256") if size <= 256 * 1024 else ():
        try:
            return __import__(name).sha256()
        except ImportError:
            pass
    import hashlib

    return hashlib.sha256()


class _Stream:
    """A tar stream as tarfile writes it (PAX); names all ASCII and <= 100 get ustar headers without tarfile (3 ms)."""

    def __init__(self, out: Any, names: list[str] | None) -> None:  # out: a _Gzip
        self.out, self.tar = out, None
        if names is None or not all(name.isascii() and len(name) <= 100 for name in names):
            import tarfile

            self.tar = tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT)  # noqa: SIM115 - closed by close()

    def add(self, name: str, size: int, executable: bool, data: Any) -> None:
        """Add the regular file `name` of `size` bytes, read from `data`."""
        if self.tar is not None:
            self.tar.addfile(_tarinfo(name, size, executable), data)
            return
        fields = (name.encode().ljust(100, b"\0"), 0o755 if executable else 0o644, 0, 0, size, FIXED_MTIME)
        header = b"%s%07o\0%07o\0%07o\0%011o\0%011o\0        0" % fields
        header = (header + b"\0" * 100 + b"ustar\x0000").ljust(512, b"\0")
        self.out.write(header[:148] + b"%06o\0" % sum(header) + header[155:])
        left = size
        while left:
            if not (chunk := data.read(min(left, _COPY_BUFFER))):
                raise OSError("unexpected end of data")
            self.out.write(chunk)
            left -= len(chunk)
        self.out.write(b"\0" * (-size % 512))

    def close(self) -> None:
        """Two zero blocks, then zeros up to a whole record of 20 blocks (tarfile's end of archive)."""
        if self.tar is not None:
            self.tar.close()
        else:
            self.out.write(b"\0" * 1024)
            self.out.write(b"\0" * (-self.out.tell() % 10240))


class _Gzip:
    """gzip.GzipFile(filename="", mtime=0)'s bytes without loading gzip (1 ms of a dry run); also fed to `sha`."""

    def __init__(self, out: Any, sha: Any) -> None:
        import zlib

        self.out, self.sha, self.crc, self.size, self.zlib = out, sha, 0, 0, zlib
        self.deflate = zlib.compressobj(COMPRESS_LEVEL, zlib.DEFLATED, -zlib.MAX_WBITS, zlib.DEF_MEM_LEVEL, 0)
        out.write(b"\x1f\x8b\x08\0\0\0\0\0" + {9: b"\x02", 1: b"\x04"}.get(COMPRESS_LEVEL, b"\0") + b"\xff")

    def write(self, data: bytes) -> None:
        self.sha.update(data)
        self.out.write(self.deflate.compress(data))
        self.crc, self.size = self.zlib.crc32(data, self.crc), self.size + len(data)

    def tell(self) -> int:
        return self.size

    def close(self) -> None:
        trailer = self.crc.to_bytes(4, "little") + (self.size & 0xFFFFFFFF).to_bytes(4, "little")
        self.out.write(self.deflate.flush() + trailer)


@contextmanager
def _held(name: str, size: int, out: list[Held], names: list[str] | None) -> Iterator[_Stream]:
    """A reproducible tar.gz stream, held (in memory up to :data:`MAX_HELD_BYTES`) into `out` when it closes."""
    if size <= MAX_HELD_BYTES:
        raw: IO[bytes] = io.BytesIO()
    else:
        import tempfile

        raw = tempfile.TemporaryFile()  # noqa: SIM115 - held open by the plan, closed with it
    sha = _sha256(size)
    gz = _Gzip(raw, sha)
    stream = _Stream(gz, names)
    yield stream
    stream.close()
    gz.close()
    out.append(Held(name, raw, sha.hexdigest()))


def write_tarball(entries: Iterable[TarEntry], out_path: Path) -> Path:
    """Write `entries` (regular files only) to `out_path` as a reproducible .tar.gz (its digests remembered)."""
    entries = list(entries)
    size = sum(len(e.data) if e.data is not None else os.path.getsize(e.source or "") for e in entries)
    return hold_tarball(entries, out_path.name, size).write(out_path.parent)


def hold_tarball(
    entries: Iterable[TarEntry],
    name: str,
    size: int,
    kept: dict[str, bytes] | None = None,
    left_out: dict[str, str] | None = None,
) -> Held:
    """The reproducible tarball `name` of `entries`, held; `kept` and `left_out` filled on the way."""
    ordered = sorted(entries, key=lambda e: e.arcname)
    if len({e.arcname for e in ordered}) != len(ordered):
        raise PackagingError(f"internal error: duplicate archive entries in {name}")
    held: list[Held] = []
    budget = MAX_KEPT_BYTES
    with _held(name, size, held, [e.arcname for e in ordered]) as tar:
        for entry in ordered:
            if entry.data is not None:
                tar.add(entry.arcname, len(entry.data), entry.executable, io.BytesIO(entry.data))
                continue
            assert entry.source is not None
            try:
                with open(entry.source, "rb") as handle:
                    # Size from the open descriptor: consistent even if the file was replaced since the walk.
                    length = os.fstat(handle.fileno()).st_size
                    exact = _Exact(handle, length, entry.source)
                    head = exact.read(never_ship.SNIFF_BYTES) if left_out is not None else b""
                    if left_out is not None and (secret := never_ship.reason_by_content(head)):
                        left_out[entry.arcname.partition("/")[2] or entry.arcname] = secret
                        continue
                    if kept is not None and entry.keep and length <= min(MAX_KEPT_FILE_BYTES, budget):
                        data = kept[entry.arcname] = head + b"".join(iter(exact.read, b""))
                        budget -= length
                        tar.add(entry.arcname, length, entry.executable, io.BytesIO(data))
                    else:
                        tar.add(entry.arcname, length, entry.executable, _Replay(head, exact))
            except OSError as exc:
                raise PackagingError(f"cannot read {entry.source} while packaging: {exc}") from exc
    return held[0]


class _Exact:
    """Read exactly `size` bytes from `handle`, failing clearly if the file shrank while we packaged it."""

    def __init__(self, handle: IO[bytes], size: int, path: Path) -> None:
        self._handle, self._left, self._path = handle, size, path

    def read(self, n: int = -1) -> bytes:
        n = self._left if n < 0 else min(n, self._left)
        data = self._handle.read(min(n, _COPY_BUFFER)) if n else b""
        if n and not data:
            raise PackagingError(f"{self._path} changed while it was being packaged; run the command again")
        self._left -= len(data)
        return data


def normalize_tarball(source: Path, left_out: dict[str, str], origin: Path) -> Held:
    """A build backend's sdist re-packed reproducibly and held, what never ships put in `left_out`."""
    import tarfile

    credentials = never_ship.Credentials(within=origin)
    held: list[Held] = []
    try:
        with tarfile.open(source, mode="r:*") as src:
            members = sorted(src.getmembers(), key=lambda m: m.name)
            with _held(source.name, sum(m.size for m in members), held, None) as stream:
                tar = stream.tar
                assert tar is not None
                for member in members:
                    info = _tarinfo(
                        member.name,
                        member.size if member.isfile() else 0,
                        member.isdir() or bool(member.mode & 0o111),
                    )
                    info.type, info.linkname = member.type, member.linkname
                    if member.issym():
                        info.mode = 0o777
                    fileobj: Any = src.extractfile(member) if member.isfile() else None
                    if fileobj is not None:
                        head = fileobj.read(never_ship.SNIFF_BYTES)
                        rel = member.name.partition("/")[2] or member.name
                        if secret := never_ship.reason(rel, origin / rel, credentials, head=head):
                            left_out[rel] = secret
                            continue
                        fileobj = _Replay(head, fileobj)
                    tar.addfile(info, fileobj)
    except (tarfile.TarError, OSError, EOFError) as exc:
        raise PackagingError(f"the build backend wrote an unreadable sdist {source.name}: {exc}") from exc
    return held[0]


class _Replay:
    """A file read from its start again after its first bytes (`head`) were read to look at them."""

    def __init__(self, head: bytes, rest: Any) -> None:
        self._head, self._rest = head, rest

    def read(self, n: int = -1) -> bytes:
        """Up to ``n`` bytes, as many as asked while the file lasts (tarfile treats a short read as the end)."""
        if not self._head:
            return bytes(self._rest.read(n))
        if n < 0:
            data, self._head = self._head + bytes(self._rest.read()), b""
            return data
        data, self._head = self._head[:n], self._head[n:]
        if len(data) < n:
            data += bytes(self._rest.read(n - len(data)))
        return data
