"""The one way tests write a trainer package: ``ROOT/src/trainer/{__init__.py,task.py}``.

Used by the CLI tests that run ``local train``, ``local tune`` or ``migrate`` on a small trainer::

    trainer = write_trainer(tmp_path, TASK)  # tmp_path / "src" / "trainer"
    run_cli_process([*local_tune_args(trainer, config, tmp_path / "out")])
"""

from __future__ import annotations

from pathlib import Path


def write_trainer(root: Path, task: str) -> Path:
    """Write the package ``trainer`` (an empty ``__init__.py`` and ``task.py`` holding ``task``) under
    ``root/src`` and return its folder, the ``--package-path`` of the CLI."""
    package = root / "src" / "trainer"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "task.py").write_text(task)
    return package
