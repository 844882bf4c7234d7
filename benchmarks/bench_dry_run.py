"""Dry-run latency: `mlsubmit training ... --dry-run` beside bare `python -c pass` and beside
`python -c "import click, yaml"` (the floor: a CLI that reads YAML cannot start faster; goal for a dry run with
a config file: at most 1.5x that floor).

The estimate (docs/cost.md) a dry run adds is timed inside real dry runs, each in a fresh process: the time spent
in ``targets.budget.plan_estimate`` (its imports, loading the price table, pricing the body); goal at most 5 ms.

The `--package-path` case also builds the small example trainer's sdist, hashes it and runs the trainer checkup
(issue 25: goal at most 1.6x the floor; tests/acceptance/test_training_dry_run_package_path.py holds what it
may not import).

Run: python benchmarks/bench_dry_run.py [--runs 20]
Each command runs as a fresh process, as CI would run it, the commands taking turns so a busy machine slows
them alike; the median wall time is reported with both ratios side by side, and the median CPU time (user +
system) beside it, which a busy machine disturbs far less.
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
PACKAGE_PATH_GOAL = 1.6  # a dry run that builds, hashes and checks up a small trainer (issue 25)

# every dry run below: a fresh process running this job
TRAINING = [sys.executable, "-m", "mlsubmit", "training", "bench_job"]

COMMANDS = {
    "python -c pass": [sys.executable, "-c", "pass"],
    FLOOR: [sys.executable, "-c", "import click, yaml"],
    "dry run (flags only)": [
        *TRAINING,
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
        *TRAINING,
        "--config",
        str(CONFIG),
        "--packages",
        "gs://bench-bucket/trainer-0.0.0.tar.gz",
        "--dry-run",
        "--format",
        "json",
    ],
    "dry run (--package-path)": [
        *TRAINING,
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


def timed_run(cmd: list[str]) -> tuple[float, float]:
    """Run ``cmd`` to its end: (wall seconds, CPU seconds it used, user + system). The CPU time moves far less
    than the wall time when other work shares the machine."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert proc.stderr is not None
    err = proc.stderr.read()  # read before the wait: a full pipe would stall the child
    proc.stderr.close()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here: Popen must not wait for it again
    if proc.returncode:
        raise SystemExit(f"{' '.join(cmd)}: exit {proc.returncode}\n{err.decode(errors='replace')[-2000:]}")
    return time.perf_counter() - start, usage.ru_utime + usage.ru_stime


def median_seconds(commands: dict[str, list[str]], runs: int) -> dict[str, tuple[float, float]]:
    """Median (wall, CPU) seconds of ``runs`` fresh processes per command, taking turns (after one warm-up run
    each, which also writes bytecode)."""
    for cmd in commands.values():
        timed_run(cmd)
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
    for _ in range(runs):
        for name, cmd in commands.items():
            times[name].append(timed_run(cmd))
    return {
        name: (statistics.median(w for w, _ in values), statistics.median(c for _, c in values))
        for name, values in times.items()
    }


ESTIMATE_GOAL_MS = 5.0


def plan_ms(stub_estimate: bool) -> float:
    """Milliseconds `submit.plan` takes inside one dry run (config file) in a fresh process; with
    ``stub_estimate`` the estimate is replaced by a stub returning None (a dry run without it)."""
    probe = (
        "import runpy, sys, time, types\n"
        f"if {stub_estimate!r}:\n"
        "    stub = types.ModuleType('mlsubmit.targets.budget')\n"
        "    stub.plan_estimate = lambda *a, **k: None\n"
        "    stub.priced_candidates = lambda job, candidates, **k: (candidates, [], [])\n"
        "    sys.modules['mlsubmit.targets.budget'] = stub\n"
        "import mlsubmit.submit.plan as submit\n"
        "spent = []\n"
        "real = submit.plan\n"
        "def timed(*args, **kwargs):\n"
        "    start = time.perf_counter()\n"
        "    try:\n"
        "        return real(*args, **kwargs)\n"
        "    finally:\n"
        "        spent.append(time.perf_counter() - start)\n"
        "submit.plan = timed\n"
        f"sys.argv = ['mlsubmit', *{COMMANDS['dry run (config file)'][3:]!r}]\n"
        "try:\n    runpy.run_module('mlsubmit', run_name='__main__')\n"
        "except SystemExit:\n    pass\n"
        "print(sum(spent) * 1000, file=sys.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=ENV, check=True)
    return float(done.stderr.strip().splitlines()[-1])


def estimate_ms(runs: int) -> tuple[float, float]:
    """Median milliseconds of `submit.plan` in a dry run with the estimate and without it, taking turns."""
    with_it: list[float] = []
    without: list[float] = []
    for _ in range(runs):
        with_it.append(plan_ms(False))
        without.append(plan_ms(True))
    return statistics.median(with_it), statistics.median(without)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    medians = median_seconds(COMMANDS, args.runs)
    (bare, _), (floor, floor_cpu) = medians["python -c pass"], medians[FLOOR]
    print(
        f"{'command':24s} {'median':>10s}  {'/ python':>8s}  {'/ ' + FLOOR:>22s}  {'CPU':>8s}  {'/ floor':>7s}"
    )
    for name, (secs, cpu) in medians.items():
        print(
            f"{name:24s} {secs * 1000:7.1f} ms  {secs / bare:7.2f}x  {secs / floor:21.2f}x  "
            f"{cpu * 1000:5.1f} ms  {cpu / floor_cpu:6.2f}x"
        )
    for name, goal in (("dry run (config file)", GOAL), ("dry run (--package-path)", PACKAGE_PATH_GOAL)):
        ratio, cpu_ratio = medians[name][0] / floor, medians[name][1] / floor_cpu
        verdict = "within" if ratio <= goal else "OVER"
        print(f"{name} / {FLOOR}: {ratio:.2f}x (CPU {cpu_ratio:.2f}x), {verdict} the goal of {goal}x")
    with_it, without = estimate_ms(args.runs)
    spent = with_it - without
    verdict = "within" if spent <= ESTIMATE_GOAL_MS else "OVER"
    print(
        f"submit.plan in that dry run: {with_it:.2f} ms with the estimate, {without:.2f} ms without: "
        f"+{spent:.2f} ms, {verdict} the goal of {ESTIMATE_GOAL_MS} ms"
    )


if __name__ == "__main__":
    main()
