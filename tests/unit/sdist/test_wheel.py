"""Wheels of the trainer's sdist for `local train --from-package`: no base interpreter's build tools needed."""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import zipfile
from pathlib import Path

import pytest

from mlsubmit.errors import PackagingError
from mlsubmit.sdist import wheel as wheel_module
from mlsubmit.sdist.build import build_sdist
from mlsubmit.sdist.wheel import wheel_from_sdist


@pytest.fixture
def trainer(tmp_path: Path) -> Path:
    package = tmp_path / "src" / "trainer"
    (package / "models" / "deep").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "task.py").write_text("print('hi')\n")
    (package / "models" / "__init__.py").write_text("")
    (package / "models" / "deep" / "layer.py").write_text("X = 1\n")  # a plain folder: package data
    (package / "vocab.txt").write_text("a\n")
    (package / "run.sh").write_text("#!/bin/sh\n")
    (package / "run.sh").chmod(0o755)
    return package


def test_a_generated_sdist_becomes_a_pure_wheel_with_every_file(trainer: Path, tmp_path: Path) -> None:
    sdist = build_sdist(trainer, tmp_path / "dist")

    whl = wheel_from_sdist(sdist, tmp_path / "wheels")

    assert whl.name == "trainer-0.0.0-py3-none-any.whl"
    with zipfile.ZipFile(whl) as z:
        names = set(z.namelist())
        assert {
            "trainer/__init__.py",
            "trainer/task.py",
            "trainer/models/__init__.py",
            "trainer/models/deep/layer.py",
            "trainer/vocab.txt",
            "trainer/run.sh",
            "trainer-0.0.0.dist-info/METADATA",
            "trainer-0.0.0.dist-info/WHEEL",
            "trainer-0.0.0.dist-info/RECORD",
        } <= names
        assert not any(n.endswith(("setup.py", "PKG-INFO")) for n in names)
        assert (z.getinfo("trainer/run.sh").external_attr >> 16) & 0o111
        assert "Tag: py3-none-any" in z.read("trainer-0.0.0.dist-info/WHEEL").decode()
        rows = list(csv.reader(io.StringIO(z.read("trainer-0.0.0.dist-info/RECORD").decode())))
        assert {r[0] for r in rows} == names
        for name, digest, size in rows:
            if digest:
                data = z.read(name)
                assert (
                    digest
                    == "sha256="
                    + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
                )
                assert int(size) == len(data)


def test_a_project_sdist_is_built_by_its_own_backend(trainer: Path, tmp_path: Path) -> None:
    (trainer.parent / "setup.py").write_text(
        "from setuptools import setup\nsetup(name='proj', version='1.5', packages=['trainer'])\n"
    )
    sdist = build_sdist(trainer, tmp_path / "dist")

    whl = wheel_from_sdist(sdist, tmp_path / "wheels")

    assert whl.name == "proj-1.5-py3-none-any.whl"
    with zipfile.ZipFile(whl) as z:
        assert "trainer/task.py" in z.namelist()


def test_old_setuptools_with_new_wheel_is_named_as_a_local_problem() -> None:
    error = wheel_module._backend_failed("t-1.0.tar.gz", "error: invalid command 'bdist_wheel'")
    assert isinstance(error, PackagingError)
    assert "cannot build wheels" in str(error)
    assert "setuptools>=70.1" in str(error)
    assert "In the cloud" in str(error)


def test_a_setup_py_that_fails_says_where_it_differs_from_the_cloud(trainer: Path, tmp_path: Path) -> None:
    (trainer.parent / "setup.py").write_text(
        "import sys\nfrom setuptools import setup\n"
        "if 'bdist_wheel' in sys.argv: import numpy_not_installed_here\n"
        "setup(name='proj', version='1.5', packages=['trainer'])\n"
    )
    sdist = build_sdist(trainer, tmp_path / "dist")

    with pytest.raises(PackagingError) as raised:
        wheel_from_sdist(sdist, tmp_path / "wheels")
    message = str(raised.value)
    assert "numpy_not_installed_here" in message
    assert "In the cloud" in message
    assert "the cloud job would fail the same way" not in message
