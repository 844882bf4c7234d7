"""`--dry-run` and the local half of submitting: validate, build and hash, with nothing uploaded or created."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mlsubmit.prepare import PreparedJob, TrainingRequest, prepare
from mlsubmit.staging import StagedFile, plan_staging


@dataclass
class Materialized:
    """A validated job whose packages are built and hashed: the exact body, and what to upload for it."""

    prepared: PreparedJob
    plan: list[StagedFile] = field(default_factory=list)

    @property
    def body(self) -> dict[str, Any]:
        return self.prepared.body

    @property
    def uploads(self) -> list[StagedFile]:
        return [s for s in self.plan if s.local is not None]


def materialize(request: TrainingRequest, workdir: Path) -> Materialized:
    """Check the request, build the trainer sdist into ``workdir`` and compute the final package URIs.

    Local only: nothing is uploaded. Packages go in gcloud's order: gs:// ones, local --packages, the build.
    """
    prepared = prepare(request)  # fails fast on every config/flag problem, before the (slower) build
    if not request.has_package_flags:
        return Materialized(prepared)
    from mlsubmit.packaging import build_sdist

    files: list[str | Path] = [*request.remote_packages, *request.local_packages]
    if request.package_path:
        files.append(build_sdist(Path(request.package_path), workdir))
    plan = plan_staging(files, prepared.staging_prefix)
    final = prepare(request, package_uris=[s.uri for s in plan], file=prepared.file)  # file read once
    return Materialized(final, plan)


def dry_run(request: TrainingRequest) -> dict[str, Any]:
    """The exact Job body `training` would send (packages built and hashed locally, nothing uploaded)."""
    with tempfile.TemporaryDirectory(prefix="mlsubmit-") as tmp:
        return materialize(request, Path(tmp)).body
