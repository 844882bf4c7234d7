"""Trainer checkup speed: the checkup of a 10,000-line package (goal: under 1 s).

Run: python benchmarks/bench_checkup.py [--lines 10000] [--runs 5]
The package is the corpus trainers' modules copied into enough modules to reach the line count, so the rules meet
legacy code: the legacy-style trainers of tests/corpus/trainers, or, with MLSUBMIT_TRAINER_CORPUS naming a checkout
of the real trainers of tests/corpus/trainers/MANIFEST.yaml (docs/migrate.md), those. The median of
the runs is reported, with the finding count.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mlsubmit.migrate.checkup import check_package  # noqa: E402
from mlsubmit.migrate.findings import ImageVersions, JobFacts  # noqa: E402

CORPUS = ROOT / "tests" / "corpus" / "trainers"
CHECKOUT_VARIABLE = "MLSUBMIT_TRAINER_CORPUS"


def corpus_modules() -> list[Path]:
    """The real trainers' modules where a checkout is named, else the legacy-style trainers of the corpus."""
    checkout = os.environ.get(CHECKOUT_VARIABLE)
    if not checkout:
        return sorted(CORPUS.rglob("*.py"))
    import yaml

    trainers = yaml.safe_load((CORPUS / "MANIFEST.yaml").read_text())["trainers"]
    return [
        Path(checkout) / trainer["root"] / rel
        for trainer in trainers.values()
        for rel in trainer["files"]
        if rel.endswith(".py")
    ]


def build_package(root: Path, lines: int) -> int:
    """A package of corpus modules copied until it holds ``lines`` lines; returns the line count."""
    package = root / "trainer"
    package.mkdir()
    (package / "__init__.py").write_text("")
    sources = [p.read_text() for p in corpus_modules() if p.stat().st_size]
    total, index = 0, 0
    while total < lines:
        text = sources[index % len(sources)]
        (package / f"module_{index}.py").write_text(text)
        total += text.count("\n")
        index += 1
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--lines", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    facts = JobFacts(
        target="vertex",
        primary="chief",
        distributed=True,
        job_dir=False,
        container=False,
        metric_tag="accuracy",
        versions=ImageVersions(source="bench", python="3.10", tensorflow="2.17"),
        roles=frozenset({"chief", "worker"}),
    )
    with tempfile.TemporaryDirectory(prefix="mlsubmit-bench-") as tmp:
        total = build_package(Path(tmp), args.lines)
        times, findings = [], 0
        for _ in range(args.runs):
            start = time.perf_counter()
            checkup = check_package(Path(tmp) / "trainer", facts)
            times.append(time.perf_counter() - start)
            findings = len(checkup.findings)
    median = statistics.median(times)
    verdict = "ok" if median < 1.0 else "SLOWER THAN 1 s"
    print(
        f"checkup of {total} lines in {checkup.modules} modules: {median * 1000:.0f} ms median of {args.runs} "
        f"({findings} findings) - {verdict}"
    )


if __name__ == "__main__":
    main()
