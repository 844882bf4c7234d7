"""Side-by-side benchmarks of mlsubmit and gcloud on loopback, with one summary table.

    python benchmarks/bench_all.py [--runs 7] [--only SCENARIO,...] [--large-mb 500] [--tree DIR]

Every measurement runs each tool as a user runs it (a fresh process per command) against ONE loopback
FakeGoogleApis in this process; runs are interleaved (mlsubmit, gcloud, mlsubmit, ...) so drift in the
machine's load hits both alike; one warm-up run of each is not counted. Reported: the median of ``--runs``
wall times per tool and the gcloud / mlsubmit ratio of medians; for ``list`` also each tool's peak memory
(the high-water mark of resident memory, VmHWM, of the command's processes).

Scenarios (``--only``):
  startup         ``mlsubmit --version`` vs ``gcloud version`` (and ``python -c pass`` of the same interpreter);
  dry-run         ``training --dry-run`` with flags only and with a config file, beside ``python -c pass`` and
                  ``python -c "import click, yaml"`` (the floor; goal: the config-file dry run at most 1.5x it);
  submit-small    a small trainer built, uploaded and created (a new job dir per run, as bench_submit.py fresh);
  submit-latency  the same with ``--latency-ms`` (default 50) added to every request the fake answers;
  submit-large    with ``--large-mb N`` (0: skipped) a prebuilt package of N MB as well, with the added latency,
                  then its unchanged re-submit (mlsubmit: one skip check, no hashing of the cached file);
  describe        ``jobs describe`` of one job;
  list            ``jobs list`` of 100, 1,000 and 10,000 jobs (text table), time and peak memory;
  logs            ``jobs stream-logs`` of a job that ended an hour ago, with 1,000, 10,000 and 100,000 entries
                  (gcloud only with ``--gcloud-logs``: it polls about two minutes per run).

``--tree DIR`` measures the mlsubmit source in DIR (PYTHONPATH=DIR) instead of this checkout: run it once on
a checkout of the previous version to get a before/after comparison.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.bench_submit import COMMON, GCLOUD_SUBMIT, make_trainer  # noqa: E402
from tests.fakes.api_server import FakeGoogleApis  # noqa: E402
from tests.fakes.gcloud_oracle import gcloud_executable, oracle_env  # noqa: E402

PROJECT = "benchproj"
LIST_SIZES = (100, 1_000, 10_000)
LOG_SIZES = (1_000, 10_000, 100_000)
SCENARIOS = (
    "startup",
    "dry-run",
    "submit-small",
    "submit-latency",
    "submit-large",
    "describe",
    "list",
    "logs",
)
CONFIG = REPO / "examples" / "configs" / "custom_tier.yaml"


class SlowApis(FakeGoogleApis):
    """The fake with a fixed delay before every answer (a stand-in for a real network's round trip)."""

    latency = 0.0

    def _dispatch(
        self, handler: Any, body: bytes | bytearray
    ) -> None:  # the fake's one entry point per request
        if self.latency:
            time.sleep(self.latency)
        super()._dispatch(handler, body)
        # The benchmark reads no request or object back; 500 MB uploads must not pile up in the fake's memory
        # (a fake holding gigabytes answers slower with every run).
        self.clear_requests()
        with self._lock:
            self.storage.forget_contents()


@dataclass
class Row:
    scenario: str
    seconds: dict[str, list[float]] = field(default_factory=dict)
    peak_kb: dict[str, list[int]] = field(default_factory=dict)

    def median(self, tool: str) -> float:
        return statistics.median(self.seconds[tool])

    def line(self) -> str:
        ml = self.median("mlsubmit")
        text = f"{self.scenario:<22} mlsubmit {ml:7.3f}s"
        if "gcloud" in self.seconds:
            gc = self.median("gcloud")
            text += f"   gcloud {gc:7.3f}s   ratio {gc / ml:5.1f}x"
        if "python" in self.seconds:
            text += f"   python -c pass {self.median('python'):6.3f}s"
        if "floor" in self.seconds:
            floor = self.median("floor")
            text += f"   import click, yaml {floor:6.3f}s   dry run / floor {ml / floor:4.2f}x"
        for tool, peaks in self.peak_kb.items():
            text += f"   peak RSS {tool} {max(peaks) / 1024:6.1f} MB"
        return text


def run(cmd: Sequence[str], env: dict[str, str], cwd: Path) -> float:
    """Wall seconds of one child process (which must succeed)."""
    started = time.perf_counter()
    done = subprocess.run(
        list(cmd), cwd=cwd, env=env, stdin=subprocess.DEVNULL, capture_output=True, check=False
    )
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(
            f"{' '.join(cmd)}: exit {done.returncode}\n{done.stderr.decode(errors='replace')[-2000:]}"
        )
    return seconds


def _tree(pid: int) -> list[int]:
    """``pid`` and its descendants (Linux /proc)."""
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        try:
            text = Path(f"/proc/{current}/task/{current}/children").read_text()
        except OSError:
            continue
        todo += [int(child) for child in text.split()]
    return found


def _hwm_kb(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


def peak_rss(cmd: Sequence[str], env: dict[str, str], cwd: Path) -> int:
    """Peak resident set size in KB of one run of ``cmd``: the largest VmHWM of the process or any of its
    descendants, polled every 2 ms. (Not ``ru_maxrss``: Linux keeps a forked child's pre-exec peak in it, i.e.
    this benchmark's own memory, which grows with the fake service's records.)"""
    proc = subprocess.Popen(
        list(cmd),
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    peak = 0
    while proc.poll() is None:
        peak = max([peak, *(_hwm_kb(pid) for pid in _tree(proc.pid))])
        time.sleep(0.002)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)}: exit {proc.returncode}")
    return peak


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=7, help="measured runs per tool and scenario")
    parser.add_argument("--only", default=",".join(SCENARIOS), help="comma-separated scenarios")
    parser.add_argument("--tree", type=Path, default=REPO, help="mlsubmit source tree to measure")
    parser.add_argument("--no-gcloud", action="store_true", help="time mlsubmit only")
    parser.add_argument("--large-mb", type=int, default=0, help="size of submit-large's package (0: skip it)")
    parser.add_argument(
        "--latency-ms", type=float, default=50.0, help="added per request in submit-latency/large"
    )
    parser.add_argument("--gcloud-logs", action="store_true", help="also time gcloud's stream-logs (slow)")
    args = parser.parse_args()
    only = [s.strip() for s in args.only.split(",") if s.strip()]
    unknown = set(only) - set(SCENARIOS)
    if unknown:
        parser.error(f"--only: unknown scenarios {sorted(unknown)}; expected some of {', '.join(SCENARIOS)}")
    gcloud = None if args.no_gcloud else gcloud_executable()
    tree = args.tree.resolve()
    mlsubmit_cmd = [sys.executable, "-m", "mlsubmit"]

    envs_for_logs: dict[int, tuple[dict[str, str], dict[str, str]]] = {}
    with (
        contextlib.ExitStack() as stack,
        tempfile.TemporaryDirectory(prefix="bench-all-") as tmp,
        SlowApis(project=PROJECT) as server,
    ):
        work = Path(tmp) / "project"
        work.mkdir()
        large = make_trainer(work, args.large_mb if "submit-large" in only else 0)
        config_dir = Path(tmp) / "gcloud-config"
        config_dir.mkdir()
        base_env = {
            k: v
            for k, v in os.environ.items()
            if not k.lower().endswith("_proxy") and k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPATH")
        }
        gcloud_env = {**base_env, **oracle_env(server, config_dir, tag="bench-all", project=PROJECT)}
        ml_env = {
            **base_env,
            "PYTHONPATH": str(tree),
            "CLOUDSDK_AUTH_ACCESS_TOKEN": "fake-bench-token",
            "CLOUDSDK_CORE_PROJECT": PROJECT,
            "CLOUDSDK_API_ENDPOINT_OVERRIDES_ML": server.url,
            "CLOUDSDK_API_ENDPOINT_OVERRIDES_LOGGING": server.url,
            "STORAGE_EMULATOR_HOST": server.url.rstrip("/"),
        }
        python_env = {**base_env, "PYTHONPATH": str(tree)}
        # Each log size on a fake of its own: the fake scans all its entries per page, so one fake holding all
        # sizes would time the fake, not the client.
        ended = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 3600))
        for size in LOG_SIZES if "logs" in only else ():
            logs_server = stack.enter_context(FakeGoogleApis(project=PROJECT))
            logs_server.add_job(
                {"jobId": "logs", "state": "SUCCEEDED", "endTime": ended, "createTime": ended}
            )
            logs_server.add_log_lines("logs", [f"step {i} loss {1.0 / (i + 1):.6f}" for i in range(size)])
            urls = {
                "CLOUDSDK_API_ENDPOINT_OVERRIDES_ML": logs_server.url,
                "CLOUDSDK_API_ENDPOINT_OVERRIDES_LOGGING": logs_server.url,
            }
            gcloud_logs_env = {
                **gcloud_env,
                **oracle_env(logs_server, config_dir, tag="bench-logs", project=PROJECT),
            }
            envs_for_logs[size] = ({**ml_env, **urls}, gcloud_logs_env)
        server.add_job({"jobId": "described", "state": "RUNNING", "trainingInput": {"region": "us-central1"}})
        for size in LIST_SIZES if "list" in only else ():
            for i in range(size):
                server.add_job(
                    {
                        "jobId": f"job_{i:06d}",
                        "state": "SUCCEEDED",
                        "trainingInput": {"region": "us-central1"},
                    },
                    project=f"list{size}",
                )
        counter = iter(range(1_000_000))

        def submit(tool: str, extra: Sequence[str] = (), job_dir: str | None = None) -> list[str]:
            n = next(counter)
            job_dir = job_dir or f"gs://bench-bucket/all/{tool}/{n}"
            if tool == "gcloud":
                return [str(gcloud), *GCLOUD_SUBMIT, f"gc_{n}", *COMMON, *extra, "--job-dir", job_dir]
            return [*mlsubmit_cmd, "training", f"ml_{n}", *COMMON, *extra, "--job-dir", job_dir]

        dry = ["training", "bench_job", "--region", "us-central1", "--module-name", "trainer.task",
               "--runtime-version", "2.11", "--packages", "gs://bench-bucket/t-0.0.0.tar.gz", "--dry-run"]  # fmt: skip
        with_config = ["training", "bench_job", "--config", str(CONFIG), "--packages", "gs://bench-bucket/t.tar.gz",
                       "--dry-run"]  # fmt: skip

        def fresh_large(tool: str) -> list[str]:
            """The large submit after a change: the package's first bytes rewritten with a new counter value."""
            with (work / large[1]).open("r+b") as handle:
                handle.write(f"{next(counter):016d}".encode())
            return submit(tool, large)

        latency = {"submit-latency": args.latency_ms / 1000, "submit-large": args.latency_ms / 1000}

        commands: dict[str, dict[str, Callable[[], list[str]]]] = {
            "startup": {
                "mlsubmit": lambda: [*mlsubmit_cmd, "--version"],
                "gcloud": lambda: [str(gcloud), "version"],
                "python": lambda: [sys.executable, "-c", "pass"],
            },
            "dry-run flags": {
                "mlsubmit": lambda: [*mlsubmit_cmd, *dry],
                "python": lambda: [sys.executable, "-c", "pass"],
                "floor": lambda: [sys.executable, "-c", "import click, yaml"],
            },
            "dry-run config": {
                "mlsubmit": lambda: [*mlsubmit_cmd, *with_config],
                "python": lambda: [sys.executable, "-c", "pass"],
                "floor": lambda: [sys.executable, "-c", "import click, yaml"],
            },
            "submit-small": {"mlsubmit": lambda: submit("mlsubmit"), "gcloud": lambda: submit("gcloud")},
            "submit-latency": {"mlsubmit": lambda: submit("mlsubmit"), "gcloud": lambda: submit("gcloud")},
            "describe": {
                "mlsubmit": lambda: [*mlsubmit_cmd, "jobs", "describe", "described"],
                "gcloud": lambda: [str(gcloud), "ai-platform", "jobs", "describe", "described"],
            },
        }
        if large:
            commands["submit-large"] = {
                # New content for every run (its first bytes rewritten), as after a change to the package: both
                # tools hash and upload all of it; "submit-large unchanged" is the re-submit of the same bytes.
                "mlsubmit": lambda: fresh_large("mlsubmit"),
                "gcloud": lambda: fresh_large("gcloud"),
            }
            commands["submit-large unchanged"] = {
                "mlsubmit": lambda: submit("mlsubmit", large, "gs://bench-bucket/same/mlsubmit"),
                "gcloud": lambda: submit("gcloud", large, "gs://bench-bucket/same/gcloud"),
            }
        for size in LOG_SIZES:
            commands[f"logs {size}"] = {"mlsubmit": lambda: [*mlsubmit_cmd, "jobs", "stream-logs", "logs"]}
            if args.gcloud_logs:
                commands[f"logs {size}"]["gcloud"] = lambda: [
                    str(gcloud),
                    "ai-platform",
                    "jobs",
                    "stream-logs",
                    "logs",
                ]
        for size in LIST_SIZES:
            commands[f"list {size}"] = {
                "mlsubmit": lambda s=size: [*mlsubmit_cmd, "jobs", "list", "--project", f"list{s}"],  # type: ignore[misc]
                "gcloud": lambda s=size: [
                    str(gcloud),
                    "ai-platform",
                    "jobs",
                    "list",
                    "--project",
                    f"list{s}",
                ],  # type: ignore[misc]
            }
        envs = {"gcloud": gcloud_env, "mlsubmit": ml_env, "python": python_env, "floor": python_env}
        rows: list[Row] = []
        for name, tools in commands.items():
            if name.split(" ")[0] not in only:
                continue
            row = Row(name)
            server.latency = latency.get(name.split(" ")[0], 0.0)
            env_of = dict(envs)  # each scenario's own: the logs scenarios talk to their own fakes
            if name.startswith("logs"):
                env_of["mlsubmit"], env_of["gcloud"] = envs_for_logs[int(name.split(" ")[1])]
            chosen = {t: c for t, c in tools.items() if t != "gcloud" or gcloud}
            for tool, make in chosen.items():  # warm-up, not counted
                run(make(), env_of[tool], work)
            for _ in range(args.runs):
                for tool, make in chosen.items():
                    seconds = run(make(), env_of[tool], work)
                    row.seconds.setdefault(tool, []).append(seconds)
            if name.startswith("list"):
                for tool, make in chosen.items():
                    row.peak_kb[tool] = [peak_rss(make(), env_of[tool], work) for _ in range(3)]
            server.latency = 0.0
            rows.append(row)
            print(row.line(), flush=True)

    print()
    print(f"summary: medians of {args.runs} paired runs, loopback FakeGoogleApis; mlsubmit from {tree}")
    print(f"mlsubmit: {' '.join(mlsubmit_cmd)}; gcloud: {gcloud or '-'}")
    for row in rows:
        print(row.line())


if __name__ == "__main__":
    main()
