"""A PyTorch trainer written for Vertex AI's prebuilt PyTorch images (README "What changes for the trainer").

It relies only on what Vertex AI sets in each replica: ``MASTER_ADDR``/``MASTER_PORT``/``WORLD_SIZE``/``RANK``
for ``torch.distributed`` (``init_method="env://"``), ``AIP_MODEL_DIR`` for its output and ``CLUSTER_SPEC`` for
its pool. ``mlsubmit local train --target vertex`` gives the same variables to local replicas. Each replica
all-reduces ``rank + 1`` with gloo and writes what it saw to ``$AIP_MODEL_DIR/replicas/RANK.json``.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import torch
import torch.distributed as dist

VARIABLES = (
    "CLUSTER_SPEC",
    "TF_CONFIG",
    "AIP_MODEL_DIR",
    "AIP_CHECKPOINT_DIR",
    "AIP_TENSORBOARD_LOG_DIR",
    "MASTER_ADDR",
    "MASTER_PORT",
    "WORLD_SIZE",
    "RANK",
)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--job-dir", default=None)
    parser.parse_known_args()
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    dist.init_process_group("gloo", init_method="env://", rank=rank, world_size=world)
    value = torch.tensor([float(rank + 1)])
    dist.all_reduce(value, op=dist.ReduceOp.SUM)
    dist.barrier()
    dist.destroy_process_group()
    out = Path(os.environ["AIP_MODEL_DIR"]) / "replicas"
    out.mkdir(parents=True, exist_ok=True)
    seen = {
        name: os.environ.get(name) for name in (*VARIABLES, *os.environ.get("EXTRA_VARIABLES", "").split())
    }
    result = {"rank": rank, "world_size": world, "sum": value.item(), "env": seen}
    (out / f"{rank}.json").write_text(json.dumps(result), encoding="utf-8")
    print(f"rank {rank}/{world}: all-reduce sum {value.item():g}")


if __name__ == "__main__":
    main()
