"""The one bounded reader (mlsubmit.proc.files): only regular files, never blocking, never more than the bound."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from mlsubmit.errors import ConfigFileError, PackagingError
from mlsubmit.proc.files import package_dir_problem, read_bounded


def _fifo(where: Path) -> str:
    os.mkfifo(where / "pipe")
    return str(where / "pipe")


def _socket(where: Path) -> str:
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(where / "sock"))
    return str(where / "sock")


@pytest.mark.timeout(10)
@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda d: str(d), "is a directory, not a regular file"),
        (_fifo, "is a FIFO (named pipe), not a regular file"),
        (lambda d: "/dev/zero", "is a character device, not a regular file"),
        (lambda d: "/dev/null", "is a character device, not a regular file"),
        (_socket, "cannot open"),
        (lambda d: str(d / "missing.yaml"), "no such file"),
    ],
    ids=["directory", "fifo", "dev-zero", "dev-null", "socket", "missing"],
)
def test_only_regular_files_are_read(tmp_path: Path, make: object, message: str) -> None:
    path = make(tmp_path)  # type: ignore[operator]
    if path.startswith("/dev/") and not Path(path).exists():
        pytest.skip(f"no {path}")
    with pytest.raises(ConfigFileError) as err:
        read_bounded(path)
    assert str(err.value).startswith(f"{path}: {message}")


def test_a_symlink_to_a_regular_file_is_followed(tmp_path: Path) -> None:
    (tmp_path / "real.yaml").write_bytes(b"a: 1\n")
    (tmp_path / "link.yaml").symlink_to(tmp_path / "real.yaml")
    assert read_bounded(str(tmp_path / "link.yaml")) == b"a: 1\n"


@pytest.mark.timeout(10)
def test_a_symlink_to_dev_zero_is_refused(tmp_path: Path) -> None:
    if not Path("/dev/zero").exists():
        pytest.skip("no /dev/zero")
    (tmp_path / "cfg.yaml").symlink_to("/dev/zero")
    with pytest.raises(ConfigFileError, match="is a character device"):
        read_bounded(str(tmp_path / "cfg.yaml"))


def test_size_bound_and_error_class(tmp_path: Path) -> None:
    (tmp_path / "big").write_bytes(b"x" * 101)
    with pytest.raises(PackagingError, match=r"big: file is 101 bytes; the limit is 100 bytes\.$"):
        read_bounded(str(tmp_path / "big"), max_bytes=100, error=PackagingError)
    assert read_bounded(str(tmp_path / "big"), max_bytes=101) == b"x" * 101


def test_package_dir_problem(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "plain").mkdir()
    (tmp_path / "file.py").write_text("")
    assert package_dir_problem(tmp_path / "pkg", "pkg") is None
    assert "no such directory" in str(package_dir_problem(tmp_path / "nope", "nope"))
    assert "is a file" in str(package_dir_problem(tmp_path / "file.py", "file.py"))
    assert "has no __init__.py" in str(package_dir_problem(tmp_path / "plain", "plain"))
