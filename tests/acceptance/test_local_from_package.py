"""`local train --from-package` (issue 4): the trainer runs from its built package in a fresh, cached virtual
environment, so a dependency it forgot to declare fails here as it would in the cloud, while the same trainer
run from source passes. Offline: pip only sees local files (PIP_NO_INDEX)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

TASK = """\
import os, sys
import helperlib  # a sibling of the trainer package in the source tree
print("helper says", helperlib.VALUE, "from", "source" if os.getcwd() in helperlib.__file__ else "site-packages")
print("task file in", "venv" if sys.prefix != sys.base_prefix else "base interpreter")
"""


def make_project(root: Path, install_requires: list[str]) -> Path:
    """root/{setup.py, trainer/, helperlib/}: setup.py packages only `trainer`."""
    (root / "trainer").mkdir(parents=True)
    (root / "trainer" / "__init__.py").write_text("")
    (root / "trainer" / "task.py").write_text(TASK)
    (root / "helperlib").mkdir()
    (root / "helperlib" / "__init__.py").write_text("VALUE = 42\n")
    (root / "setup.py").write_text(
        "from setuptools import setup\n"
        f"setup(name='trainer', version='0.1', packages=['trainer'], install_requires={install_requires!r})\n"
    )
    return root / "trainer"


def run(package: Path, *extra: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    cmd = [
        sys.executable, "-m", "mlsubmit", "local", "train", "--package-path", str(package),
        "--module-name", "trainer.task", "--python", sys.executable, *extra,
    ]  # fmt: skip
    return subprocess.run(
        cmd, env={**os.environ, "PYTHONPATH": str(REPO), **env}, capture_output=True, text=True, timeout=300
    )


@pytest.fixture
def offline_env(tmp_path: Path) -> dict[str, str]:
    # HOME is already a fresh tmp dir (tests/conftest.py), so the venv cache starts empty.
    return {
        "PIP_NO_INDEX": "1",
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
    }


def test_forgotten_dependency_fails_from_package_but_passes_from_source(
    tmp_path: Path, offline_env: dict[str, str]
) -> None:
    package = make_project(tmp_path / "proj", install_requires=[])

    from_source = run(package, env=offline_env)
    assert from_source.returncode == 0, from_source.stderr
    assert "[chief] helper says 42 from source" in from_source.stdout

    from_package = run(package, "--from-package", env=offline_env)
    assert from_package.returncode == 1, from_package.stderr
    assert "[chief] ModuleNotFoundError: No module named 'helperlib'" in from_package.stderr.splitlines()
    assert from_package.stderr.splitlines()[-1] == "ERROR: [chief] exited with status 1."
    assert "Traceback" not in from_package.stderr.replace("[chief] Traceback", "")  # only the trainer's own


def test_declared_dependency_is_installed_and_the_environment_is_cached(
    tmp_path: Path, offline_env: dict[str, str]
) -> None:
    # helperlib as a real distribution in a local "index" (find-links), declared by the trainer this time.
    dep = tmp_path / "dep"
    (dep / "helperlib").mkdir(parents=True)
    (dep / "helperlib" / "__init__.py").write_text("VALUE = 42\n")
    (dep / "setup.py").write_text(
        "from setuptools import setup\nsetup(name='helperlib', version='1.0', packages=['helperlib'])\n"
    )
    wheels = tmp_path / "wheels"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(wheels),
            str(dep),
        ],
        check=True,
        env={**os.environ, **offline_env},
        capture_output=True,
    )
    package = make_project(tmp_path / "proj", install_requires=["helperlib==1.0"])
    env = {**offline_env, "PIP_FIND_LINKS": str(wheels)}

    first = run(package, "--from-package", env=env)
    assert first.returncode == 0, first.stderr
    assert "[chief] helper says 42 from site-packages" in first.stdout
    assert "[chief] task file in venv" in first.stdout
    assert "Installing trainer-0.1.tar.gz" in first.stderr

    second = run(package, "--from-package", env=env)
    assert second.returncode == 0, second.stderr
    assert "Using the cached environment for trainer-0.1.tar.gz" in second.stderr
    venvs = [p for p in (tmp_path / "cache" / "mlsubmit" / "venvs").iterdir() if p.is_dir()]
    assert len(venvs) == 1

    # A changed package is a new environment, not a stale one.
    (package / "task.py").write_text(TASK + "print('changed')\n")
    third = run(package, "--from-package", env=env)
    assert third.returncode == 0, third.stderr
    assert "[chief] changed" in third.stdout
    assert len([p for p in (tmp_path / "cache" / "mlsubmit" / "venvs").iterdir() if p.is_dir()]) == 2


def test_uninstallable_dependency_fails_at_install(tmp_path: Path, offline_env: dict[str, str]) -> None:
    package = make_project(tmp_path / "proj", install_requires=["no-such-dependency-xyz"])
    result = run(package, "--from-package", env=offline_env)
    assert result.returncode == 1
    assert result.stderr.startswith("Installing trainer-0.1.tar.gz")
    assert "ERROR: pip could not install trainer-0.1.tar.gz" in result.stderr
    assert "no-such-dependency-xyz" in result.stderr
    assert not [p for p in (tmp_path / "cache" / "mlsubmit" / "venvs").iterdir() if p.is_dir()]  # not cached
