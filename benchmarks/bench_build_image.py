"""What `--build-image` costs a re-submit of unchanged code, side by side with the same submit without it.

    python3 benchmarks/bench_build_image.py [--runs 7]

Both variants run `mlsubmit training --target vertex` as a fresh process per submit against ONE loopback
FakeCloudBuild in this process (Vertex AI, Cloud Storage, Cloud Build and a Docker Registry v2 on one server),
with the same trainer, staging bucket and framework:
  plain   --framework pytorch --framework-version 2.4 (a prebuilt executor image; the package staged);
  image   the same plus --build-image --builder cloud-build --output-image-uri 127.0.0.1:PORT/...: the image was
          built once before timing, so every timed run plans the image (sdist, Dockerfile, context tar and its
          digest), asks the registry (HEAD /v2/NAME/manifests/TAG answers the digest), builds nothing and
          uploads nothing.
Reported: median / min / max wall time of each, the builds and upload bytes per run, and the difference of the
medians against the goal (at most 0.5 s). Runs are interleaved so drift in the machine's load hits both alike.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.bench_submit import make_trainer  # noqa: E402
from tests.fakes.cloudbuild_api import FakeCloudBuild, build_env  # noqa: E402

PROJECT = "benchproj"
GOAL_S = 0.5
COMMON = ["--target", "vertex", "--region", "us-central1", "--package-path", "trainer", "--module-name",
          "trainer.task", "--framework", "pytorch", "--framework-version", "2.4", "--staging-bucket",
          "gs://bench-bucket"]  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=7, help="measured runs per variant")
    args = parser.parse_args()
    times: dict[str, list[float]] = {"plain": [], "image": []}
    sent: dict[str, set[int]] = {"plain": set(), "image": set()}
    builds: dict[str, set[int]] = {"plain": set(), "image": set()}
    with tempfile.TemporaryDirectory(prefix="bench-image-") as tmp, FakeCloudBuild(project=PROJECT) as server:
        work = Path(tmp)
        make_trainer(work, 0)
        env = {
            **{k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")},
            "PYTHONPATH": str(REPO),
            # the fake answers the build, the job and the preflight of a Vertex AI submit (on by default)
            **build_env(server),
        }
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        image = ["--build-image", "--builder", "cloud-build", "--output-image-uri",
                 f"127.0.0.1:{server.port}/{PROJECT}/mlsubmit/trainer"]  # fmt: skip
        counter = iter(range(1_000_000))

        def submit(variant: str) -> float:
            job = f"{variant}_{next(counter)}"
            cmd = [
                sys.executable,
                "-m",
                "mlsubmit",
                "training",
                job,
                *COMMON,
                *(image if variant == "image" else []),
            ]
            uploaded, built = server.uploaded_bytes, len(server.build_bodies)
            started = time.perf_counter()
            done = subprocess.run(
                cmd, cwd=work, env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL, check=False
            )
            seconds = time.perf_counter() - started
            if done.returncode != 0:
                raise SystemExit(f"{job}: exit {done.returncode}\n{done.stderr}")
            sent[variant].add(server.uploaded_bytes - uploaded)
            builds[variant].add(len(server.build_bodies) - built)
            return seconds

        for variant in ("plain", "image"):  # warm-up, not counted: the package staged, the image built once
            submit(variant)
        for variant in sent:
            sent[variant].clear()
            builds[variant].clear()
        for _ in range(args.runs):
            for variant in ("plain", "image"):
                times[variant].append(submit(variant))

    print(f"re-submit of unchanged code, {args.runs} runs each, against one loopback FakeCloudBuild")
    for variant, samples in times.items():
        print(
            f"{variant:<6} median {statistics.median(samples):6.3f}s  min {min(samples):6.3f}s  "
            f"max {max(samples):6.3f}s  builds/run {sorted(builds[variant])}  uploaded bytes/run {sorted(sent[variant])}"
        )
    extra = statistics.median(times["image"]) - statistics.median(times["plain"])
    verdict = "goal met" if extra <= GOAL_S else "over the goal"
    print(f"--build-image costs {extra:+.3f}s (median; goal at most +{GOAL_S}s: {verdict})")


if __name__ == "__main__":
    main()
