"""Packaging inputs that used to crash or never end (docs/security.md): each case ends
within its time limit, bad input is one ``ERROR:`` line naming the file and what to do (exit 2), no traceback,
and nothing is left in a private TMPDIR."""

from __future__ import annotations

import os
import socket
import stat
import subprocess
import sys
import tarfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from mlsubmit.errors import PackagingError
from mlsubmit.sdist import build, tree

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def pkg(tmp_path: Path) -> Iterator[Path]:
    trainer = tmp_path / "src" / "trainer"
    trainer.mkdir(parents=True)
    (trainer / "__init__.py").write_text("")
    (trainer / "task.py").write_text("print('hi')\n")
    (tmp_path / "tmp").mkdir()
    yield trainer
    assert not list((tmp_path / "tmp").iterdir()), "temporary files left behind"


def dry_run(trainer: Path) -> subprocess.CompletedProcess[str]:
    """`mlsubmit training --dry-run` builds and hashes the package exactly as a submit would."""
    tmp = trainer.parents[1] / "tmp"
    return subprocess.run(
        [sys.executable, "-m", "mlsubmit", "training", "job_1", "--package-path", str(trainer),
         "--module-name", "trainer.task", "--region", "us-central1", "--staging-bucket", "gs://bucket",
         "--runtime-version", "2.11", "--dry-run", "--format", "json"],
        env={**os.environ, "PYTHONPATH": str(REPO), "TMPDIR": str(tmp)}, cwd=tmp.parent,
        capture_output=True, text=True, timeout=30, check=False,
    )  # fmt: skip


def assert_bad_input(proc: subprocess.CompletedProcess[str], *fragments: str) -> None:
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ERROR: "), proc.stderr
    for fragment in fragments:
        assert fragment in lines[0]


def members(trainer: Path, out: Path) -> list[str]:
    with tarfile.open(build.build_sdist(trainer, out)) as tar:
        return sorted(m.name.split("/", 1)[1] for m in tar.getmembers())


@pytest.mark.timeout(20)
@pytest.mark.parametrize("pattern", ["__init__.py", "*.py", "trainer/__init__.py", "/trainer/*"])
def test_an_ignore_file_excluding_the_package_init_is_an_error_not_a_spin(pkg: Path, pattern: str) -> None:
    (pkg.parent / ".gcloudignore").write_text(f"# generated\n{pattern}\n")
    assert_bad_input(dry_run(pkg), ".gcloudignore:2", "__init__.py is excluded", "!trainer/__init__.py")


@pytest.mark.timeout(20)
def test_a_symlink_diamond_is_refused_at_once(pkg: Path) -> None:
    # level0/{a,b} -> level1, level1/{a,b} -> level2, ...: 2**30 paths through 30 directories.
    for level in range(30):
        (pkg / f"level{level}").mkdir()
    for level in range(29):
        for link in ("a", "b"):
            (pkg / f"level{level}" / link).symlink_to(pkg / f"level{level + 1}", target_is_directory=True)
    assert_bad_input(dry_run(pkg), "is a symlink to a directory already in the package", ".mlsubmitignore")


@pytest.mark.timeout(20)
def test_one_link_into_the_package_is_still_fine_when_the_real_directory_is_ignored(
    pkg: Path, tmp_path: Path
) -> None:
    (pkg / "runs" / "5").mkdir(parents=True)
    (pkg / "runs" / "5" / "weights.txt").write_text("w")
    (pkg / "latest").symlink_to(pkg / "runs" / "5", target_is_directory=True)
    (pkg / ".mlsubmitignore").write_text("/runs/\n")
    assert "trainer/latest/weights.txt" in members(pkg, tmp_path / "out")


@pytest.mark.timeout(20)
def test_a_symlink_loop_is_an_error(pkg: Path) -> None:
    (pkg / "ping").symlink_to(pkg / "pong")
    (pkg / "pong").symlink_to(pkg / "ping")
    assert_bad_input(dry_run(pkg), "ping", ".mlsubmitignore")


