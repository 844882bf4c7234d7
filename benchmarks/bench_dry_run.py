"""Dry-run latency: `mlsubmit training ... --dry-run` beside bare `python -c pass` and beside
`python -c "import click, yaml"` (the floor: a CLI that reads YAML cannot start faster; goal for a dry run with
a config file: at most 1.5x that floor).

The `--package-path` case also builds the small example trainer's sdist, hashes it and runs the trainer checkup
(issue 25: what that path imports is measured here).

Run: python benchmarks/bench_dry_run.py [--runs 20]
Each command runs as a fresh process, as CI would run it, the commands taking turns so a busy machine slows
them alike; the median wall time is reported with both ratios side by side.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONFIG = ROOT / "examples" / "configs" / "custom_tier.yaml"
TRAINER = ROOT / "examples" / "trainer_basic" / "trainer"  # a small trainer: built, hashed and checked up

FLOOR = "import click, yaml"
GOAL = 1.5  # a dry run with a config file costs at most this many times the floor

COMMANDS = {
    "python -c pass": [sys.executable, "-c", "pass"],
    FLOOR: [sys.executable, "-c", "import click, yaml"],
    "dry run (flags only)": [
        sys.executable,
        "-m",
        "mlsubmit",
        "training",
        "bench_job",
        "--region",
        "us-central1",
        "--packages",
        "gs://bench-bucket/trainer-0.0.0.tar.gz",
        "--module-name",
        "trainer.task",
        "--runtime-version",
        "2.11",
        "--dry-run",
        "--format",
        "json",
        "--",
        "--epochs",
        "3",
    ],
    "dry run (config file)": [
        sys.executable,
        "-m",
        "mlsubmit",
        "training",
        "bench_job",
        "--config",
        str(CONFIG),
        "--packages",
        "gs://bench-bucket/trainer-0.0.0.tar.gz",
        "--dry-run",
        "--format",
        "json",
    ],
    "dry run (--package-path)": [
        sys.executable,
        "-m",
        "mlsubmit",
        "training",
        "bench_job",
        "--region",
        "us-central1",
        "--package-path",
        str(TRAINER),
        "--module-name",
        "trainer.task",
        "--staging-bucket",
        "gs://bench-bucket",
        "--runtime-version",
        "2.11",
        "--dry-run",
        "--format",
        "json",
    ],
}


# as installed: with bytecode; ml chosen on purpose (no shut-down notice, docs/legacy-jobs.md)
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"} | {"MLSUBMIT_TARGET": "ml"}


def median_seconds(commands: dict[str, list[str]], runs: int) -> dict[str, float]:
    """Median wall time of ``runs`` fresh processes per command, taking turns (after one warm-up run each,
    which also writes bytecode)."""
    for cmd in commands.values():
        subprocess.run(cmd, check=True, capture_output=True, env=ENV)
    times: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(runs):
        for name, cmd in commands.items():
            start = time.perf_counter()
            subprocess.run(cmd, check=True, capture_output=True, env=ENV)
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(values) for name, values in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    medians = median_seconds(COMMANDS, args.runs)
    bare, floor = medians["python -c pass"], medians[FLOOR]
    print(f"{'command':24s} {'median':>10s}  {'/ python':>8s}  {'/ ' + FLOOR:>22s}")
    for name, secs in medians.items():
        print(f"{name:24s} {secs * 1000:7.1f} ms  {secs / bare:7.2f}x  {secs / floor:21.2f}x")
    ratio = medians["dry run (config file)"] / floor
    verdict = "within" if ratio <= GOAL else "OVER"
    print(f"dry run (config file) / {FLOOR}: {ratio:.2f}x, {verdict} the goal of {GOAL}x")


if __name__ == "__main__":
    main()
