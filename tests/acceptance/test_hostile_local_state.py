"""Files mlsubmit wrote itself are input too (docs/training.md, docs/security.md).

The digest cache is only a cache: an entry another user could write, of the wrong shape, or one that the
package's size contradicts is ignored with a warning, never trusted to name the code a job runs, and a FIFO or
``/dev/zero`` in its place is no hang. The janitor's list of temporary folders cannot be confused by a path
holding a newline: nothing outside mlsubmit's own temporary folders is ever removed.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from mlsubmit.sdist.digest import CACHE_MIN_SIZE, RACY_NS, stamp
from tests.fakes.cli import run_cli_process

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="FIFOs and /dev/zero (Linux)")

REPO = Path(__file__).resolve().parents[2]
FORGED = "f" * 64


@pytest.fixture
def package(tmp_path: Path) -> Path:
    """A package large enough for the digest cache (its bytes differ per test run)."""
    path = tmp_path / "big-0.1.tar.gz"
    with path.open("wb") as handle:
        handle.write(os.urandom(1024))
        handle.truncate(CACHE_MIN_SIZE + 1)
    return path


def _submit_env(url: str, cache_home: Path) -> dict[str, str]:
    """The variables of a ``training`` submit to the fake at ``url`` (AI Platform and Cloud Storage), its digest
    cache under ``cache_home``."""
    return {
        "XDG_CACHE_HOME": str(cache_home),
        "CLOUDSDK_AUTH_ACCESS_TOKEN": "fake",
        "CLOUDSDK_CORE_PROJECT": "p",
        "CLOUDSDK_API_ENDPOINT_OVERRIDES_ML": url,
        "STORAGE_EMULATOR_HOST": url.rstrip("/"),
        "MLSUBMIT_RETRY_INITIAL_DELAY": "0.01",
    }


def _entry(package: Path, cache: Path) -> Path:
    taken = stamp(package, cache)
    assert taken is not None
    return taken[0]


def _forged(package: Path, cache: Path) -> str:
    taken = stamp(package, cache)
    assert taken is not None
    return json.dumps(
        {
            "key": taken[1],
            "size": package.stat().st_size,
            "sha256": FORGED,
            "content": FORGED,
            "md5": "A" * 22 + "==",
            "crc32c": "AAAAAA==",
            "hashed_ns": package.stat().st_ctime_ns
            + RACY_NS,  # settled: trusted by everything but its content
        }
    )


def _dry_run(tmp_path: Path, package: Path) -> subprocess.CompletedProcess[str]:
    return run_cli_process(
        [
            "training",
            "job1",
            "--region",
            "us-central1",
            "--runtime-version",
            "2.11",
            "--python-version",
            "3.7",
            "--module-name",
            "trainer.task",
            "--packages",
            str(package),
            "--staging-bucket",
            "gs://bucket",
            "--dry-run",
            "--format",
            "json",
        ],
        cwd=tmp_path,
        env={"XDG_CACHE_HOME": str(tmp_path / "cache")},
        timeout=40,
    )


def _true_uri(package: Path) -> str:
    return f"gs://bucket/mlsubmit/packages/{hashlib.sha256(package.read_bytes()).hexdigest()}/{package.name}"


def _world_writable_folder(entry: Path, package: Path, cache: Path) -> None:
    entry.write_text(_forged(package, cache))
    entry.parent.chmod(0o777)


def _group_writable_entry(entry: Path, package: Path, cache: Path) -> None:
    entry.write_text(_forged(package, cache))
    entry.chmod(0o664)


def _wrong_size(entry: Path, package: Path, cache: Path) -> None:
    data = json.loads(_forged(package, cache))
    entry.write_text(json.dumps({**data, "size": 12}))


def _fifo(entry: Path, package: Path, cache: Path) -> None:
    os.mkfifo(entry)


def _dev_zero(entry: Path, package: Path, cache: Path) -> None:
    entry.symlink_to("/dev/zero")


def _deep(entry: Path, package: Path, cache: Path) -> None:
    entry.write_text("[" * 100000 + "]" * 100000)


def _huge(entry: Path, package: Path, cache: Path) -> None:
    entry.write_bytes(b" " * (8 << 20))


def _symlinked_folder(entry: Path, package: Path, cache: Path) -> None:
    # The digests folder is a link to a world-writable place another user controls.
    elsewhere = cache.parent / "shared-tmp"
    elsewhere.mkdir()
    elsewhere.chmod(0o1777)
    (elsewhere / entry.name).write_text(_forged(package, cache))
    entry.parent.rmdir()
    entry.parent.symlink_to(elsewhere)


def _not_an_object(entry: Path, package: Path, cache: Path) -> None:
    entry.write_text('["key"]')


CACHE_DAMAGE: dict[str, Callable[[Path, Path, Path], None]] = {
    "world-writable folder": _world_writable_folder,
    "group-writable entry": _group_writable_entry,
    "size contradicts the package": _wrong_size,
    "a fifo": _fifo,
    "dev zero": _dev_zero,
    "deeply nested": _deep,
    "huge": _huge,
    "folder is a link to a shared place": _symlinked_folder,
    "not an object": _not_an_object,
}


@pytest.mark.timeout(40)
@pytest.mark.parametrize("damage", list(CACHE_DAMAGE), ids=list(CACHE_DAMAGE))
def test_a_digest_cache_entry_that_cannot_be_trusted_is_ignored_with_a_warning(
    tmp_path: Path, package: Path, damage: str
) -> None:
    cache = tmp_path / "cache" / "mlsubmit" / "digests"
    cache.mkdir(parents=True, mode=0o700)
    entry = _entry(package, cache)
    CACHE_DAMAGE[damage](entry, package, cache)
    result = _dry_run(tmp_path, package)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "Traceback" not in result.stderr
    assert json.loads(result.stdout)["trainingInput"]["packageUris"] == [_true_uri(package)]
    assert "digest cache" in result.stderr and "WARNING" in result.stderr, result.stderr


@pytest.mark.timeout(40)
@pytest.mark.skipif(os.geteuid() != 0, reason="giving a file to another user needs root")
def test_a_digest_cache_entry_owned_by_another_user_is_ignored(tmp_path: Path, package: Path) -> None:
    cache = tmp_path / "cache" / "mlsubmit" / "digests"
    cache.mkdir(parents=True, mode=0o700)
    entry = _entry(package, cache)
    entry.write_text(_forged(package, cache))
    os.chown(entry, 54321, 54321)
    result = _dry_run(tmp_path, package)
    assert result.returncode == 0, result.stderr[-2000:]
    assert json.loads(result.stdout)["trainingInput"]["packageUris"] == [_true_uri(package)]


@pytest.mark.timeout(60)
def test_an_entry_the_service_contradicts_is_dropped(tmp_path: Path, package: Path) -> None:
    # A well-formed entry in a private folder, of the right size, naming other bytes: the upload that trusts it
    # is refused by the service (our CRC32C does not match the bytes), and the entry is gone for the next run.
    from tests.fakes.api_server import FakeGoogleApis

    cache = tmp_path / "cache" / "mlsubmit" / "digests"
    cache.mkdir(parents=True, mode=0o700)
    entry = _entry(package, cache)
    entry.write_text(_forged(package, cache))
    with FakeGoogleApis(project="p") as server:
        env = _submit_env(server.url, tmp_path / "cache")
        argv = [
            "training", "j1", "--region", "us-central1", "--runtime-version", "2.11", "--python-version", "3.7",
            "--module-name", "trainer.task", "--packages", str(package), "--staging-bucket", "gs://my-bucket",
            "--async",
        ]  # fmt: skip
        first = run_cli_process(argv, cwd=tmp_path, env=env, timeout=50)
        assert first.returncode == 1, first.stderr[-2000:]
        assert "Traceback" not in first.stderr
        assert not entry.exists()
        second = run_cli_process([*argv[:1], "j2", *argv[2:]], cwd=tmp_path, env=env, timeout=50)
        assert second.returncode == 0, second.stderr[-2000:]
        (body,) = [b for b in server.job_bodies if b["jobId"] == "j2"]
    assert body["trainingInput"]["packageUris"] == [
        _true_uri(package).replace("gs://bucket/", "gs://my-bucket/")
    ]


# --- the janitor's list --------------------------------------------------------------------------------------

HOLD_A_FOLDER = """\
import json, os, sys
from mlsubmit.proc.processes import temporary_directory
with temporary_directory("mlsubmit-") as tmp:
    print(json.dumps(tmp), flush=True)
    sys.stdin.readline()
