"""`build_sdist`: reproducible bytes, the whole tree, ignore files, symlinks, and projects with a setup.py."""

from __future__ import annotations

import gzip
import io
import os
import subprocess
import sys
import tarfile
from collections.abc import Callable
from pathlib import Path

import pytest

from mlsubmit.errors import ExitStatus, PackagingError
from mlsubmit.sdist import tarball
from mlsubmit.sdist.build import build_package, build_sdist
from mlsubmit.sdist.digest import Local, digests_of, opened
from mlsubmit.sdist.tarball import FIXED_MTIME


def make_tree(root: Path, files: dict[str, str]) -> Path:
    """Create `files` (posix paths -> text) under `root`; return root."""
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


TRAINER = {
    "trainer/__init__.py": "",
    "trainer/task.py": "from trainer.models import net\nprint(net.NAME)\n",
    "trainer/models/__init__.py": "",
    "trainer/models/net.py": "NAME = 'net'\n",
    "trainer/models/deep/__init__.py": "",
    "trainer/models/deep/layer.py": "DEPTH = 3\n",
    "trainer/assets/vocab.txt": "a\nb\n",
    "trainer/models/config.yaml": "lr: 0.1\n",
}


def names(sdist: Local) -> list[str]:
    with opened(sdist) as raw, tarfile.open(fileobj=raw) as tar:
        return [m.name for m in tar.getmembers()]


def member_text(sdist: Local, name: str) -> str:
    with opened(sdist) as raw, tarfile.open(fileobj=raw) as tar:
        handle = tar.extractfile(name)
        assert handle is not None
        return handle.read().decode()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_tree(tmp_path / "src", TRAINER)


def test_generated_sdist_is_named_after_the_directory_and_holds_the_whole_tree(
    project: Path, tmp_path: Path
) -> None:
    sdist = build_sdist(project / "trainer", tmp_path / "out")

    assert sdist == tmp_path / "out" / "trainer-0.0.0.tar.gz"
    assert names(sdist) == sorted(
        ["trainer-0.0.0/PKG-INFO", "trainer-0.0.0/setup.py"] + [f"trainer-0.0.0/{rel}" for rel in TRAINER]
    )
    assert "Name: trainer\nVersion: 0.0.0\n" in member_text(sdist, "trainer-0.0.0/PKG-INFO")


def test_the_build_hands_back_its_walk_and_the_modules_it_read_within_bounds(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tarball, "MAX_KEPT_FILE_BYTES", 20)  # task.py (48 bytes) is streamed, not kept
    built = build_package(project / "trainer")

    assert built.sdist.name == "trainer-0.0.0.tar.gz"
    assert built.walked is not None
    assert sorted(built.walked.files) == sorted(TRAINER)
    assert all(built.walked.files[rel].samefile(project / rel) for rel in TRAINER)
    small_modules = [rel for rel in TRAINER if rel.endswith(".py") and len(TRAINER[rel]) <= 20]
    assert "trainer/models/net.py" in small_modules and "trainer/task.py" not in small_modules
    assert built.walked.sources == {rel: TRAINER[rel].encode() for rel in small_modules}
    for rel in ("trainer/task.py", "trainer/models/net.py"):  # kept or streamed, the sdist holds the same
        assert member_text(built.sdist, f"trainer-0.0.0/{rel}") == TRAINER[rel]


