"""A Python 2.7 job on the legacy service ran Python 2: `training --target ml` does not call its Python 2 code
an error there, and still does when the job moves to Python 3 (issue 27, smaller items)."""

from __future__ import annotations

from pathlib import Path

from tests.fakes.cli import run_cli
from tests.fakes.trainers import write_trainer

TASK = "for i in xrange(3):\n    print(i)\n"
ARGS = [
    "training",
    "j1",
    "--module-name",
    "trainer.task",
    "--region",
    "us-central1",
    "--runtime-version",
    "1.15",
]
ARGS += ["--staging-bucket", "gs://my-bucket", "--dry-run"]


def test_python2_code_is_no_finding_where_the_job_runs_python2(tmp_path: Path) -> None:
    package = str(write_trainer(tmp_path, TASK))
    legacy = run_cli([*ARGS, "--package-path", package, "--python-version", "2.7"])
    assert legacy.exit_code == 0, legacy.stderr
    assert "py2" not in legacy.stderr
    moved = run_cli([*ARGS, "--package-path", package, "--python-version", "3.7"])
    assert moved.exit_code == 0, moved.stderr
    assert "trainer/task.py:1 py2" in moved.stderr
