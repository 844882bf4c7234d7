"""What the trainer checkup reports (file, line, rule, severity, fix) and what it knows of the job and its image,
so a rule fires only where the job really breaks (docs/migrate.md)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import Any, Literal, NamedTuple

Severity = Literal["error", "warning", "info"]
SEVERITIES: tuple[Severity, ...] = ("error", "warning", "info")


def version_tuple(version: str | None) -> tuple[int, ...] | None:
    """``"2.16"`` -> ``(2, 16)``; ``None`` for anything that is not dotted numbers (``"2.16.1rc0"`` -> 2.16.1)."""
    match = re.match(r"[0-9]+(?:\.[0-9]+)*", str(version or ""))
    return tuple(int(part) for part in match.group().split(".")) if match else None


class ImageVersions(NamedTuple):
    """The versions in the image the job will run in; ``None`` where mlsubmit does not know them."""

    # what they come from, for the report: "runtimeVersion 2.11", "prebuilt image tf-cpu.2-17.py310"
    source: str
    python: str | None = None
    tensorflow: str | None = None
    packages: Mapping[str, str] = MappingProxyType({})  # other known versions: scikit-learn, xgboost, ...
    # the top-level modules the image is known to hold (None: not known, so nothing is called missing)
    modules: frozenset[str] | None = None

    def version_of(self, package: str) -> str | None:  # of ``package`` (PyPI name); None: unknown
        return self.tensorflow if package == "tensorflow" else self.packages.get(package)

    def at_least(self, package: str, version: str) -> bool | None:
        """Whether the image's ``package`` is ``version`` or newer; ``None`` when the image's version is unknown."""
        have, want = version_tuple(self.version_of(package)), version_tuple(version)
        return None if have is None or want is None else have[: len(want)] >= want


class JobFacts(NamedTuple):
    """What the job tells the trainer on its target (docs/vertex.md)."""

    target: str  # "vertex" or "ml"
    primary: str  # the primary replica's TF_CONFIG task type: "chief" or "master"
    distributed: bool  # more than one replica: TF_CONFIG's cluster matters
    job_dir: bool  # the app gets --job-dir
    container: bool  # a custom container (no executor image: AIP_* variables are how outputs are found)
    metric_tag: str | None  # a tuning job's hyperparameterMetricTag; None for other jobs
    versions: ImageVersions
    roles: frozenset[str] = frozenset({"chief"})  # TF_CONFIG cluster roles that have replicas


class Finding(NamedTuple):
    """One problem in the trainer: where, which rule, how bad, what to do (and the other lines it appears on)."""

    path: str  # posix path relative to the package's parent ("trainer/task.py")
    line: int
    rule: str
    severity: Severity
    message: str
    fix: str
    more_lines: tuple[int, ...] = ()

    @classmethod
    def on_lines(
        cls, path: str, lines: Iterable[int], rule: str, severity: Severity, message: str, fix: str
    ) -> Finding:
        """A finding at the first of ``lines`` (one at least), the others its ``more_lines``."""
        first, *more = sorted(set(lines))
        return cls(path, first, rule, severity, message, fix, tuple(more))

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}"

    def as_dict(self) -> dict[str, Any]:
        keys = ("file", "line", "rule", "severity", "message", "fix")
        out: dict[str, Any] = dict(zip(keys, self[:6], strict=True))
        return {**out, "moreLines": list(self.more_lines)} if self.more_lines else out

    def text(self) -> str:
        more = f" (also lines {', '.join(map(str, self.more_lines))})" if self.more_lines else ""
        return f"{self.where}: {self.severity} {self.rule}: {self.message}{more}; fix: {self.fix}"


def count_by_severity(findings: Sequence[Finding]) -> dict[str, int]:
    return {severity: sum(f.severity == severity for f in findings) for severity in SEVERITIES}
