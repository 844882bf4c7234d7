"""What the preflight adds to a Vertex AI submit: its wall time with a fixed latency on every request.

    python benchmarks/bench_preflight.py [--runs 9] [--latency-ms 50]

Against one loopback FakeGoogleApis that sleeps ``--latency-ms`` before answering each request (bench_all.py's
``SlowApis``, a stand-in for a real network's round trip), in this process:

* ``preflight``: the whole preflight of a job that needs every check (API, staging and job dir buckets,
  service account, CMEK key, a custom image, quota and running custom and tuning jobs: 13 reads), through
  the production transport, as ``mlsubmit preflight`` runs it (the reads sent at once,
  docs/getting-jobs-to-start.md);
* ``one at a time``: the same reads with a pool of one thread, i.e. what a preflight that sent its reads in turn
  would cost;
* ``one round trip``: one ``services.get`` alone, the floor.

Reported: the median of ``--runs`` wall times of each (after one warm-up run).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.bench_all import SlowApis  # noqa: E402
from tests.fakes.lifecycle_support import cli_env  # noqa: E402

REGION = "us-central1"
KEY = f"projects/p/locations/{REGION}/keyRings/ring/cryptoKeys/key"


def body(image: str) -> dict[str, Any]:
    """A CustomJob that needs every check."""
    machine = {"machineType": "n1-standard-8", "acceleratorType": "NVIDIA_TESLA_T4", "acceleratorCount": 2}
    return {
        "displayName": "bench",
        "jobSpec": {
            "workerPoolSpecs": [
                {"machineSpec": machine, "replicaCount": "1", "containerSpec": {"imageUri": image}}
            ],
            "baseOutputDirectory": {"outputUriPrefix": "gs://out/run"},
            "serviceAccount": "trainer@p.iam.gserviceaccount.com",
        },
        "encryptionSpec": {"kmsKeyName": KEY},
    }


class CountingApis(SlowApis):
    """SlowApis that counts the requests it answered (it forgets them as it goes)."""

    answered = 0

    def _dispatch(self, handler: Any, body: bytes | bytearray) -> None:
        type(self).answered += 1
        super()._dispatch(handler, body)


def median_seconds(run: Callable[[], Any], runs: int) -> float:
    run()  # warm-up: imports, first connections
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--latency-ms", type=float, default=50.0)
    args = parser.parse_args()

    from mlsubmit.preflight import preflight
    from mlsubmit.services.preflight import reads
    from mlsubmit.services.settings import Settings

    with CountingApis() as server:
        os.environ.update(cli_env(server))
        server.preflight.add_quota("aiplatform.googleapis.com/custom_model_training_nvidia_t4_gpus", 8)
        job = body(server.preflight.image("proj/trainer", "v1"))
        uploads = ["gs://stage/mlsubmit/packages/0/trainer-0.1.tar.gz"]
        settings = Settings.from_flags(dict(os.environ), target="vertex", region=REGION)
        server.latency = args.latency_ms / 1000

        def whole() -> None:
            checks = preflight(job, settings, uploads=uploads)
            assert not [c for c in checks if c.status == "refused"], checks

        before = CountingApis.answered
        whole()
        count = CountingApis.answered - before
        concurrent = median_seconds(whole, args.runs)
        workers = reads.MAX_WORKERS
        reads.MAX_WORKERS = 1
        try:
            serial = median_seconds(whole, args.runs)
        finally:
            reads.MAX_WORKERS = workers
        reader = reads.Reader(settings)
        floor = median_seconds(lambda: reads.fetch({"api": reads.api_service}, reader), args.runs)

    print(f"preflight of a job needing every check: {count} reads, +{args.latency_ms:g} ms per request")
    print(f"  {'one round trip':<16} {floor * 1000:7.0f} ms")
    print(f"  {'preflight':<16} {concurrent * 1000:7.0f} ms  ({concurrent / floor:.1f} round trips)")
    print(f"  {'one at a time':<16} {serial * 1000:7.0f} ms  ({serial / floor:.1f} round trips)")


if __name__ == "__main__":
    main()
