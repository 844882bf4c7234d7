"""A trainer that needs nothing but Python: fits y = 3x + 2 by gradient descent and writes the model to --job-dir.

It behaves like a real distributed trainer as far as ``mlsubmit local train`` (and the cloud) can tell:

* it reads its role from TF_CONFIG (``chief``/``master``, ``worker``, ``ps``, ``evaluator``), or runs alone when
  TF_CONFIG has no ``cluster``;
* the chief and each worker train on their own shard of the data; the chief writes ``model.json`` and each
  worker ``workers/worker-N.json`` under the job dir;
* a parameter server has nothing to serve here, so it waits to be stopped, as a TensorFlow server does;
* an evaluator waits for the chief's model, evaluates it and exits.

Run it:  mlsubmit local train --package-path examples/trainer_basic/trainer --module-name trainer.task \\
             --distributed --worker-count 2 --parameter-server-count 1 --job-dir /tmp/mlsubmit-demo
"""

from __future__ import annotations

import argparse
import json
import os
import random
import time


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--job-dir", default=None, help="Where to write the model (a local directory).")
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--learning-rate", type=float, default=0.5)
    parser.add_argument("--samples", type=int, default=256)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--worker-timeout", type=float, default=60.0, help="How long the chief waits for workers."
    )
    return parser.parse_args(argv)


def read_tf_config() -> tuple[str, int, dict[str, list[str]]]:
    """Role, index and cluster from TF_CONFIG; a process without TF_CONFIG or cluster is a lone chief."""
    config = json.loads(os.environ.get("TF_CONFIG") or "{}")
    task = config.get("task") or {}
    return task.get("type") or "chief", int(task.get("index") or 0), config.get("cluster") or {}


def make_data(samples: int, seed: int) -> list[tuple[float, float]]:
    rng = random.Random(seed)
    points = []
    for _ in range(samples):
        x = rng.uniform(-1.0, 1.0)
        points.append((x, 3.0 * x + 2.0 + rng.gauss(0.0, 0.05)))
    return points


def train(points: list[tuple[float, float]], epochs: int, learning_rate: float) -> tuple[float, float, float]:
    """Full-batch gradient descent on mean squared error; returns (w, b, final loss)."""
    w = b = 0.0
    loss = float("inf")
    for epoch in range(epochs):
        grad_w = grad_b = loss = 0.0
        for x, y in points:
            err = w * x + b - y
            grad_w += 2 * err * x
            grad_b += 2 * err
            loss += err * err
        n = len(points)
        w -= learning_rate * grad_w / n
        b -= learning_rate * grad_b / n
        loss /= n
        print(f"epoch {epoch + 1}/{epochs} loss={loss:.4f}")
    return w, b, loss


def write_json(path: str, data: dict[str, object]) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.tmp"
    with open(tmp, "w") as handle:
        json.dump(data, handle, indent=2, sort_keys=True)
    os.replace(tmp, path)  # readers (the evaluator) never see half a file


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    role, index, cluster = read_tf_config()
    print(f"role={role} index={index} cluster={sorted(cluster)} job_dir={args.job_dir}")

    if role == "ps":
        print("parameter server ready; nothing to serve in this example, waiting to be stopped")
        while True:
            time.sleep(3600)

    model_path = os.path.join(args.job_dir, "model.json") if args.job_dir else None
    if role == "evaluator":
        while model_path and not os.path.exists(model_path):
            time.sleep(0.1)
        if model_path:
            with open(model_path) as handle:
                model = json.load(handle)
            print(f"evaluated the chief's model: w={model['w']:.3f} b={model['b']:.3f}")
        return 0

    # The chief (or master) and the workers split the data between them, one shard each.
    trainers = len(cluster.get("worker", [])) + 1
    shard = index + 1 if role == "worker" else 0
    points = make_data(args.samples, args.seed)[shard::trainers]
    w, b, loss = train(points, args.epochs, args.learning_rate)
    result = {"role": role, "index": index, "w": w, "b": b, "loss": loss, "samples": len(points)}
    if args.job_dir:
        if role in ("chief", "master"):
            # Like a synchronous trainer, the chief finishes after the workers: when the chief ends, the
            # cluster is torn down, so it waits (bounded) for every worker's result first.
            wait_for_workers(args.job_dir, len(cluster.get("worker", [])), args.worker_timeout)
            write_json(model_path or "", result)
        else:
            write_json(os.path.join(args.job_dir, "workers", f"{role}-{index}.json"), result)
    print(f"done: w={w:.3f} b={b:.3f} loss={loss:.4f}")
    return 0


def wait_for_workers(job_dir: str, workers: int, timeout: float) -> None:
    """Wait until every worker has written its result (or ``timeout`` seconds pass)."""
    deadline = time.monotonic() + timeout
    paths = [os.path.join(job_dir, "workers", f"worker-{i}.json") for i in range(workers)]
    while not all(os.path.exists(p) for p in paths) and time.monotonic() < deadline:
        time.sleep(0.05)


if __name__ == "__main__":
    raise SystemExit(main())
