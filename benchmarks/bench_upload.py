"""Upload benchmark: a large random package to gcp-storage-emulator on loopback, then the same again.

    python3 benchmarks/bench_upload.py [--size-mb 200] [--chunk-mb N] [--latency-ms 50] [--layout shared|gcloud]
                                       [--tracemalloc]

The emulator runs in this process; each upload runs in a fresh child process so its peak RSS (ru_maxrss)
is the uploader's alone. Reports throughput, upload requests, peak memory, the one read that computes every
digest (plan: sha256 content address, CRC32C, and the MD5 below 16 MiB), and the bytes the emulator received for a re-upload of
unchanged bytes (expected: 0, after one objects.get; its digests come from mlsubmit's digest cache,
which starts empty in a temporary XDG_CACHE_HOME). --chunk-mb sets MLSUBMIT_UPLOAD_CHUNK_MIB (default:
mlsubmit's own: one request up to 100 MiB, above that one streamed PUT). Loopback numbers measure mlsubmit's client-side cost plus the emulator's; real
Cloud Storage throughput is bounded by the network and its latency instead, where fewer chunks mean fewer
round trips.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

MB = 1024 * 1024


def child(args: argparse.Namespace) -> None:
    """Run one plan + upload and print a JSON line with timings and memory."""
    if args.tracemalloc:
        import tracemalloc

        tracemalloc.start()
    from mlsubmit.services import staging, storage
    from mlsubmit.services.settings import Settings

    chunk_size = staging.chunk_size_from(os.environ)
    service = Settings.from_flags(dict(os.environ)).storage()  # what `mlsubmit training` uploads with
    baseline_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.perf_counter()
    from mlsubmit.sdist.digest import cache_dir_for

    cache = cache_dir_for(os.environ)  # as a submit does: the bench points XDG_CACHE_HOME at a fresh folder
    plan = staging.plan_staging([Path(args.file)], args.prefix, args.layout, digest_cache=cache)
    planned = time.perf_counter()
    report = storage.upload(plan, service, chunk_size=chunk_size)
    finished = time.perf_counter()
    result: dict[str, Any] = {
        "plan_s": planned - started,
        "upload_s": finished - planned,
        "bytes_sent": report.bytes_sent,
        "skipped": len(report.skipped),
        "baseline_rss_mb": baseline_kb / 1024,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }
    if args.tracemalloc:
        import tracemalloc

        result["tracemalloc_peak_mb"] = tracemalloc.get_traced_memory()[1] / MB
    print(json.dumps(result))


def run_child(
    file: Path, prefix: str, host: str, chunk_mb: int | None, layout: str, trace: bool
) -> dict[str, Any]:
    cmd = [sys.executable, __file__, "--child", "--file", str(file), "--prefix", prefix, "--layout", layout]
    if trace:
        cmd.append("--tracemalloc")
    env = {
        **os.environ,
        "STORAGE_EMULATOR_HOST": host,
        "PYTHONPATH": str(REPO),
        "XDG_CACHE_HOME": str(file.parent / "cache"),
    }
    if chunk_mb is not None:
        env["MLSUBMIT_UPLOAD_CHUNK_MIB"] = str(chunk_mb)
    out = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True).stdout
    result: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--size-mb", type=int, default=200)
    parser.add_argument(
        "--chunk-mb", type=int, default=None, help="MLSUBMIT_UPLOAD_CHUNK_MIB (default: unset)"
    )
    parser.add_argument("--layout", choices=["shared", "gcloud"], default="shared")
    parser.add_argument(
        "--tracemalloc", action="store_true", help="also measure the Python heap peak (slower)"
    )
    parser.add_argument(
        "--latency-ms", type=float, default=0.0, help="delay the emulator adds to every request (a far link)"
    )
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--file", help=argparse.SUPPRESS)
    parser.add_argument("--prefix", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return

    from tests.fakes.gcs import BUCKET, start_emulator

    emulator = start_emulator()
    if args.latency_ms:
        handler = emulator._httpd.RequestHandlerClass.func  # type: ignore[union-attr]
        serve = handler._serve

        def slow_serve(self: Any, method: str, call: Any) -> None:
            time.sleep(args.latency_ms / 1000)
            serve(self, method, call)

        handler._serve = slow_serve
    emulator.create_bucket(BUCKET)
    try:
        with tempfile.TemporaryDirectory(prefix="mlsubmit-bench-") as tmp:
            package = Path(tmp) / "trainer-0.0.0.tar.gz"
            with open(package, "wb") as handle:
                for _ in range(args.size_mb):
                    handle.write(os.urandom(MB))
            size = package.stat().st_size
            prefix = f"gs://{BUCKET}/bench/"
            chunk = f"{args.chunk_mb} MiB" if args.chunk_mb else "default"
            print(
                f"package: {size / MB:.0f} MB random bytes, chunk {chunk}, emulator {emulator.host}"
                f" (+{args.latency_ms:g} ms per request)"
            )

            emulator.reset_counters()
            first = run_child(package, prefix, emulator.host, args.chunk_mb, args.layout, trace=False)
            first_received = emulator.bytes_received()
            first_requests = len(emulator.uploads())
            emulator.reset_counters()
            again = run_child(package, prefix, emulator.host, args.chunk_mb, args.layout, trace=False)
            again_received = emulator.bytes_received()
            again_calls = [r.method for r in emulator.requests]

            total_s = first["plan_s"] + first["upload_s"]
            print(
                f"first upload : {first['upload_s']:.2f} s upload + {first['plan_s']:.2f} s plan (all digests)"
                f" -> {size / MB / first['upload_s']:.0f} MB/s upload, {size / MB / total_s:.0f} MB/s overall;"
                f" emulator received {first_received / MB:.1f} MB in {first_requests} upload requests"
            )
            print(
                f"               peak RSS {first['peak_rss_mb']:.0f} MB"
                f" (after imports {first['baseline_rss_mb']:.0f} MB, so +{first['peak_rss_mb'] - first['baseline_rss_mb']:.0f} MB"
                f" for a {size / MB:.0f} MB file)"
            )
            print(
                f"re-upload    : {again['upload_s']:.2f} s upload + {again['plan_s']:.2f} s plan;"
                f" bytes sent {again['bytes_sent']}, skipped {again['skipped']},"
                f" emulator received {again_received} bytes; calls {again_calls}"
            )
            if args.tracemalloc:
                traced = run_child(
                    package,
                    f"gs://{BUCKET}/bench-traced/",
                    emulator.host,
                    args.chunk_mb,
                    "gcloud",
                    trace=True,
                )
                print(
                    f"tracemalloc  : Python heap peak {traced['tracemalloc_peak_mb']:.1f} MB during a fresh upload"
                )
    finally:
        emulator.stop()


if __name__ == "__main__":
    main()
