"""Full-submit benchmark: build, stage and create the same job with mlsubmit and with gcloud, side by side.

    python3 benchmarks/bench_submit.py [--runs 7] [--prebuilt-mb 0] [--no-gcloud]

Both tools run as the user runs them (a fresh process per submit: `mlsubmit training ...` and
`gcloud ai-platform jobs submit training ...`) against ONE loopback FakeGoogleApis in this process: its ml v1
API creates the jobs and its Cloud Storage JSON API takes the uploads (gcloud through
CLOUDSDK_API_ENDPOINT_OVERRIDES_STORAGE, mlsubmit's storage client through STORAGE_EMULATOR_HOST). One
warm-up run of each is not counted; gcloud keeps one config directory, as on a developer's machine.

Scenarios:
  fresh      a new job dir per run, so the package is built and uploaded every time;
  unchanged  the same job dir and unchanged code: mlsubmit finds its package already staged and uploads
             nothing; gcloud's sdist embeds timestamps, so it builds and uploads again every time.
Reported: median / min / max wall time per tool, the gcloud / mlsubmit ratio of medians (goal >= 3), and the
upload bytes the server received per run. Loopback numbers measure client-side cost; on a real network
the upload of the package adds the same transfer time to both tools, except for mlsubmit's skipped uploads.

`--prebuilt-mb N` adds a local N MB prebuilt package (`--packages deps/blob-1.0.tar.gz`, random bytes) to
both command lines, so both upload the same large file. (Data files inside the trainer would not compare
like with like: gcloud's generated setup.py leaves everything but the top package's modules out.)
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.fakes.api_server import FakeGoogleApis  # noqa: E402
from tests.fakes.gcloud_oracle import gcloud_executable, oracle_env  # noqa: E402

PROJECT = "benchproj"
GCLOUD_SUBMIT = ["ai-platform", "jobs", "submit", "training"]
BUCKET = "bench-bucket"
COMMON = ["--region", "us-central1", "--package-path", "trainer", "--module-name", "trainer.task",
          "--runtime-version", "2.11", "--python-version", "3.7"]  # fmt: skip


@dataclass
class Sample:
    seconds: float
    upload_bytes: int


@dataclass
class Series:
    tool: str
    scenario: str
    samples: list[Sample] = field(default_factory=list)

    @property
    def median(self) -> float:
        return statistics.median(s.seconds for s in self.samples)

    def line(self) -> str:
        times = [s.seconds for s in self.samples]
        sent = sorted({s.upload_bytes for s in self.samples})
        return (
            f"{self.tool:<9} {self.scenario:<10} median {self.median:6.3f}s  min {min(times):6.3f}s  "
            f"max {max(times):6.3f}s  uploaded bytes/run {', '.join(str(b) for b in sent)}"
        )


def make_trainer(root: Path, prebuilt_mb: int) -> list[str]:
    """A small trainer (a few modules, a subpackage); returns the extra flags for a prebuilt package."""
    package = root / "trainer"
    (package / "models").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "task.py").write_text(
        "import argparse\n\nfrom trainer.models import net\n\nprint(net.LAYERS)\n"
    )
    (package / "models" / "__init__.py").write_text("")
    for i in range(20):
        (package / "models" / f"layer_{i}.py").write_text(f"WIDTH = {i}\n" * 200)
    (package / "models" / "net.py").write_text("LAYERS = 3\n")
    if not prebuilt_mb:
        return []
    (root / "deps").mkdir()
    (root / "deps" / "blob-1.0.tar.gz").write_bytes(os.urandom(prebuilt_mb * 1024 * 1024))
    return ["--packages", "deps/blob-1.0.tar.gz"]


def timed(server: FakeGoogleApis, job: str, run: Callable[[], subprocess.CompletedProcess[str]]) -> Sample:
    before = server.uploaded_bytes
    started = time.perf_counter()
    done = run()
    seconds = time.perf_counter() - started
    if done.returncode != 0 or job not in server.jobs:
        raise SystemExit(f"{job}: exit {done.returncode}, job created: {job in server.jobs}\n{done.stderr}")
    return Sample(seconds, server.uploaded_bytes - before)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=7, help="measured runs per tool and scenario")
    parser.add_argument("--prebuilt-mb", type=int, default=0, help="also upload a local package this big")
    parser.add_argument("--no-gcloud", action="store_true", help="time mlsubmit only")
    args = parser.parse_args()

    gcloud = None if args.no_gcloud else gcloud_executable()
    if gcloud is None and not args.no_gcloud:
        print("gcloud not found: timing mlsubmit only", file=sys.stderr)
    # The console script next to this interpreter, not a version-manager shim on PATH (pyenv's bash shim
    # alone adds ~0.1 s per run, which is the machine's cost, not mlsubmit's).
    script = Path(sys.executable).parent / "mlsubmit"
    mlsubmit_cmd = [str(script)] if script.is_file() else [sys.executable, "-m", "mlsubmit"]

    with (
        tempfile.TemporaryDirectory(prefix="bench-submit-") as tmp,
        FakeGoogleApis(project=PROJECT) as server,
    ):
        work = Path(tmp) / "project"
        work.mkdir()
        extra = make_trainer(work, args.prebuilt_mb)
        config_dir = Path(tmp) / "gcloud-config"
        config_dir.mkdir()
        # PYTHONDONTWRITEBYTECODE would make every mlsubmit run recompile its modules, while gcloud's SDK ships
        # compiled bytecode; a pip-installed mlsubmit has it too, so the comparison runs both with bytecode.
        base_env = {
            k: v
            for k, v in os.environ.items()
            if not k.lower().endswith("_proxy") and k != "PYTHONDONTWRITEBYTECODE"
        }
        gcloud_env = {**base_env, **oracle_env(server, config_dir, tag="bench-submit", project=PROJECT)}
        ml_env = {
            **base_env,
            "CLOUDSDK_AUTH_ACCESS_TOKEN": "fake-bench-token",
            "CLOUDSDK_CORE_PROJECT": PROJECT,
            "CLOUDSDK_API_ENDPOINT_OVERRIDES_ML": server.url,
            "STORAGE_EMULATOR_HOST": server.url.rstrip("/"),
        }
        counter = iter(range(1_000_000))

        def submit(tool: str, job_dir: str) -> Sample:
            job = f"{tool}_{next(counter)}"
            if tool == "gcloud":
                assert gcloud is not None
                cmd = [gcloud, *GCLOUD_SUBMIT, job, *COMMON, *extra, "--job-dir", job_dir]
                env = gcloud_env
            else:
                cmd = [*mlsubmit_cmd, "training", job, *COMMON, *extra, "--job-dir", job_dir]
                env = ml_env
            return timed(
                server,
                job,
                lambda: subprocess.run(
                    cmd,
                    cwd=work,
                    env=env,
                    capture_output=True,
                    text=True,
                    stdin=subprocess.DEVNULL,
                    check=False,
                ),
            )

        tools = ["mlsubmit", *(["gcloud"] if gcloud else [])]
        results = {(t, sc): Series(t, sc) for sc in ("fresh", "unchanged") for t in tools}
        for tool in tools:
            submit(tool, f"gs://{BUCKET}/warmup/{tool}")  # not counted: caches, .pyc, gcloud's config
            submit(tool, f"gs://{BUCKET}/same/{tool}")  # stage once; "unchanged" re-submits this code
        # Interleaved, so that drift in the machine's load hits both tools alike.
        for i in range(args.runs):
            for tool in tools:
                results[(tool, "fresh")].samples.append(submit(tool, f"gs://{BUCKET}/fresh/{tool}/{i}"))
                results[(tool, "unchanged")].samples.append(submit(tool, f"gs://{BUCKET}/same/{tool}"))

    print(
        f"full submit (build, stage, create), {args.runs} runs each, trainer + {args.prebuilt_mb} MB prebuilt package;"
    )
    print("both tools against one loopback FakeGoogleApis (ml v1 + Cloud Storage JSON API)")
    print(f"mlsubmit: {' '.join(mlsubmit_cmd)}; gcloud: {gcloud or '-'}")
    for series in results.values():
        print(series.line())
    if gcloud:
        for scenario in ("fresh", "unchanged"):
            ratio = results[("gcloud", scenario)].median / results[("mlsubmit", scenario)].median
            verdict = "goal met" if ratio >= 3 else "below the 3x goal"
            print(f"ratio gcloud/mlsubmit, {scenario}: {ratio:.1f}x ({verdict})")


if __name__ == "__main__":
    main()
