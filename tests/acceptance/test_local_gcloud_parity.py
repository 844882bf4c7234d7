"""TF_CONFIG parity with the real `gcloud ai-platform local train --distributed` (docs/local.md; https://cloud.google.com/ai-platform/training/docs/distributed-training-details).

Both tools run the same trainer, which records what each replica received. Where gcloud is right the two must be
identical (cluster addresses for one start port, task, job, environment, argv, working directory); the one
deliberate difference checked here is that mlsubmit leaves roles without replicas out of `cluster`, where gcloud
writes `"ps": []` (which breaks TensorFlow 2 multi-worker runs)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.cli import run_cli_process
from tests.fakes.gcloud_oracle import gcloud_executable, requires_gcloud
from tests.fakes.ports import free_block
from tests.fakes.trainers import write_trainer

pytestmark = [requires_gcloud, pytest.mark.gcloud]

# Records TF_CONFIG, argv and cwd; the primary waits for everyone, since gcloud kills the rest when it returns.
DUMP_TASK = """\
import json, os, sys, time
config = json.loads(os.environ["TF_CONFIG"])
task = config["task"]
kind = task.get("type", "chief")  # gcloud's single process: an empty task
name = kind if kind in ("chief", "master") else f"{kind}-{task['index']}"
out = os.environ["DUMP_DIR"]
with open(os.path.join(out, name + ".tmp"), "w") as f:
    json.dump({"tf_config": config, "argv": sys.argv[1:], "cwd": os.getcwd()}, f)
os.replace(os.path.join(out, name + ".tmp"), os.path.join(out, name + ".json"))
if name in ("chief", "master"):
    deadline = time.time() + 60
    while len([n for n in os.listdir(out) if n.endswith(".json")]) < int(os.environ["DUMP_COUNT"]):
        assert time.time() < deadline, "replicas missing"
        time.sleep(0.02)
"""


@pytest.fixture(scope="module")
def plain_python(tmp_path_factory: pytest.TempPathFactory) -> str:
    """An interpreter without TensorFlow: gcloud then names the primary `chief` at once instead of importing
    TensorFlow several times per run to guess."""
    venv = tmp_path_factory.mktemp("plain") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    return str(venv / "bin" / "python")


def dump(
    tmp_path: Path, tool: str, args: list[str], count: int, env: dict[str, str]
) -> dict[str, dict[str, Any]]:
    out = tmp_path / tool
    out.mkdir()
    proc_env = {**os.environ, **env, "DUMP_DIR": str(out), "DUMP_COUNT": str(count)}
    if tool == "gcloud":
        cmd = [gcloud_executable() or "gcloud", "ai-platform", "local", "train", *args]
        result = subprocess.run(cmd, env=proc_env, capture_output=True, text=True, timeout=180)
    else:
        result = run_cli_process(["local", "train", *args], env=proc_env, timeout=180)
    assert result.returncode == 0, f"{tool}: {result.stderr}"
    return {p.stem: json.loads(p.read_text()) for p in out.glob("*.json")}


@pytest.mark.parametrize(("workers", "ps", "evaluators"), [(2, 1, 1), (1, 0, 0)])
def test_tf_config_matches_gcloud_except_empty_roles(
    tmp_path: Path, plain_python: str, workers: int, ps: int, evaluators: int
) -> None:
    trainer = tmp_path / "src" / "trainer"
    trainer.mkdir(parents=True)
    (trainer / "__init__.py").write_text("")
    (trainer / "task.py").write_text(DUMP_TASK)
    count = 1 + workers + ps + evaluators
    start = free_block(1 + workers + ps)
    args = [
        "--package-path", str(trainer), "--module-name", "trainer.task", "--distributed",
        "--worker-count", str(workers), "--parameter-server-count", str(ps), "--evaluator-count", str(evaluators),
        "--start-port", str(start), "--job-dir", str(tmp_path / "out"), "--", "--epochs", "3",
    ]  # fmt: skip
    env = {
        "CLOUDSDK_CONFIG": str(tmp_path / "gcloud-config"),
        "CLOUDSDK_CORE_DISABLE_PROMPTS": "1",
        "CLOUDSDK_ML_ENGINE_LOCAL_PYTHON": plain_python,
        "MLSUBMIT_LOCAL_PYTHON": plain_python,
        "PATH": f"{Path(plain_python).parent}{os.pathsep}{os.environ['PATH']}",
    }
    theirs = dump(tmp_path, "gcloud", args, count, env)
    ours = dump(tmp_path, "mlsubmit", args, count, env)

    assert sorted(ours) == sorted(theirs)
    assert len(ours) == count
    for name, seen in theirs.items():
        expected = json.loads(json.dumps(seen))
        # The deliberate difference: no empty roles in `cluster`.
        expected["tf_config"]["cluster"] = {k: v for k, v in expected["tf_config"]["cluster"].items() if v}
        assert ours[name] == expected, name
    if ps == 0:
        assert theirs["chief"]["tf_config"]["cluster"]["ps"] == []
        assert "ps" not in ours["chief"]["tf_config"]["cluster"]


def test_single_process_tf_config_is_gclouds(tmp_path: Path, plain_python: str) -> None:
    """Without --distributed gcloud gives an empty cluster and an empty task (a task type without a cluster
    stops tf.estimator: issue 27); mlsubmit gives the same."""
    trainer = write_trainer(tmp_path, DUMP_TASK)
    args = ["--package-path", str(trainer), "--module-name", "trainer.task", "--job-dir", str(tmp_path / "o")]
    env = {
        "CLOUDSDK_CONFIG": str(tmp_path / "gcloud-config"),
        "CLOUDSDK_CORE_DISABLE_PROMPTS": "1",
        "CLOUDSDK_ML_ENGINE_LOCAL_PYTHON": plain_python,
        "MLSUBMIT_LOCAL_PYTHON": plain_python,
    }
    theirs = dump(tmp_path, "gcloud", args, 1, env)
    ours = dump(tmp_path, "mlsubmit", args, 1, env)
    assert theirs["chief"]["tf_config"]["cluster"] == {} and theirs["chief"]["tf_config"]["task"] == {}
    assert ours == theirs
