"""A tiny trainer for hyperparameter tuning: no framework, a known optimum, real cloudml-hypertune reports.

Its "accuracy" after each epoch is ``quality * (1 - 0.5 ** epoch)`` where ``quality`` is best at
``--learning_rate=0.01 --units=32 --optimizer=adam --layers=2`` (README "Tuning"). The chief reports it every
epoch with cloudml-hypertune (``pip install cloudml-hypertune``), the way trainers reported to AI Platform and
Vertex AI; workers only wait. Each replica writes ``replica-<task>.json`` (its arguments, TF_CONFIG and start
and end times) into ``--job-dir`` so that runs can be inspected.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import time


def quality(learning_rate: float, units: int, optimizer: str, layers: int) -> float:
    """The final accuracy a configuration reaches (higher is better; 0.9 at the optimum)."""
    score = 0.9 - 0.1 * (math.log10(learning_rate) + 2) ** 2
    score -= 0.02 * (math.log2(units) - 5) ** 2
    score -= 0.0 if optimizer == "adam" else 0.05
    score -= 0.03 * abs(layers - 2)
    return score


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--learning_rate", type=float, default=0.1)
    parser.add_argument("--units", type=int, default=16)
    parser.add_argument("--optimizer", choices=["sgd", "adam"], default="sgd")
    parser.add_argument("--layers", type=int, default=1)
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--epoch-seconds", type=float, default=0.0, help="sleep per epoch (to watch trials)")
    parser.add_argument("--job-dir", default=None)
    args = parser.parse_args()

    tf_config = json.loads(os.environ.get("TF_CONFIG") or "{}")
    task = tf_config.get("task") or {}
    kind = task.get("type") or "chief"  # a single process has no task type (gcloud's `local train`)
    name = f"{kind}-{task.get('index', 0)}"
    started = time.time()
    is_chief = kind in ("chief", "master")
    hpt = None
    if is_chief:
        import hypertune  # cloudml-hypertune

        hpt = hypertune.HyperTune()
    target = quality(args.learning_rate, args.units, args.optimizer, args.layers)
    for epoch in range(1, args.epochs + 1):
        time.sleep(args.epoch_seconds)
        accuracy = target * (1 - 0.5**epoch)
        if hpt is not None:
            hpt.report_hyperparameter_tuning_metric(
                hyperparameter_metric_tag="accuracy", metric_value=accuracy, global_step=epoch
            )
    if args.job_dir:
        os.makedirs(args.job_dir, exist_ok=True)
        record = {
            "args": vars(args),
            "tf_config": tf_config,
            "trial": os.environ.get("CLOUD_ML_TRIAL_ID"),
            "pid": os.getpid(),
            "start": started,
            "end": time.time(),
        }
        path = os.path.join(args.job_dir, f"replica-{name}.json")
        # written whole or not at all: a worker is stopped when its chief ends
        with open(path + ".part", "w") as handle:
            json.dump(record, handle)
        os.replace(path + ".part", path)
    if is_chief:
        print(f"accuracy {accuracy:.4f}")


if __name__ == "__main__":
    main()
