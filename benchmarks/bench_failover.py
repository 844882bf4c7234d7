"""Failover's cost: the time from `training --target vertex` to a running job under scripted stockouts.

    python benchmarks/bench_failover.py [--runs 5] [--latency-ms 50]

Against one loopback FakeGoogleApis that sleeps ``--latency-ms`` before answering each request (bench_all.py's
``SlowApis``), the real CLI in this process (docs/getting-jobs-to-start.md). The waits the failover decides
(polls, the queue limit, the pause between rounds) run on a fake clock and are reported as such; everything
else (requests, the preflight, translation, the label lookups) is real wall time:

* ``direct``: the job runs in its own region at once (the floor: a failover-enabled submit with nothing to do);
* ``A-D``: region A answers the create with a quota 429, B's job FAILS with a stockout, C's stays QUEUED past
  ``--max-queue-wait 10m`` and is cancelled, D's runs;
* ``two rounds``: A quota, B stockout; capacity returns in B while the loop waits between rounds.

Reported: the median wall time of ``--runs`` runs (after one warm-up), and the fake-clock seconds waited.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import mlsubmit.follow.failover as failover_module  # noqa: E402
from benchmarks.bench_all import SlowApis  # noqa: E402
from tests.acceptance.test_training_failover import (  # noqa: E402
    JOB,
    QUOTA,
    STOCKOUT,
    TRAIN,
    A,
    B,
    C,
    D,
    FakeTime,
    HalfRandom,
)
from tests.fakes.cli import run_cli  # noqa: E402
from tests.fakes.lifecycle_support import cli_env  # noqa: E402

RUNNING = ["JOB_STATE_QUEUED", "JOB_STATE_PENDING", "JOB_STATE_RUNNING"]


def scenario(name: str, server: SlowApis, clock: FakeTime, tmp: Path, run: int) -> list[str]:
    """Script the regions for ``name`` and return the command line (a job id of its own per run)."""
    argv = ["training", f"bench_{name.replace('-', '_').replace(' ', '_')}_{run}", *TRAIN[2:], *JOB]
    if name == "direct":
        server.script_region(A, RUNNING)
        return [*argv, "--fallback-regions", B]
    server.script_region(A, create_error=(429, QUOTA))
    server.script_region(B, ["JOB_STATE_QUEUED", "JOB_STATE_FAILED"], STOCKOUT.format(region=B))
    if name == "A-D":
        server.script_region(C, ["JOB_STATE_QUEUED"])
        server.script_region(D, RUNNING)
        return [*argv, "--fallback-regions", f"{B},{C},{D}", "--max-queue-wait", "10m"]
    config = tmp / "two_rounds.yaml"
    config.write_text(f"vertex:\n  failover:\n    budget: 3600s\n    candidates:\n      - region: {B}\n")

    def capacity_returns(seconds: float) -> None:
        if seconds >= 30:
            server.script_region(B, RUNNING)

    clock.on_sleep = capacity_returns
    return [*argv, "--config", str(config)]


def measure(name: str, args: argparse.Namespace, tmp: Path) -> tuple[float, float]:
    """(median wall seconds, fake seconds waited) of ``name``."""
    walls: list[float] = []
    waited: list[float] = []
    for run in range(args.runs + 1):
        with SlowApis() as server:
            os.environ.update(cli_env(server))
            os.environ.pop("MLSUBMIT_POLL_INTERVAL", None)  # the default poll schedule, on the fake clock
            clock = FakeTime()
            failover_module.time = clock  # type: ignore[assignment]
            failover_module.random = HalfRandom  # type: ignore[assignment]
            argv = scenario(name, server, clock, tmp, run)
            server.latency = args.latency_ms / 1000
            start = time.perf_counter()
            result = run_cli(argv)
            elapsed = time.perf_counter() - start
            assert result.exit_code == 0, result.stderr
        if run:  # the first run warms up imports and connections
            walls.append(elapsed)
            waited.append(sum(clock.sleeps))
    return statistics.median(walls), statistics.median(waited)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--latency-ms", type=float, default=50.0)
    args = parser.parse_args()

    real_time, real_random = failover_module.time, failover_module.random
    try:
        with tempfile.TemporaryDirectory(prefix="bench-failover-") as tmp:
            rows = [(name, *measure(name, args, Path(tmp))) for name in ("direct", "A-D", "two rounds")]
    finally:
        failover_module.time, failover_module.random = real_time, real_random
    print(f"submit to a running job, +{args.latency_ms:g} ms per request, median of {args.runs}")
    for name, wall, waited in rows:
        print(f"  {name:<11} {wall * 1000:7.0f} ms wall   {waited:7.1f} s waited on the fake clock")


if __name__ == "__main__":
    main()
