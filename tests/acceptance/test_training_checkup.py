"""`mlsubmit training` reads the trainer it packages and says, in one line, what will fail on the target; a
Vertex AI tuning job whose trainer reports no metric Vertex can read is warned about
(docs/migrate.md)."""

from __future__ import annotations

import builtins
import io
import os
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.cli import run_cli

BASE = ["training", "j1", "--module-name", "trainer.task", "--region", "us-central1"]
BASE += ["--staging-bucket", "gs://my-bucket", "--job-dir", "gs://my-bucket/o", "--dry-run"]


def package(tmp_path: Path, source: str) -> str:
    folder = tmp_path / "trainer"
    folder.mkdir()
    (folder / "__init__.py").write_text("")
    (folder / "task.py").write_text(source)
    return str(folder)


def test_one_line_for_the_errors(tmp_path: Path) -> None:
    trainer = package(tmp_path, "import tensorflow as tf\ntf.logging.info('x')\ntf.gfile.Open('f')\n")
    result = run_cli([*BASE, "--package-path", trainer, "--runtime-version", "2.11"])
    assert result.exit_code == 0, result.stderr
    assert result.stderr.splitlines() == [
        "WARNING: the trainer checkup found 2 error(s) that fail on this job's target: trainer/task.py:2 "
        "tf-logging; trainer/task.py:3 tf-gfile; run `mlsubmit migrate` with the same flags for the fixes"
    ]


def test_nothing_for_a_trainer_that_runs(tmp_path: Path) -> None:
    trainer = package(tmp_path, "import tensorflow as tf\ntf.io.gfile.GFile('f')\n")
    result = run_cli([*BASE, "--package-path", trainer, "--runtime-version", "2.11"])
    assert result.exit_code == 0 and result.stderr == ""


@pytest.mark.parametrize(
    ("source", "warned"),
    [
        ("import tensorflow as tf\ntf.summary.scalar('accuracy', 1.0)\n", True),
        ("import hypertune\nhypertune.HyperTune().report_hyperparameter_tuning_metric(\n"
         "    hyperparameter_metric_tag='accuracy', metric_value=1.0)\n", False),
    ],
)  # fmt: skip
def test_a_vertex_tuning_job_whose_metric_vertex_cannot_read(
    tmp_path: Path, source: str, warned: bool
) -> None:
    config = tmp_path / "hp.yaml"
    config.write_text(
        "trainingInput:\n  runtimeVersion: '2.11'\n  hyperparameters:\n    goal: MAXIMIZE\n"
        "    hyperparameterMetricTag: accuracy\n    maxTrials: 2\n"
        "    params:\n    - {parameterName: lr, type: DOUBLE, minValue: 0.01, maxValue: 0.1}\n"
    )
    trainer = package(tmp_path, source)
    args = [*BASE, "--package-path", trainer, "--config", str(config)]
    vertex = run_cli([*args, "--target", "vertex"])
    assert vertex.exit_code == 0, vertex.stderr
    assert (
        "WARNING: trainer/task.py:2: this tuning job's metric 'accuracy' is never reported with cloudml-hypertune"
        in vertex.stderr
    ) is warned
    assert (
        "hypertune.HyperTune().report_hyperparameter_tuning_metric(hyperparameter_metric_tag='accuracy'"
        in vertex.stderr
    ) is warned
    legacy = run_cli(args)  # the legacy service also read TensorFlow summaries
    assert legacy.exit_code == 0 and "hypertune" not in legacy.stderr


def test_a_config_with_a_vertex_block_is_checked_by_vertex_rules_first(tmp_path: Path) -> None:
    config = tmp_path / "hp.yaml"
    config.write_text(
        "vertex: {framework: pytorch, frameworkVersion: '2.4'}\ntrainingInput:\n  hyperparameters:\n"
        "    goal: MAXIMIZE\n    hyperparameterMetricTag: accuracy\n    maxTrials: 2\n"
        "    params:\n    - {parameterName: lr, type: DOUBLE, minValue: 0.01, maxValue: 0.1}\n"
    )
    trainer = package(tmp_path, "import torch\n\nprint('accuracy', 1.0)\n")
    result = run_cli([*BASE, "--package-path", trainer, "--config", str(config), "--target", "vertex"])
    assert result.exit_code == 0, result.stderr
    assert (
        "WARNING: trainer/task.py:3: this tuning job's metric 'accuracy' is never reported" in result.stderr
    )


def test_the_package_is_walked_and_read_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The checkup reads the files the sdist build walked and read: no second walk, no second read."""
    trainer = package(tmp_path, "import tensorflow as tf\ntf.gfile.Open('f')\n")
    (Path(trainer) / "model.py").write_text("from tensorflow.contrib import layers\n")
    modules = sorted(os.path.realpath(p) for p in Path(trainer).glob("*.py"))
    opened: Counter[str] = Counter()
    listed: Counter[str] = Counter()

    def counting(real: Any, counter: Counter[str]) -> Any:
        def call(path: Any, *args: Any, **kwargs: Any) -> Any:
            if isinstance(path, (str, os.PathLike)):
                counter[os.path.realpath(path)] += 1
            return real(path, *args, **kwargs)

        return call

    for module, name in ((builtins, "open"), (io, "open"), (os, "open")):
        monkeypatch.setattr(module, name, counting(getattr(module, name), opened))
    monkeypatch.setattr(os, "scandir", counting(os.scandir, listed))

    result = run_cli([*BASE, "--package-path", trainer, "--runtime-version", "2.11"])

    assert result.exit_code == 0, result.stderr
    assert "found 2 error(s)" in result.stderr  # the checkup read both modules
    assert {m: opened[m] for m in modules} == dict.fromkeys(modules, 1)
    assert listed[os.path.realpath(trainer)] == 1
