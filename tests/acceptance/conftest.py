"""Fixtures shared by the acceptance tests (a test file's own fixture of the same name wins)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fakes.cloudbuild_api import FakeCloudBuild, build_env
from tests.fakes.trainers import LEGACY_BASIC, LEGACY_CUSTOM, write_legacy_project, write_trainer


@pytest.fixture
def trainer(tmp_path: Path) -> Path:
    """A minimal trainer package, ``tmp_path/src/trainer`` (``__init__.py`` and a ``task.py`` that prints)."""
    return write_trainer(tmp_path, "print('training')\n")


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``tmp_path`` as the working directory, holding an empty ``trainer`` package."""
    trainer = tmp_path / "trainer"
    trainer.mkdir()
    (trainer / "__init__.py").write_text("")
    (trainer / "task.py").write_text("")
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture
def cloud_build(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeCloudBuild]:
    """Cloud Build, Vertex AI, Cloud Storage and a registry on loopback (project ``p``), the CLI pointed at them."""
    with FakeCloudBuild(project="p") as fake:
        for key, value in build_env(fake).items():
            monkeypatch.setenv(key, value)
        yield fake


@pytest.fixture
def legacy_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``tmp_path`` as the working directory, holding ``trainer`` and ``legacy.yaml`` (a CUSTOM tier,
    ``LEGACY_CUSTOM``)."""
    write_legacy_project(tmp_path, LEGACY_CUSTOM)
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture
def basic_trainer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``tmp_path`` as the working directory, holding ``legacy.yaml`` (the BASIC tier, ``LEGACY_BASIC``) and the
    ``trainer`` package, which is returned."""
    trainer = write_legacy_project(tmp_path, LEGACY_BASIC)
    monkeypatch.chdir(tmp_path)
    return trainer
