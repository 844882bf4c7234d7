"""Real TensorFlow through `mlsubmit local train --distributed`, with examples/trainer_tf:
MultiWorkerMirroredStrategy all-reduce over chief + 1 worker (no ps) finishes on both replicas, and
ParameterServerStrategy with chief + 2 workers + 1 ps finishes on the chief."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fakes.cli import run_cli_process

REPO = Path(__file__).resolve().parents[2]
TRAINER = REPO / "examples" / "trainer_tf" / "trainer"

pytestmark = [
    pytest.mark.tensorflow,
    pytest.mark.skipif(importlib.util.find_spec("tensorflow") is None, reason="needs tensorflow-cpu"),
]


def local_train(job_dir: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    cmd = [
        "local", "train", "--package-path", str(TRAINER),
        "--module-name", "trainer.task", "--python", sys.executable, "--distributed", "--job-dir", str(job_dir),
        "--max-running-time", "300s", *flags, "--", "--steps", "10",
    ]  # fmt: skip
    return run_cli_process(cmd, env={"CUDA_VISIBLE_DEVICES": "-1"}, timeout=400)


def test_multi_worker_mirrored_all_reduce_finishes_on_both_replicas(tmp_path: Path) -> None:
    result = local_train(tmp_path, "--worker-count", "1", "--parameter-server-count", "0")
    assert result.returncode == 0, result.stdout + result.stderr
    replicas = {p.stem: json.loads(p.read_text()) for p in (tmp_path / "replicas").glob("*.json")}
    assert sorted(replicas) == ["chief-0", "worker-0"]
    for replica in replicas.values():
        assert replica["replicas_in_sync"] == 2
    # Lockstep training on all-reduced gradients: both hold the same model, and it learned something.
    assert replicas["chief-0"]["w"] == pytest.approx(replicas["worker-0"]["w"])
    assert replicas["chief-0"]["loss"] < 4.0
    lines = result.stdout.splitlines()
    assert "[chief] chief-0: done (2 replicas reached the final all-reduce)" in lines
    assert "[worker-0] worker-0: done (2 replicas reached the final all-reduce)" in lines


def test_parameter_server_strategy_finishes_on_the_chief(tmp_path: Path) -> None:
    result = local_train(tmp_path, "--worker-count", "2", "--parameter-server-count", "1")
    assert result.returncode == 0, result.stdout + result.stderr
    model = json.loads((tmp_path / "model.json").read_text())
    assert model["strategy"] == "ps" and model["loss"] < 4.0
    lines = result.stdout.splitlines()
    assert "[chief] chief: done" in lines
    assert any(
        line.startswith("[chief] chief: ParameterServerStrategy") and "2 workers" in line for line in lines
    )
    for name in ("worker-0", "worker-1", "ps-0"):
        assert f"[{name}] {name}: serving until the chief is done" in lines