def test_the_sdist_is_held_in_memory_with_the_bytes_and_digests_a_written_one_has(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No folder is needed to build: nothing is written until the held sdist is asked to be (an image's
    context), and then the same bytes, with the digests taken while it was built (the content address too)."""
    monkeypatch.chdir(tmp_path)
    built = build_package(project / "trainer")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["src"]

    written = built.sdist.write(tmp_path / "out")
    with opened(built.sdist) as held:
        assert (
            held.read()
            == written.read_bytes()
            == build_sdist(project / "trainer", tmp_path / "b").read_bytes()
        )
    assert digests_of(built.sdist) == digests_of(written) == built.sdist.digests
    assert digests_of(written).content == digests_of(build_sdist(project / "trainer", tmp_path / "c")).content


def test_the_walk_says_what_the_generated_sdist_holds_as_reading_it_back_would(
    project: Path, tmp_path: Path
) -> None:
    """The checkup takes the sdist's files and requirements from the build instead of opening it again: they
    are what :func:`built_requirements` reads from it, a file left out by its content included."""
    from mlsubmit.migrate.requirements import built_requirements

    (project / "trainer" / "assets" / "key.pem").write_text("-----BEGIN PRIVATE KEY-----\nMIIE\n")
    built = build_package(project / "trainer")

    assert built.walked is not None
    read_back = built_requirements(built.sdist)
    assert read_back is not None and "trainer/assets/key.pem" not in read_back.files
    assert ((), built.walked.members) == (read_back.requirements, read_back.files)


def test_same_tree_gives_identical_bytes_even_after_touching_files(project: Path, tmp_path: Path) -> None:
    first = build_sdist(project / "trainer", tmp_path / "one").read_bytes()
    for path in (project / "trainer").rglob("*"):
        os.utime(path, (1_900_000_000, 1_900_000_000))
    os.chmod(project / "trainer" / "task.py", 0o600)  # only the executable bit is kept
    second = build_sdist(project / "trainer", tmp_path / "two").read_bytes()

    assert first == second


def test_changed_content_changes_the_bytes(project: Path, tmp_path: Path) -> None:
    first = build_sdist(project / "trainer", tmp_path / "one").read_bytes()
    (project / "trainer" / "models" / "net.py").write_text("NAME = 'other'\n")

    assert build_sdist(project / "trainer", tmp_path / "two").read_bytes() != first


def test_tarball_metadata_is_normalised(project: Path, tmp_path: Path) -> None:
    script = project / "trainer" / "run.sh"
    script.write_text("#!/bin/sh\n")
    script.chmod(0o775)
    sdist = build_sdist(project / "trainer", tmp_path / "out")

    raw = sdist.read_bytes()
    assert raw[4:8] == b"\0\0\0\0", "gzip header must carry no timestamp"
    assert raw[3] & 0x08 == 0, "gzip header must carry no file name"
    with tarfile.open(sdist) as tar:
        members = tar.getmembers()
    assert [m.name for m in members] == sorted(m.name for m in members)
    for member in members:
        assert (member.mtime, member.uid, member.gid, member.uname, member.gname) == (
            FIXED_MTIME,
            0,
            0,
            "",
            "",
        )
        expected = 0o755 if member.name.endswith("run.sh") else 0o644
        assert member.mode == expected, member.name


def test_caches_and_vcs_data_are_skipped(project: Path, tmp_path: Path) -> None:
    make_tree(
        project,
        {
            "trainer/__pycache__/task.cpython-311.pyc": "x",
            "trainer/models/stale.pyc": "x",
            "trainer/.git/HEAD": "ref",
        },
    )
    listed = names(build_sdist(project / "trainer", tmp_path / "out"))

    assert not [n for n in listed if "__pycache__" in n or n.endswith(".pyc") or "/.git/" in n]


def test_ignore_files_in_the_package_and_its_parent_are_honoured(project: Path, tmp_path: Path) -> None:
    make_tree(
        project,
        {
            ".gcloudignore": "*.ckpt\ntrainer/assets/\n",
            "trainer/.mlsubmitignore": "/notes.md\n!keep.ckpt\n#!include:extra.ignore\n",
            "trainer/extra.ignore": "scratch/\n",
            "trainer/model.ckpt": "big",
            "trainer/keep.ckpt": "small",
            "trainer/notes.md": "n",
            "trainer/models/notes.md": "kept: /notes.md is anchored to trainer/",
            "trainer/scratch/tmp.py": "",
        },
    )
    listed = {
        n.removeprefix("trainer-0.0.0/") for n in names(build_sdist(project / "trainer", tmp_path / "out"))
    }

    assert "trainer/model.ckpt" not in listed
    assert "trainer/keep.ckpt" in listed
    assert "trainer/notes.md" not in listed
    assert "trainer/models/notes.md" in listed
    assert not [n for n in listed if n.startswith(("trainer/assets/", "trainer/scratch/"))]
    assert not [n for n in listed if n.endswith((".gcloudignore", ".mlsubmitignore"))]


def test_symlink_inside_the_package_is_packaged_as_a_file(project: Path, tmp_path: Path) -> None:
    (project / "trainer" / "alias.yaml").symlink_to("models/config.yaml")
    sdist = build_sdist(project / "trainer", tmp_path / "out")

    assert member_text(sdist, "trainer-0.0.0/trainer/alias.yaml") == "lr: 0.1\n"


@pytest.mark.parametrize(
    ("make_link", "message"),
    [
        (lambda pkg, outside: (pkg / "secret.txt").symlink_to(outside), "points outside the package"),
        (lambda pkg, outside: (pkg / "dir").symlink_to(outside.parent, target_is_directory=True), "outside"),
        (lambda pkg, outside: (pkg / "dangling").symlink_to(pkg / "missing"), "broken symlink"),
        (lambda pkg, outside: (pkg / "models" / "up").symlink_to(pkg, target_is_directory=True), "loop"),
    ],
    ids=["file-out", "dir-out", "broken", "loop"],
)
def test_symlinks_leaving_the_package_are_refused(
    project: Path, tmp_path: Path, make_link: Callable[[Path, Path], None], message: str
) -> None:
    outside = tmp_path / "elsewhere" / "credentials.json"
    outside.parent.mkdir()
    outside.write_text("{}")
    make_link(project / "trainer", outside)

    with pytest.raises(PackagingError, match=message) as raised:
        build_sdist(project / "trainer", tmp_path / "out")
    assert ".mlsubmitignore" in str(raised.value)
    assert raised.value.exit_status == ExitStatus.USAGE


def test_an_ignored_symlink_out_of_the_package_is_fine(project: Path, tmp_path: Path) -> None:
    (project / "trainer" / "data").symlink_to(tmp_path, target_is_directory=True)
    (project / "trainer" / ".mlsubmitignore").write_text("data\n")

    assert "trainer-0.0.0/trainer/data" not in names(build_sdist(project / "trainer", tmp_path / "out"))


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        (lambda root: None, "no such directory"),
        (lambda root: make_tree(root, {"trainer": "a file"}), "is a file"),
        (lambda root: make_tree(root, {"trainer/task.py": ""}), "no __init__.py"),
        (lambda root: make_tree(root, {"my-trainer/__init__.py": ""}), "Python identifier"),
    ],
    ids=["missing", "file", "no-init", "bad-name"],
)
def test_package_path_must_be_a_python_package(
    tmp_path: Path, setup: Callable[[Path], object], message: str
) -> None:
    setup(tmp_path)
    target = tmp_path / ("my-trainer" if message == "Python identifier" else "trainer")

    with pytest.raises(PackagingError, match=message):
        build_sdist(target, tmp_path / "out")


def test_generated_sdist_pip_installs_offline_with_subpackages_and_data(
    project: Path, tmp_path: Path
) -> None:
    make_tree(project, {"trainer/plain/helper.py": "X = 1\n", "trainer/.hidden.cfg": "h"})
    sdist = build_sdist(project / "trainer", tmp_path / "out")
    target = tmp_path / "site"

    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-index", "--no-build-isolation", "--no-deps",
         "--target", str(target), str(sdist)],
        check=True, capture_output=True, cwd=tmp_path,
    )  # fmt: skip

    installed = {p.relative_to(target).as_posix() for p in target.rglob("*") if p.is_file()}
    for rel in [*TRAINER, "trainer/plain/helper.py", "trainer/.hidden.cfg"]:
        assert rel in installed
    check = "from trainer.models.deep import layer; import importlib.resources as r; " + (
        "print(layer.DEPTH, r.files('trainer').joinpath('assets/vocab.txt').read_text().split())"
    )
    out = subprocess.run(
        [sys.executable, "-c", check], env={**os.environ, "PYTHONPATH": str(target)}, cwd=tmp_path,
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    assert out.stdout.strip() == "3 ['a', 'b']"


SETUP_PY = """\
from setuptools import setup, find_packages
setup(name="mytrainer", version="1.2.0", packages=find_packages())
"""


def test_a_setup_py_next_to_the_package_builds_with_that_project_reproducibly(
    project: Path, tmp_path: Path
) -> None:
    (project / "setup.py").write_text(SETUP_PY)
    first = build_sdist(project / "trainer", tmp_path / "one")
    for path in project.rglob("*"):
        os.utime(path, (1_900_000_000, 1_900_000_000))
    built = build_package(project / "trainer")
    second = built.sdist.write(tmp_path / "two")

    assert built.walked is None  # the project's backend walked its files: a reader walks them itself
    assert first.name == "mytrainer-1.2.0.tar.gz"
    assert "mytrainer-1.2.0/trainer/models/deep/layer.py" in names(first)
    assert first.read_bytes() == second.read_bytes()
    assert not list(project.glob("*.egg-info")), "the build must not leave egg-info behind"


def test_a_failing_setup_py_reports_the_backend_output(project: Path, tmp_path: Path) -> None:
    (project / "setup.py").write_text("raise SystemExit('boom: missing version in setup.py')\n")

    with pytest.raises(PackagingError) as raised:
        build_sdist(project / "trainer", tmp_path / "out")
    message = str(raised.value)
    assert "boom: missing version in setup.py" in message
    assert "--packages" in message


def test_a_pyproject_with_an_unavailable_backend_says_what_to_install(project: Path, tmp_path: Path) -> None:
    (project / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["no-such-backend-mlsubmit>=9"]\nbuild-backend = "no_such_backend"\n'
    )

    with pytest.raises(PackagingError, match="no-such-backend-mlsubmit>=9"):
        build_sdist(project / "trainer", tmp_path / "out")


def test_gzip_member_decompresses_to_a_plain_tar(project: Path, tmp_path: Path) -> None:
    sdist = build_sdist(project / "trainer", tmp_path / "out")

    with gzip.open(sdist) as handle:
        assert tarfile.is_tarfile(handle)  # type: ignore[arg-type]


def test_a_pyproject_with_only_tool_settings_does_not_make_a_project(project: Path, tmp_path: Path) -> None:
    (project / "pyproject.toml").write_text("[tool.ruff]\nline-length = 100\n")

    assert build_sdist(project / "trainer", tmp_path / "out").name == "trainer-0.0.0.tar.gz"


def test_a_pyproject_project_builds_with_its_backend(project: Path, tmp_path: Path) -> None:
    (project / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n'
        '[project]\nname = "pyproj-trainer"\nversion = "3.0"\n'
    )

    sdist = build_sdist(project / "trainer", tmp_path / "out")

    # setuptools >= 69.3 names sdists per PEP 625 (pyproj_trainer); older ones keep the dash.
    top = sdist.name.removesuffix(".tar.gz")
    assert top in ("pyproj-trainer-3.0", "pyproj_trainer-3.0")
    assert f"{top}/trainer/models/deep/layer.py" in names(sdist)


def test_an_unreadable_pyproject_is_reported(project: Path, tmp_path: Path) -> None:
    (project / "pyproject.toml").write_text("[build-system\n")

    with pytest.raises(PackagingError, match=r"pyproject\.toml is not valid TOML"):
        build_sdist(project / "trainer", tmp_path / "out")


def test_the_tar_stream_written_without_tarfile_is_byte_for_byte_tarfiles() -> None:
    """Regular files with short ASCII names get plain ustar headers written by hand (a dry run loads no tarfile);
    any other name leaves the whole stream to tarfile, so a package's content address is the same either way."""
    files = {
        "t/a.py": b"print(1)\n",
        "t/" + "x" * 98: b"a name of exactly 100 characters",
        "t/empty": b"",
        "t/block": b"z" * 512,
        "t/run.sh": os.urandom(70_000),
    }
    streams = []
    for names in (list(files), None):  # None: tarfile's
        out = io.BytesIO()
        stream = tarball._Stream(out, names)
        for name, data in files.items():
            stream.add(name, len(data), name.endswith(".sh"), io.BytesIO(data))
        stream.close()
        streams.append((stream.tar is None, out.getvalue()))
    assert streams[0] == (True, streams[1][1]) and streams[1][0] is False
    assert tarball._Stream(io.BytesIO(), ["t/é.py"]).tar is not None
    assert tarball._Stream(io.BytesIO(), ["t/" + "x" * 99]).tar is not None


@pytest.mark.parametrize("level", [6, 9, 1])
def test_the_gzip_written_without_gzip_is_byte_for_byte_gzips(
    project: Path, level: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tarball, "COMPRESS_LEVEL", level)
    with opened(build_package(project / "trainer").sdist) as held:
        data = held.read()
    out = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=out, mtime=0, compresslevel=level) as gz:
        gz.write(gzip.decompress(data))
    assert out.getvalue() == data
