"""The trainer corpora of the checkup's tests (docs/migrate.md).

Two corpora, one way of describing a trainer's job and one way of comparing findings:

* ``tests/corpus/trainers/<name>/``: small legacy-style trainers written for this project, each with a
  ``job.yaml`` (the job it is checked for) and its expected findings marked on their lines in the source:
  ``# expect: RULE SEVERITY`` where a finding is reported, ``# also: RULE SEVERITY`` on each further line the same
  finding names (``-- why`` may follow). ``# fine: why`` marks a look-alike that must not be reported, ``# missed:
  why`` a real problem the checkup does not find (a known limit, docs/migrate.md).
* ``tests/corpus/trainers/MANIFEST.yaml``: real legacy trainers from a public repository, whose code is not kept
  here; :data:`CHECKOUT_VARIABLE` names a local checkout of it (docs/migrate.md).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from mlsubmit.migrate.checkup import Checkup, check_files
from mlsubmit.migrate.findings import ImageVersions, JobFacts
from mlsubmit.migrate.requirements import TF_IMAGE_MODULES

CORPUS = Path(__file__).resolve().parents[1] / "corpus" / "trainers"
MANIFEST = CORPUS / "MANIFEST.yaml"
CHECKOUT_VARIABLE = "MLSUBMIT_TRAINER_CORPUS"
# What the image is known to hold, by the name a job description gives it.
IMAGE_MODULES = {"tensorflow": TF_IMAGE_MODULES}
MARKER = re.compile(r"\b(expect|also): ([a-z0-9-]+) (error|warning|info)\b")

# (file, line, rule, severity): one reported line of a finding
Line = tuple[str, int, str, str]


def job_facts(job: Mapping[str, Any]) -> JobFacts:
    """The checkup's facts for a job described as in MANIFEST.yaml (its header lists the keys and defaults)."""
    known = {
        "image",
        "tensorflow",
        "python",
        "packages",
        "image_modules",
        "replicas",
        "job_dir",
        "metric",
        "container",
    }
    unknown = set(job) - known
    if unknown:
        raise ValueError(f"unknown job keys {sorted(unknown)}; known: {sorted(known)}")
    replicas = frozenset(job.get("replicas", ["chief"]))
    modules = job.get("image_modules")
    return JobFacts(
        target="vertex",
        primary="chief",
        distributed=len(replicas) > 1,
        job_dir=bool(job.get("job_dir", True)),
        container=bool(job.get("container", False)),
        metric_tag=job.get("metric"),
        versions=ImageVersions(
            source=str(job.get("image", "corpus")),
            python=job.get("python", "3.10"),
            tensorflow=job.get("tensorflow"),
            packages={str(k): str(v) for k, v in (job.get("packages") or {}).items()},
            modules=IMAGE_MODULES[modules] if modules else None,
        ),
        roles=replicas,
    )


def check_trainer(
    project: Path, package: str, files: Iterable[str], entry: str, job: Mapping[str, Any]
) -> Checkup:
    """The checkup of the package's listed ``.py`` files (paths under ``project``), with the project's setup.py."""
    modules = {
        rel: project / rel for rel in sorted(files) if rel.startswith(f"{package}/") and rel.endswith(".py")
    }
    return check_files(modules, job_facts(job), project_dir=project, entry=entry)


def reported(checkup: Checkup) -> tuple[list[Line], list[Line]]:
    """(the line each finding is reported at, the further lines each names), in reading order."""
    first: list[Line] = [(f.path, f.line, f.rule, f.severity) for f in checkup.findings]
    more: list[Line] = sorted(
        (f.path, line, f.rule, f.severity) for f in checkup.findings for line in f.more_lines
    )
    return first, more


@dataclass(frozen=True)
class Original:
    """A trainer of tests/corpus/trainers/NAME written for this project, and the job it is checked for."""

    name: str
    root: Path
    package: str
    entry: str
    job: dict[str, Any]

    def files(self) -> list[str]:
        return sorted(p.relative_to(self.root).as_posix() for p in self.root.rglob("*") if p.is_file())

    def check(self) -> Checkup:
        return check_trainer(self.root, self.package, self.files(), self.entry, self.job)

    def marked(self) -> tuple[list[Line], list[Line]]:
        """(the ``expect`` markers, the ``also`` markers) of every file the checkup reads, in reading order."""
        first: list[Line] = []
        more: list[Line] = []
        for rel in self.files():
            if rel == "job.yaml":
                continue
            for number, text in enumerate((self.root / rel).read_text().splitlines(), 1):
                comment = text.partition("#")[2]
                for kind, rule, severity in MARKER.findall(comment):
                    (first if kind == "expect" else more).append((rel, number, rule, severity))
        return sorted(first), sorted(more)

    def fine_lines(self) -> list[tuple[str, int]]:
        """The lines marked ``# fine:``: look-alikes of a legacy pattern that must not be reported."""
        return [
            (rel, number)
            for rel in self.files()
            if rel.endswith(".py")
            for number, text in enumerate((self.root / rel).read_text().splitlines(), 1)
            if "# fine:" in text
        ]


def originals() -> dict[str, Original]:
    """Every trainer folder of the corpus with its job.yaml."""
    found = {}
    for path in sorted(CORPUS.glob("*/job.yaml")):
        spec = yaml.safe_load(path.read_text())
        found[path.parent.name] = Original(
            path.parent.name, path.parent, spec["package"], spec["entry"], dict(spec.get("job") or {})
        )
    return found


def manifest() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(MANIFEST.read_text())
    return data


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def listed(findings: Iterable[Mapping[str, Any]]) -> list[tuple[str, int, str, str, tuple[int, ...]]]:
    """MANIFEST.yaml findings as (file, line, rule, severity, further lines), comparable with :func:`exact`."""
    return [(f["file"], f["line"], f["rule"], f["severity"], tuple(f.get("also", ()))) for f in findings]


def exact(checkup: Checkup) -> list[tuple[str, int, str, str, tuple[int, ...]]]:
    """Every finding as (file, line, rule, severity, further lines), in reading order."""
    return [(f.path, f.line, f.rule, f.severity, f.more_lines) for f in checkup.findings]
