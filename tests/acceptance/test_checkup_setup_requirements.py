"""`migrate` and `training` judge a trainer whose setup.py builds install_requires at run time by what its built
sdist installs (issue 27, items 3 and 4): no false `missing-module`, the two commands agree, and a requirements
file setup.py reads but the sdist leaves out is an error in both. A --job-dir the trainer's own help says it
ignores draws no warning (docs/migrate.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fakes.cli import run_cli

TASK = """\
import argparse
import hypertune
import pandas as pd
import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--job-dir", default="out", help="this model ignores this field, but it is required by gcloud")
args = parser.parse_args()
hypertune.HyperTune().report_hyperparameter_tuning_metric(hyperparameter_metric_tag="accuracy", metric_value=1.0)
print(pd.__version__, tf.__version__)
"""
# install_requires from a file neither the AST nor the requirements-file convention names: only the built sdist
# tells what installing the package installs.
SETUP = """\
from setuptools import find_packages, setup

with open("deps.list") as listed:
    REQUIRED = listed.read().split()

setup(name="trainer", version="0.2", packages=find_packages(), install_requires=REQUIRED)
"""
HP = """\
trainingInput:
  runtimeVersion: '1.15'
  pythonVersion: '3.7'
  hyperparameters:
    goal: MAXIMIZE
    hyperparameterMetricTag: accuracy
    maxTrials: 2
    params:
    - {parameterName: lr, type: DOUBLE, minValue: 0.01, maxValue: 0.1}
"""
COMMON = [
    "j1",
    "--module-name",
    "trainer.task",
    "--region",
    "us-central1",
    "--staging-bucket",
    "gs://my-bucket",
]
COMMON += ["--project", "p1"]


def project(tmp_path: Path, *, setup: str, files: dict[str, str]) -> Path:
    trainer = tmp_path / "proj" / "trainer"
    trainer.mkdir(parents=True)
    (trainer / "__init__.py").write_text("")
    (trainer / "task.py").write_text(TASK)
    (trainer.parent / "setup.py").write_text(setup)
    for name, text in files.items():
        (trainer.parent / name).write_text(text)
    (tmp_path / "hp.yaml").write_text(HP)
    return trainer


def both(tmp_path: Path, trainer: Path) -> tuple[int, str, int, str]:
    args = [*COMMON, "--package-path", str(trainer), "--config", str(tmp_path / "hp.yaml")]
    migrated = run_cli(["migrate", *args, "--output-dir", str(tmp_path / "out"), "--strict"])
    trained = run_cli(["training", *args, "--target", "vertex", "--build-image", "--dry-run"])
    return migrated.exit_code, migrated.stderr, trained.exit_code, trained.stderr


def test_what_the_sdist_installs_is_not_missing_and_both_commands_agree(tmp_path: Path) -> None:
    trainer = project(
        tmp_path,
        setup=SETUP,
        files={"deps.list": "pandas>=1.0\ncloudml-hypertune\n", "MANIFEST.in": "include deps.list\n"},
    )
    migrate_status, migrate_err, training_status, training_err = both(tmp_path, trainer)
    assert migrate_status == 0, migrate_err
    assert "missing-module" not in migrate_err and "error" not in migrate_err.lower()
    assert "job-dir" not in migrate_err  # the help says the model ignores it
    assert training_status == 0, training_err
    assert "trainer checkup" not in training_err


@pytest.mark.parametrize("listed", ["requirements.txt", "deps.list"])
def test_a_requirements_file_the_sdist_leaves_out_is_an_error_in_both(tmp_path: Path, listed: str) -> None:
    setup = SETUP.replace("deps.list", listed)
    trainer = project(tmp_path, setup=setup, files={listed: "pandas>=1.0\ncloudml-hypertune\n"})
    migrate_status, migrate_err, training_status, training_err = both(tmp_path, trainer)
    where = f"setup.py:3: error requirements: setup.py reads {listed}, which the built sdist leaves out"
    assert where in migrate_err and f"add `include {listed}` to MANIFEST.in" in migrate_err
    assert migrate_status == 1  # --strict
    assert training_status == 0
    assert "the trainer checkup found 1 error(s) that fail on this job's target: setup.py:3 requirements" in (
        training_err
    )
    assert "missing-module" not in migrate_err + training_err