@pytest.mark.timeout(20)
@pytest.mark.parametrize(
    "pattern",
    [
        "*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b",
        "**/a*a*a*a*a*a*/**/a*a*a*a*a*b/**/x",
        "trainer/**/" + "*a" * 12 + "*b/*",
    ],
)
def test_ignore_patterns_with_many_stars_match_in_linear_time(pkg: Path, pattern: str) -> None:
    deep = pkg / "/".join(["a" * 60] * 12)
    deep.mkdir(parents=True)
    (deep / ("a" * 200)).write_text("data")
    (pkg.parent / ".mlsubmitignore").write_text(pattern + "\n")
    proc = dry_run(pkg)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.timeout(20)
def test_fifos_and_sockets_in_the_package_are_skipped_without_blocking(pkg: Path, tmp_path: Path) -> None:
    os.mkfifo(pkg / "pipe")
    os.symlink(pkg / "pipe", pkg / "link-to-pipe")
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(pkg / "sock"))
        proc = dry_run(pkg)
        assert proc.returncode == 0, proc.stderr
        assert members(pkg, tmp_path / "out") == [
            "PKG-INFO", "setup.py", "trainer/__init__.py", "trainer/task.py"
        ]  # fmt: skip


@pytest.mark.timeout(20)
@pytest.mark.parametrize("where", ["package", "include"])
def test_an_ignore_file_that_is_a_fifo_is_an_error_not_a_hang(pkg: Path, where: str) -> None:
    if where == "package":
        os.mkfifo(pkg / ".gcloudignore")
    else:
        os.mkfifo(pkg / "patterns")
        (pkg / ".gcloudignore").write_text("#!include:patterns\n")
    assert_bad_input(dry_run(pkg), "is not a regular file", "Fix or remove it")


@pytest.mark.timeout(20)
def test_a_huge_ignore_file_is_refused(pkg: Path) -> None:
    (pkg / ".gcloudignore").write_text("x\n" * 600_000)
    assert_bad_input(dry_run(pkg), ".gcloudignore is larger than")


@pytest.mark.timeout(20)
def test_nesting_deeper_than_the_bound_is_an_error(pkg: Path) -> None:
    deep = pkg / "/".join(["d"] * (tree.MAX_DEPTH + 1))
    deep.mkdir(parents=True)
    assert_bad_input(dry_run(pkg), f"more than {tree.MAX_DEPTH} deep", ".mlsubmitignore")


@pytest.mark.timeout(20)
def test_files_adding_up_past_the_size_bound_are_an_error_before_reading_them(pkg: Path) -> None:
    with open(pkg / "huge.bin", "wb") as handle:  # sparse: costs no disk and no time
        handle.truncate(tree.MAX_TOTAL_BYTES + 1)
    assert_bad_input(dry_run(pkg), "huge.bin", "GiB", ".mlsubmitignore")


@pytest.mark.timeout(20)
def test_more_files_than_the_bound_is_an_error(
    pkg: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tree, "MAX_FILES", 50)  # the real bound (100,000 files) is too slow to build here
    for i in range(60):
        (pkg / f"f{i:02}.txt").write_text("")
    with pytest.raises(PackagingError, match=r"f4[89]\.txt: the package holds more than 50 files"):
        build.build_sdist(pkg, tmp_path / "out")


@pytest.mark.timeout(20)
def test_a_device_file_in_the_package_is_skipped_without_being_read(pkg: Path, tmp_path: Path) -> None:
    try:
        os.mknod(pkg / "zero", 0o600 | stat.S_IFCHR, os.makedev(1, 5))  # /dev/zero: reading it never ends
    except (PermissionError, OSError) as exc:
        pytest.skip(f"cannot create a device file here: {exc}")
    proc = dry_run(pkg)
    assert proc.returncode == 0, proc.stderr
    assert "trainer/zero" not in members(pkg, tmp_path / "out")
