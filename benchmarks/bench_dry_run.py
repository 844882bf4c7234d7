"""Dry-run latency: `mlsubmit training ... --dry-run` against bare `python -c pass` (goal: at most 8x).

Run: python benchmarks/bench_dry_run.py [--runs 20]
Each command runs as a fresh process, as CI would run it; the median wall time is reported.
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

COMMANDS = {
    "python -c pass": [sys.executable, "-c", "pass"],
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
}


ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}  # as installed: with bytecode


def median_seconds(cmd: list[str], runs: int) -> float:
    """Median wall time of ``runs`` fresh processes (after one warm-up run that also writes bytecode)."""
    subprocess.run(cmd, check=True, capture_output=True, env=ENV)
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True, env=ENV)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    base = None
    for name, cmd in COMMANDS.items():
        secs = median_seconds(cmd, args.runs)
        base = base or secs
        print(f"{name:24s} {secs * 1000:7.1f} ms  {secs / base:5.1f}x")


if __name__ == "__main__":
    main()
