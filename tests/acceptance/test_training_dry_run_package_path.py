"""What `training --package-path DIR --dry-run` loads, in a fresh process as a user runs it (issue 25's speed item:
benchmarks/bench_dry_run.py times it; this holds what the time was cut by, not the time)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mlsubmit.migrate import checkup
from tests.fakes.cli import MLSUBMIT_ROOT, run_cli
from tests.fakes.trainers import write_package

EXAMPLE_TRAINER = MLSUBMIT_ROOT / "examples" / "trainer_basic" / "trainer"

# Each costs the dry run's start-up and nothing of an ml job's dry run with a plain trainer needs it: the Vertex AI
# translation (the checkup asks it only for a tuning job's metric), the PEP 517 backend (only for a project with
# its own setup.py/pyproject.toml), `packaging` (only where a requirement is parsed), and what a config file's dry
# run already must not load (tests/acceptance/test_training_dry_run.py); nor a temporary folder and its janitor
# process (without an image to build, the sdist is held in memory), nor tarfile, gzip and OpenSSL's hashes (a small
# sdist's tar stream, gzip and sha256 are written without them, byte for byte the same: tests/unit/sdist).
NOT_FOR_A_PACKAGE_PATH_DRY_RUN = (
    "mlsubmit.targets.hptuning",
    "mlsubmit.targets.vertex",
    "mlsubmit.targets.pools",
    "mlsubmit.targets.trainer_image",
    "build",
    "pyproject_hooks",
    "packaging",
    "decimal",
    "logging",
    "mlsubmit.services.backends",
    "tempfile",
    "subprocess",
    "mlsubmit.proc.processes",
    "tarfile",
    "gzip",
    "hashlib",
)


def loaded_by(
    args: list[str], cwd: Path, names: tuple[str, ...]
) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    """Run ``python -m mlsubmit ARGS`` in a fresh interpreter; return it and which of ``names`` it imported."""
    probe = (
        "import json, runpy, sys\n"
        f"sys.argv = ['mlsubmit', *{args!r}]\n"
        "try:\n    runpy.run_module('mlsubmit', run_name='__main__')\n"
        "except SystemExit as end:\n    assert end.code in (0, None), end.code\n"
        f"print(json.dumps(sorted(set({names!r}) & set(sys.modules))), file=sys.stderr)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(MLSUBMIT_ROOT), "MLSUBMIT_TARGET": "ml"}
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=cwd, env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return done, json.loads(done.stderr.strip().splitlines()[-1])


def test_a_package_path_dry_run_loads_only_what_it_needs(tmp_path: Path) -> None:
    """The sdist is built and hashed and the trainer checked up, and none of
    :data:`NOT_FOR_A_PACKAGE_PATH_DRY_RUN` is imported."""
    shutil.copytree(EXAMPLE_TRAINER, tmp_path / "trainer")
    args = [
        "training",
        "j1",
        "--package-path",
        "trainer",
        "--module-name",
        "trainer.task",
        "--region",
        "us-central1",
        "--staging-bucket",
        "gs://my-bucket",
        "--runtime-version",
        "2.11",
        "--dry-run",
        "--format",
        "json",
    ]
    done, loaded = loaded_by(args, tmp_path, NOT_FOR_A_PACKAGE_PATH_DRY_RUN)
    assert loaded == []
    (uri,) = json.loads(done.stdout)["trainingInput"]["packageUris"]
    assert uri.startswith("gs://my-bucket/") and uri.endswith("/trainer-0.0.0.tar.gz")


def test_a_tuning_job_still_gets_the_checkup_of_its_metric(tmp_path: Path) -> None:
    """The tuning job's metric tag is still read (the Vertex translation loaded for it): a Vertex AI tuning job
    whose trainer never reports its metric with cloudml-hypertune is warned about, naming how to report it."""
    write_package(tmp_path, "print('training')\n")
    (tmp_path / "hp.yaml").write_text(
        "trainingInput:\n"
        "  hyperparameters:\n"
        "    goal: MAXIMIZE\n"
        "    hyperparameterMetricTag: accuracy\n"
        "    maxTrials: 2\n"
        "    params:\n"
        "    - {parameterName: lr, type: DOUBLE, minValue: 0.001, maxValue: 0.1}\n"
    )
    args = ["training", "j1", "--config", "hp.yaml", "--package-path", "trainer", "--module-name", "trainer.task",
            "--region", "us-central1", "--staging-bucket", "gs://my-bucket", "--target", "vertex",
            "--framework", "pytorch", "--framework-version", "2.4", "--dry-run", "--format", "json"]  # fmt: skip
    done, loaded = loaded_by(args, tmp_path, ("mlsubmit.targets.hptuning",))
    assert loaded == ["mlsubmit.targets.hptuning"]
    assert "'accuracy' is never reported with cloudml-hypertune" in done.stderr
    assert "hypertune.HyperTune().report_hyperparameter_tuning_metric(" in done.stderr


def test_the_checkup_does_not_read_back_the_sdist_the_build_just_wrote(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The build says what the sdist it generated holds (files, no requirements): the checkup's findings come
    without opening it again (for a large trainer that is a whole decompression)."""

    def read_back(sdist: Path) -> None:
        raise AssertionError(f"{sdist} read back")

    monkeypatch.setattr(checkup, "built_requirements", read_back)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "trainer").mkdir()
    (tmp_path / "trainer" / "__init__.py").write_text("")
    (tmp_path / "trainer" / "task.py").write_text("import tensorflow as tf\nprint tf.__version__\n")
    result = run_cli(
        ["training", "j1", "--package-path", "trainer", "--module-name", "trainer.task", "--region",
         "us-central1", "--staging-bucket", "gs://my-bucket", "--runtime-version", "2.11", "--dry-run"],
        env={"MLSUBMIT_TARGET": "ml"},
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert "WARNING: " in result.stderr and "trainer/task.py:2" in result.stderr  # the Python 2 print
