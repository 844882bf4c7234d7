"""`training --build-image` with no runtime builds on TensorFlow 2.17 (Keras 3), says so, and the checkup judges
the trainer against it (issue 27, item 2): a model fed by `layers.DenseFeatures` is an error there, and not on a
runtime whose image still has Keras 2 (docs/migrate.md)."""

from __future__ import annotations

from pathlib import Path

from tests.fakes.cli import run_cli
from tests.fakes.trainers import write_trainer

TASK = """\
import tensorflow as tf
from tensorflow.keras import layers

columns = [tf.feature_column.numeric_column("age")]
inputs = {"age": tf.keras.Input(shape=(1,), name="age")}
dense = layers.DenseFeatures(columns)(inputs)
model = tf.keras.Model(inputs, layers.Dense(1)(dense))
model.save("export")
"""
ARGS = ["training", "j1", "--module-name", "trainer.task", "--region", "us-central1", "--project", "p1"]
ARGS += ["--staging-bucket", "gs://my-bucket", "--target", "vertex", "--build-image", "--dry-run"]


def test_the_default_base_is_named_and_keras3_breaks_are_errors(tmp_path: Path) -> None:
    result = run_cli([*ARGS, "--package-path", str(write_trainer(tmp_path, TASK))])
    assert result.exit_code == 0, result.stderr
    assert "the job names no runtimeVersion or framework, so TensorFlow 2.17 (Keras 3" in result.stderr
    assert (
        "WARNING: the trainer checkup found 2 error(s) that fail on this job's target: trainer/task.py:6 "
        "keras3-removed; trainer/task.py:8 keras3-removed;" in result.stderr
    )


def test_a_keras2_runtime_is_not_warned(tmp_path: Path) -> None:
    package = write_trainer(tmp_path, TASK)
    result = run_cli([*ARGS, "--package-path", str(package), "--runtime-version", "2.11"])
    assert result.exit_code == 0, result.stderr
    assert "keras3" not in result.stderr and "trainer checkup" not in result.stderr
