"""`mlsubmit local train --target vertex`: a real torch.distributed gloo all-reduce across 3 local replicas
(chief + 2 workers), started with nothing but the variables Vertex AI sets (examples/trainer_torch)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TRAINER = REPO / "examples" / "trainer_torch" / "trainer"

pytestmark = pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="needs torch (CPU)")


def local_train(job_dir: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    cmd = [
        sys.executable, "-m", "mlsubmit", "local", "train", "--target", "vertex", "--package-path", str(TRAINER),
        "--module-name", "trainer.task", "--python", sys.executable, "--job-dir", str(job_dir),
        "--max-running-time", "240s", *flags,
    ]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(REPO), "CUDA_VISIBLE_DEVICES": "-1", "EXTRA_VARIABLES": "TEAM"}
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)


def test_gloo_all_reduce_across_chief_and_two_workers(tmp_path: Path) -> None:
    result = local_train(
        tmp_path,
        "--distributed",
        "--worker-count",
        "2",
        "--parameter-server-count",
        "0",
        "--env",
        "TEAM=vision",
    )
    assert result.returncode == 0, result.stdout + result.stderr
    replicas = {
        int(p.stem): json.loads(p.read_text()) for p in (tmp_path / "model" / "replicas").glob("*.json")
    }
    assert sorted(replicas) == [0, 1, 2]  # three distinct ranks: no duplicated RANK
    for rank, seen in replicas.items():
        assert seen["world_size"] == 3
        assert seen["sum"] == 1 + 2 + 3  # every replica took part in the all-reduce
        env = seen["env"]
        assert env["TEAM"] == "vision"
        spec = json.loads(env["CLUSTER_SPEC"])
        assert spec["task"] == {
            "type": "workerpool0" if rank == 0 else "workerpool1",
            "index": max(rank - 1, 0),
        }
        assert env["MASTER_ADDR"] + ":" + env["MASTER_PORT"] == spec["cluster"]["workerpool0"][0]
    lines = result.stdout.splitlines()
    assert "[chief] rank 0/3: all-reduce sum 6" in lines
    assert "[worker-1] rank 2/3: all-reduce sum 6" in lines


def test_a_single_replica_is_a_world_of_one(tmp_path: Path) -> None:
    result = local_train(tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    seen = json.loads((tmp_path / "model" / "replicas" / "0.json").read_text())
    assert seen["sum"] == 1 and seen["world_size"] == 1
    assert json.loads(seen["env"]["CLUSTER_SPEC"])["task"] == {"type": "workerpool0", "index": 0}
