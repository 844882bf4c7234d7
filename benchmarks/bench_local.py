"""Local cluster start-up: `mlsubmit local train` against `gcloud ai-platform local train`, side by side.

Measures the time from launching the command to *all replicas running* (each replica of a trivial trainer writes
a timestamp as its first statement) for a chief + 4 workers + 2 parameter servers, and prints the ratio.

Run: python benchmarks/bench_local.py [--runs 3] [--python PATH] [--no-gcloud]

Two interpreter set-ups are measured, because gcloud's cost depends on it:
* "user env": the `python` / `python3` on PATH, as both tools use by default. If TensorFlow is installed there,
  gcloud imports it in a subprocess once per replica and more to choose `chief` or `master`.
* "plain venv": a fresh virtual environment without TensorFlow (gcloud's best case, where that probe fails fast).
gcloud runs with a throwaway CLOUDSDK_CONFIG and prompts disabled; nothing leaves the machine.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORKERS, PS = 4, 2
REPLICAS = 1 + WORKERS + PS

# First statement: record "I am running". The primary then waits for everyone and exits; the others wait to be
# stopped (gcloud kills them at exit, mlsubmit stops them when the chief ends).
TRAINER = """\
import json, os, time
now = time.time()
task = json.loads(os.environ["TF_CONFIG"])["task"]
out = os.environ["BENCH_DIR"]
with open(os.path.join(out, f"{task['type']}-{task['index']}"), "w") as f:
    f.write(repr(now))
deadline = now + 300
if task["type"] in ("chief", "master"):
    while len(os.listdir(out)) < int(os.environ["BENCH_REPLICAS"]) and time.time() < deadline:
        time.sleep(0.005)
else:
    while time.time() < deadline:
        time.sleep(1)
"""


def make_trainer(root: Path) -> Path:
    trainer = root / "src" / "trainer"
    trainer.mkdir(parents=True)
    (trainer / "__init__.py").write_text("")
    (trainer / "task.py").write_text(TRAINER)
    return trainer


def one_run(
    tool: str, trainer: Path, python: str | None, scratch: Path, start_port: int
) -> tuple[float, float]:
    """(seconds to all replicas running, seconds to exit) for one run of ``tool``."""
    out = Path(tempfile.mkdtemp(dir=scratch))
    env = {**os.environ, "BENCH_DIR": str(out), "BENCH_REPLICAS": str(REPLICAS)}
    flags = [
        "--package-path", str(trainer), "--module-name", "trainer.task", "--distributed",
        "--worker-count", str(WORKERS), "--parameter-server-count", str(PS),
    ]  # fmt: skip
    if tool == "gcloud":
        env["CLOUDSDK_CONFIG"] = tempfile.mkdtemp(dir=scratch)
        env["CLOUDSDK_CORE_DISABLE_PROMPTS"] = "1"
        if python:
            env["CLOUDSDK_ML_ENGINE_LOCAL_PYTHON"] = python
        cmd = ["gcloud", "ai-platform", "local", "train", *flags, "--start-port", str(start_port)]
    else:
        env["PYTHONPATH"] = str(ROOT)
        if python:
            env["MLSUBMIT_LOCAL_PYTHON"] = python
        cmd = [sys.executable, "-m", "mlsubmit", "local", "train", *flags]
    started = time.time()
    proc = subprocess.run(
        cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=600
    )
    ended = time.time()
    stamps = [float(p.read_text()) for p in out.iterdir()]
    if proc.returncode != 0 or len(stamps) != REPLICAS:
        raise SystemExit(
            f"{tool} failed (exit {proc.returncode}, {len(stamps)} replicas ran):\n{proc.stderr}"
        )
    return max(stamps) - started, ended - started


def measure(tool: str, trainer: Path, python: str | None, scratch: Path, runs: int) -> tuple[float, float]:
    """Medians over ``runs`` runs, after one warm-up run."""
    results = [one_run(tool, trainer, python, scratch, 27182) for _ in range(runs + 1)][1:]
    return statistics.median(r[0] for r in results), statistics.median(r[1] for r in results)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument(
        "--python", default=None, help="Interpreter of the 'user env' set-up (default: PATH's)."
    )
    parser.add_argument("--no-gcloud", action="store_true")
    args = parser.parse_args()
    use_gcloud = not args.no_gcloud and shutil.which("gcloud") is not None

    with tempfile.TemporaryDirectory(prefix="bench-local-") as tmp:
        scratch = Path(tmp)
        trainer = make_trainer(scratch)
        plain = scratch / "plain"
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(plain)], check=True)
        setups = {"user env": args.python, "plain venv": str(plain / "bin" / "python")}

        print(
            f"chief + {WORKERS} workers + {PS} ps, trivial trainer; median of {args.runs} runs (after a warm-up)"
        )
        print(f"{'set-up':<12} {'tool':<9} {'all running':>12} {'exit':>9}")
        for setup, python in setups.items():
            ours = measure("mlsubmit", trainer, python, scratch, args.runs)
            print(f"{setup:<12} {'mlsubmit':<9} {ours[0]:>11.2f}s {ours[1]:>8.2f}s")
            if not use_gcloud:
                continue
            theirs = measure("gcloud", trainer, python, scratch, args.runs)
            print(f"{setup:<12} {'gcloud':<9} {theirs[0]:>11.2f}s {theirs[1]:>8.2f}s")
            print(
                f"{setup:<12} {'ratio':<9} {theirs[0] / ours[0]:>11.1f}x {theirs[1] / ours[1]:>8.1f}x  (gcloud / mlsubmit)"
            )


if __name__ == "__main__":
    main()
