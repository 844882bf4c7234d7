"""The one way tests write a trainer package: ``ROOT/src/trainer/{__init__.py,task.py}``.

Used by the CLI tests that run ``local train``, ``local tune`` or ``migrate`` on a small trainer::

    trainer = write_trainer(tmp_path, TASK)  # tmp_path / "src" / "trainer"
    run_cli_process([*local_tune_args(trainer, config, tmp_path / "out")])

and, for ``training --config legacy.yaml --package-path trainer``, by :func:`write_legacy_project`.
"""

from __future__ import annotations

from pathlib import Path


def write_trainer(root: Path, task: str) -> Path:
    """Write the package ``trainer`` (an empty ``__init__.py`` and ``task.py`` holding ``task``) under
    ``root/src`` and return its folder, the ``--package-path`` of the CLI."""
    return write_package(root / "src", task)


def write_package(parent: Path, task: str) -> Path:
    """Write the package ``parent/trainer`` (an empty ``__init__.py`` and ``task.py`` holding ``task``) and return
    its folder."""
    package = parent / "trainer"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "task.py").write_text(task)
    return package


LEGACY_CUSTOM = """\
trainingInput:
  region: us-central1
  scaleTier: CUSTOM
  runtimeVersion: "2.11"
  pythonVersion: "3.7"
  pythonModule: trainer.task
  masterType: n1-standard-8
  workerType: n1-standard-8
  workerCount: 1
"""
LEGACY_BASIC = """\
trainingInput:
  region: us-central1
  scaleTier: BASIC
  runtimeVersion: "2.11"
  pythonVersion: "3.7"
  pythonModule: trainer.task
"""


def write_legacy_project(root: Path, config: str) -> Path:
    """Write ``root/trainer`` (an empty ``__init__.py`` and a ``task.py`` that prints) and ``root/legacy.yaml``
    holding ``config``; return the package folder (``--package-path trainer`` run from ``root``)."""
    package = write_package(root, "print('training')\n")
    (root / "legacy.yaml").write_text(config)
    return package
