"""A tf.estimator-style trainer run by `mlsubmit local train` without `--distributed` (issue 27, item 1).

The trainer reads TF_CONFIG through TensorFlow's own ``TFConfigClusterResolver`` and then applies the check
``tf.estimator.RunConfig`` makes at construction (the Estimator left TensorFlow in 2.16, so the rule is restated
here): with no ``cluster`` the task type must be empty or ``worker`` and the index 0; with a ``cluster`` the task
must name a role listed in it. gcloud's `local train` gives one process ``{"cluster": {}, "task": {}}``; Vertex AI
lists its one replica in the cluster (docs/legacy-jobs.md)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

from tests.fakes.cli import run_cli_process
from tests.fakes.trainers import write_trainer

pytestmark = [
    pytest.mark.tensorflow,
    pytest.mark.skipif(importlib.util.find_spec("tensorflow") is None, reason="needs tensorflow-cpu"),
]

ESTIMATOR_TASK = """\
import json, os, sys

import tensorflow as tf


def run_config_check(resolver):
    # What tf.estimator.RunConfig refuses when it reads TF_CONFIG (the Estimator's rule, restated).
    cluster = resolver.cluster_spec().as_dict()
    task_type, task_id = resolver.task_type, resolver.task_id or 0
    if not cluster:
        if task_type not in (None, "", "worker"):
            raise ValueError('If "cluster" is not set in TF_CONFIG, task type must be WORKER.')
        if task_id != 0:
            raise ValueError('If "cluster" is not set in TF_CONFIG, task index must be 0.')
        return "local"
    if not task_type:
        raise ValueError('If "cluster" is set in TF_CONFIG, must have one "task_type" set.')
    if task_type != "evaluator" and task_type not in cluster:
        raise ValueError("%s is not a valid task_type in the cluster_spec" % task_type)
    return "distributed"


resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
mode = run_config_check(resolver)
total = tf.reduce_sum(tf.constant([1.0, 2.0, 3.0]))
out = os.path.join(sys.argv[sys.argv.index("--job-dir") + 1], "seen.json")
with open(out, "w") as f:
    json.dump({"mode": mode, "tf_config": json.loads(os.environ["TF_CONFIG"]), "total": float(total)}, f)
print("estimator-style trainer ran as", mode)
"""


def run(tmp_path: Path, *flags: str) -> tuple[int, str, dict[str, object]]:
    package = write_trainer(tmp_path, ESTIMATOR_TASK)
    job_dir = tmp_path / "out"
    job_dir.mkdir()
    cmd = [
        "local", "train", "--package-path", str(package), "--module-name", "trainer.task",
        "--python", sys.executable, "--job-dir", str(job_dir), *flags,
    ]  # fmt: skip
    result = run_cli_process(
        cmd,
        env={"CUDA_VISIBLE_DEVICES": "-1", "TF_CPP_MIN_LOG_LEVEL": "3"},
        timeout=300,
    )
    seen = json.loads((job_dir / "seen.json").read_text()) if (job_dir / "seen.json").exists() else {}
    return result.returncode, result.stdout + result.stderr, seen


def test_ml_target_gives_gclouds_empty_cluster_and_task(tmp_path: Path) -> None:
    status, output, seen = run(tmp_path)
    assert status == 0, output
    assert "[chief] estimator-style trainer ran as local" in output
    config = seen["tf_config"]
    assert isinstance(config, dict)
    assert config["cluster"] == {} and config["task"] == {} and config["environment"] == "cloud"
    assert seen["total"] == 6.0


def test_vertex_target_lists_the_one_replica_in_its_cluster(tmp_path: Path) -> None:
    status, output, seen = run(tmp_path, "--target", "vertex")
    assert status == 0, output
    assert "[chief] estimator-style trainer ran as distributed" in output
    config = seen["tf_config"]
    assert isinstance(config, dict)
    assert config["task"] == {"type": "chief", "index": 0}
    (address,) = config["cluster"]["chief"]
    assert address.startswith("localhost:") and list(config["cluster"]) == ["chief"]