"""


def _janitor_run(tmp_path: Path, tmpdir: Path) -> str:
    """A process that holds one temporary folder under ``tmpdir`` is killed with SIGKILL; the folder's path."""
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD_A_FOLDER],
        env={**os.environ, "PYTHONPATH": str(REPO), "TMPDIR": str(tmpdir)},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    held: str = json.loads(proc.stdout.readline())
    assert os.path.isdir(held)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    time.sleep(0.5)  # the janitor sees EOF and removes what is listed
    return held


@pytest.mark.timeout(30)
@pytest.mark.parametrize("trick", ["+", "-", "+/"], ids=["plus", "minus", "plus-slash"])
def test_a_newline_in_the_temporary_folder_path_never_removes_another_folder(
    tmp_path: Path, trick: str
) -> None:
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "precious").write_text("keep me")
    # TMPDIR = ".../victim\n+x": the janitor's list would read "+.../victim" and "+x/mlsubmit-...".
    tmpdir = Path(f"{victim}\n{trick}x")
    tmpdir.mkdir(parents=True)
    held = _janitor_run(tmp_path, tmpdir)
    assert (victim / "precious").read_text() == "keep me"
    assert not os.path.exists(held), "the folder itself is still removed"


@pytest.mark.timeout(30)
def test_the_janitor_removes_nothing_but_mlsubmit_temporary_folders(tmp_path: Path) -> None:
    # List lines naming an ordinary folder, or an mlsubmit-looking folder outside TMPDIR (written by anything
    # that shares the janitor's pipe), are ignored; mlsubmit's own folder in TMPDIR is removed.
    from mlsubmit.proc.keeper import janitor_line
    from mlsubmit.proc.processes import KEEPER_PATH

    tmpdir, victim, lookalike = tmp_path / "tmp", tmp_path / "victim", tmp_path / "mlsubmit-lookalike"
    ours = tmpdir / "mlsubmit-abc123"
    for folder in (ours, victim, lookalike):
        folder.mkdir(parents=True)
        (folder / "precious").write_text("keep me")
    lines = [f"+{victim}\n".encode(), *(janitor_line("+", str(p)) for p in (victim, lookalike, ours))]
    janitor = subprocess.run(
        [sys.executable, "-I", "-S", KEEPER_PATH, "--janitor"],
        input=b"".join(lines),
        env={**os.environ, "TMPDIR": str(tmpdir)},
        timeout=20,
        check=False,
    )
    assert janitor.returncode == 0
    assert (victim / "precious").read_text() == "keep me"
    assert (lookalike / "precious").read_text() == "keep me"
    assert not ours.exists()


