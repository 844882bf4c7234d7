"""Every digest a package needs from one pass: content address, sha256, MD5, CRC32C; remembered and cached."""

from __future__ import annotations

import base64
import gzip
import hashlib
import os
from pathlib import Path

import google_crc32c
import pytest

from mlsubmit.sdist import digest as digest_module
from mlsubmit.sdist.digest import Hasher, cache_dir_for, digests_of
from mlsubmit.sdist.tarball import TarEntry, write_tarball


def expected(data: bytes) -> tuple[int, str, str, str]:
    return (
        len(data),
        hashlib.sha256(data).hexdigest(),
        base64.b64encode(hashlib.md5(data).digest()).decode(),
        base64.b64encode(google_crc32c.value(data).to_bytes(4, "big")).decode(),
    )


@pytest.mark.parametrize("size", [0, 1, 300 * 1024, 5 * 1024 * 1024 + 7])
def test_one_pass_gives_every_digest(tmp_path: Path, size: int) -> None:
    data = os.urandom(size)
    path = tmp_path / "f.bin"
    path.write_bytes(data)

    d = digests_of(path)

    assert (d.size, d.sha256, d.md5, d.crc32c) == expected(data)
    assert d.content == d.sha256  # a file mlsubmit did not write is named by its bytes


def test_the_hasher_accepts_pieces_of_any_size() -> None:
    data = os.urandom(1024 * 1024)
    hasher = Hasher()
    for start, end in [(0, 10), (10, 600_000), (600_000, 600_001), (600_001, len(data))]:
        hasher.update(data[start:end])
    d = hasher.digests()
    assert (d.size, d.sha256, d.md5, d.crc32c) == expected(data)


def test_a_tarball_is_named_by_its_uncompressed_stream_and_not_read_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = write_tarball([TarEntry("t/a.py", data=b"print(1)\n")], tmp_path / "t.tar.gz")
    data = out.read_bytes()

    monkeypatch.setattr(digest_module, "Hasher", None)  # any read would need a Hasher
    d = digests_of(out)

    assert d.content == hashlib.sha256(gzip.decompress(data)).hexdigest() != d.sha256
    assert (d.size, d.sha256, d.md5, d.crc32c) == expected(data)


def test_a_rewritten_tarball_is_hashed_again(tmp_path: Path) -> None:
    out = write_tarball([TarEntry("t/a.py", data=b"print(1)\n")], tmp_path / "t.tar.gz")
    out.write_bytes(b"replaced by someone else")

    d = digests_of(out)

    assert d.sha256 == d.content == hashlib.sha256(b"replaced by someone else").hexdigest()


def test_large_files_are_cached_and_a_changed_file_misses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(digest_module, "RACY_NS", 0)  # cache a file just written
    monkeypatch.setattr(digest_module, "CACHE_MIN_SIZE", 10)
    cache = cache_dir_for({"XDG_CACHE_HOME": str(tmp_path / "cache")})
    path = tmp_path / "big.whl"
    path.write_bytes(b"0123456789abcdef")
    first = digests_of(path, cache_dir=cache)
    assert len(list(cache.iterdir())) == 1

    reads: list[int] = []
    real = digest_module.Hasher

    class Counting(real):  # type: ignore[misc,valid-type]
        def update(self, data: bytes) -> None:
            reads.append(len(data))
            super().update(data)

    monkeypatch.setattr(digest_module, "Hasher", Counting)
    assert digests_of(path, cache_dir=cache) == first
    assert reads == []  # from the cache

    path.write_bytes(b"0123456789abcdeX")  # same size, new content (new change time)
    changed = digests_of(path, cache_dir=cache)
    assert reads and changed.sha256 == hashlib.sha256(b"0123456789abcdeX").hexdigest()


def test_a_corrupt_cache_entry_is_ignored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(digest_module, "RACY_NS", 0)  # cache a file just written
    monkeypatch.setattr(digest_module, "CACHE_MIN_SIZE", 1)
    cache = tmp_path / "cache"
    path = tmp_path / "f"
    path.write_bytes(b"payload")
    digests_of(path, cache_dir=cache)
    [entry] = cache.iterdir()
    entry.write_text("{not json")

    assert digests_of(path, cache_dir=cache).sha256 == hashlib.sha256(b"payload").hexdigest()


def test_cache_location_follows_xdg(tmp_path: Path) -> None:
    assert cache_dir_for({"XDG_CACHE_HOME": "/x"}) == Path("/x/mlsubmit/digests")
    assert cache_dir_for({"HOME": str(tmp_path)}) == tmp_path / ".cache" / "mlsubmit" / "digests"
    # No home directory (a machine user): no cache, rather than a folder named "~" or ".cache" here.
    assert cache_dir_for({"HOME": str(tmp_path / "missing")}) is None
    assert cache_dir_for({"HOME": "relative", "XDG_CACHE_HOME": "also-relative"}) is None


@pytest.mark.parametrize(
    "field_value",
    [("content", "../../other/name"), ("sha256", "x" * 64), ("size", "16"), ("md5", "short"), ("crc32c", 5)],
)
def test_a_malformed_cache_entry_is_not_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, field_value: tuple[str, object]
) -> None:
    """The content address becomes part of an object name: a tampered entry must not reach it."""
    import json

    monkeypatch.setattr(digest_module, "RACY_NS", 0)  # cache a file just written
    monkeypatch.setattr(digest_module, "CACHE_MIN_SIZE", 1)
    cache = tmp_path / "cache"
    path = tmp_path / "f"
    path.write_bytes(b"payload")
    digests_of(path, cache_dir=cache)
    [entry] = cache.iterdir()
    data = json.loads(entry.read_text())
    data[field_value[0]] = field_value[1]
    entry.write_text(json.dumps(data))

    found = digests_of(path, cache_dir=cache)

    assert found.content == found.sha256 == hashlib.sha256(b"payload").hexdigest()
    assert found.size == 7


def test_a_file_changed_less_than_the_racy_margin_ago_is_neither_cached_nor_trusted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """git's racy-clean rule: a rewrite within the file system's timestamp tick keeps the change time, so only
    digests whose hashing began RACY_NS after the last change are kept (and an entry without that is hashed)."""
    import json

    monkeypatch.setattr(digest_module, "CACHE_MIN_SIZE", 1)
    cache = tmp_path / "cache"
    path = tmp_path / "f"
    path.write_bytes(b"payload")
    digests_of(path, cache_dir=cache)
    assert not cache.exists() or not list(cache.iterdir())  # just changed: nothing cached

    monkeypatch.setattr(digest_module, "RACY_NS", 0)
    digests_of(path, cache_dir=cache)
    [entry] = cache.iterdir()
    data = json.loads(entry.read_text())
    data["sha256"] = data["content"] = "f" * 64  # what another version of the file had
    data["hashed_ns"] = path.stat().st_ctime_ns + digest_module.RACY_NS - 1  # hashing began before the change
    monkeypatch.setattr(digest_module, "RACY_NS", 1)
    entry.write_text(json.dumps(data))
    assert digests_of(path, cache_dir=cache).sha256 == hashlib.sha256(b"payload").hexdigest()
    del data["hashed_ns"]  # an entry of an older mlsubmit: hashed again, once
    entry.write_text(json.dumps(data))
    assert digests_of(path, cache_dir=cache).sha256 == hashlib.sha256(b"payload").hexdigest()
