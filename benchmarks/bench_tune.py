"""Overhead per trial of `mlsubmit local tune`: from one trial's end to the next one's start.

A trivial trainer records the wall-clock time as its first statement and, after reporting its metric with
cloudml-hypertune, as its last; with ``maxParallelTrials: 1`` the gap between trial N's last statement and
trial N+1's first is everything mlsubmit does between two trials (noticing the end, reading the metric file,
saving the study, asking the sampler, planning ports, starting the interpreter). Bare interpreter start-up
(``python -c pass``) is shown beside it, since that part is the trainer's, not the tuner's.

Run: python benchmarks/bench_tune.py [--trials 20] [--algorithm RANDOM_SEARCH|ALGORITHM_UNSPECIFIED|GRID_SEARCH]
                                     [--distributed]
"""

from __future__ import annotations

import argparse
import datetime
import itertools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

TRAINER = """\
import time
started = time.time()
import json, os, sys
task = json.loads(os.environ.get("TF_CONFIG") or "{}").get("task", {})
if task.get("type", "chief") in ("chief", "master"):
    import hypertune
    x = float(sys.argv[1].split("=", 1)[1])
    hypertune.HyperTune().report_hyperparameter_tuning_metric(
        hyperparameter_metric_tag="m", metric_value=-(x - 0.3) ** 2, global_step=1)
    with open(os.path.join(os.environ["BENCH_DIR"], os.environ["CLOUD_ML_TRIAL_ID"]), "w") as f:
        f.write(json.dumps([started, time.time()]))
"""


def make_trainer(root: Path) -> Path:
    trainer = root / "src" / "trainer"
    trainer.mkdir(parents=True)
    (trainer / "__init__.py").write_text("")
    (trainer / "task.py").write_text(TRAINER)
    return trainer


def config(root: Path, trials: int, algorithm: str) -> Path:
    param = (
        {"parameterName": "x", "type": "DISCRETE", "discreteValues": [i / trials for i in range(trials)]}
        if algorithm == "GRID_SEARCH"
        else {"parameterName": "x", "type": "DOUBLE", "minValue": 0, "maxValue": 1}
    )
    hp = {
        "goal": "MAXIMIZE",
        "hyperparameterMetricTag": "m",
        "algorithm": algorithm,
        "maxTrials": trials,
        "maxParallelTrials": 1,
        "params": [param],
    }
    path = root / "tune.json"
    path.write_text(json.dumps({"trainingInput": {"region": "us-central1", "hyperparameters": hp}}))
    return path


def python_start() -> float:
    """Median seconds of `python -c pass` (what any trial pays to start its interpreter)."""
    samples = []
    for _ in range(7):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--algorithm", default="RANDOM_SEARCH")
    parser.add_argument("--distributed", action="store_true", help="each trial a chief and one worker")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-tune-") as tmp:
        root = Path(tmp)
        trainer = make_trainer(root)
        marks = root / "marks"
        marks.mkdir()
        command = [
            sys.executable,
            "-m",
            "mlsubmit",
            "local",
            "tune",
            "--package-path",
            str(trainer),
            "--module-name",
            "trainer.task",
            "--config",
            str(config(root, args.trials, args.algorithm)),
            "--job-dir",
            str(root / "out"),
            "--format",
            "json",
        ]
        if args.distributed:
            command += ["--distributed", "--worker-count", "1", "--parameter-server-count", "0"]
        env = {**os.environ, "PYTHONPATH": str(ROOT), "BENCH_DIR": str(marks)}
        started = time.perf_counter()
        done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
        total = time.perf_counter() - started
        if done.returncode != 0:
            sys.exit(f"local tune failed ({done.returncode}):\n{done.stderr}")
        spans = [json.loads((marks / str(i)).read_text()) for i in range(1, args.trials + 1)]
    # Where the gap goes, from the startTime/endTime mlsubmit records for each trial.
    recorded = {
        t["trialId"]: (_epoch(t["startTime"]), _epoch(t["endTime"]))
        for t in json.loads(done.stdout)["trials"]
    }
    times = [recorded[str(i)] for i in range(1, args.trials + 1)]
    noticed = [rec[1] - span[1] for rec, span in zip(times, spans, strict=True)]
    launched = [span[0] - rec[0] for rec, span in zip(times, spans, strict=True)]
    between = [nxt[0] - prev[1] for prev, nxt in itertools.pairwise(times)]
    gaps = [nxt[0] - prev[1] for prev, nxt in itertools.pairwise(spans)]
    baseline = python_start()
    shape = "chief + 1 worker" if args.distributed else "single process"
    print(f"local tune, {args.trials} trials, {args.algorithm}, {shape}, maxParallelTrials 1")
    print(
        f"  whole study:                        {total:.2f} s ({total / args.trials * 1000:.0f} ms per trial)"
    )
    print(
        f"  trial end -> next trial start:      median {statistics.median(gaps) * 1000:.0f} ms, "
        f"max {max(gaps) * 1000:.0f} ms"
    )
    print(
        f"    trainer's last statement -> end recorded:   median {statistics.median(noticed) * 1000:.0f} ms"
    )
    print(
        f"    end recorded -> next start recorded:        median {statistics.median(between) * 1000:.0f} ms"
    )
    print(
        f"    start recorded -> trainer's first statement: median {statistics.median(launched) * 1000:.0f} ms"
    )
    print(f"  python start-up alone (-c pass):    {baseline * 1000:.0f} ms")


def _epoch(text: str) -> float:
    return (
        datetime.datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ")
        .replace(tzinfo=datetime.timezone.utc)
        .timestamp()
    )


if __name__ == "__main__":
    main()