@pytest.mark.timeout(60)
def test_a_package_rewritten_in_place_with_its_times_restored_is_staged_anew(
    tmp_path: Path, package: Path
) -> None:
    """What the cache may skip: hashing a file whose path, inode, size and times match an entry, and only when
    that entry's hashing began RACY_NS after the file's last change. A rewrite in place with its times restored
    is then seen even where the file system's change time did not move (a rewrite within one clock tick, which
    the test stands in for by moving the entry to the file's new key): the new bytes are staged and the job
    runs them, never the old package at the old address with 0 bytes uploaded."""
    from tests.fakes.api_server import FakeGoogleApis

    cache = tmp_path / "cache" / "mlsubmit" / "digests"
    time.sleep(RACY_NS / 1e9 + 0.1)  # the package settles: its digests may be cached
    with FakeGoogleApis(project="p") as server:
        env = _submit_env(server.url, tmp_path / "cache")

        def submit(job: str) -> dict[str, object]:
            argv = [
                "training", job, "--region", "us-central1", "--runtime-version", "2.11", "--python-version", "3.7",
                "--module-name", "trainer.task", "--packages", str(package), "--staging-bucket", "gs://bucket",
                "--async",
            ]  # fmt: skip
            result = run_cli_process(argv, cwd=tmp_path, env=env, timeout=50)
            assert result.returncode == 0, result.stderr[-2000:]
            (body,) = [b for b in server.job_bodies if b["jobId"] == job]
            return body

        assert submit("j1")["trainingInput"]["packageUris"] == [_true_uri(package)]
        old_entry = _entry(package, cache)
        cached = json.loads(old_entry.read_text())  # the first submit cached the settled package's digests
        before = package.stat()
        with package.open("r+b") as handle:  # rewritten in place: same inode, same size, other bytes
            handle.write(os.urandom(1024))
        os.utime(package, ns=(before.st_atime_ns, before.st_mtime_ns))
        new_entry = _entry(package, cache)
        new_key = stamp(package, cache)
        assert new_key is not None
        new_entry.write_text(json.dumps({**cached, "key": new_key[1]}))  # as if the change time had not moved
        new_entry.chmod(0o600)
        body = submit("j2")
    assert body["trainingInput"]["packageUris"] == [_true_uri(package)]  # the new bytes' address
    assert cached["content"] not in body["trainingInput"]["packageUris"][0]  # not the old package's address
