"""Fixtures shared by the acceptance tests (a test file's own fixture of the same name wins)."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def trainer(tmp_path: Path) -> Path:
    """A minimal trainer package, ``tmp_path/src/trainer`` (``__init__.py`` and a ``task.py`` that prints)."""
    package = tmp_path / "src" / "trainer"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "task.py").write_text("print('training')\n")
    return package


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``tmp_path`` as the working directory, holding an empty ``trainer`` package."""
    trainer = tmp_path / "trainer"
    trainer.mkdir()
    (trainer / "__init__.py").write_text("")
    (trainer / "task.py").write_text("")
    monkeypatch.chdir(tmp_path)
    return tmp_path
