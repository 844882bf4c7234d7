"""The submit path: ``plan`` (validate once, build, hash: the exact body and the uploads, what ``--dry-run``
prints) and ``submit`` (stage, then create exactly once).

Order matters: everything that can be checked locally is checked before the first network call, so a bad job
uploads nothing and creates nothing.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from mlsubmit.processes import temporary_directory
from mlsubmit.services.storage import StagedFile, plan_staging
from mlsubmit.spec.validate import PreparedJob, TrainingRequest, prepare

if TYPE_CHECKING:
    from mlsubmit.services.settings import Settings

log = logging.getLogger(__name__)


@dataclass
class Plan:
    """A validated job whose packages are built and hashed: the exact body, and what to upload for it."""

    prepared: PreparedJob
    staged: list[StagedFile] = field(default_factory=list)

    @property
    def body(self) -> dict[str, Any]:
        return self.prepared.body

    @property
    def uploads(self) -> list[StagedFile]:
        return [s for s in self.staged if s.local is not None]


def plan(request: TrainingRequest, workdir: Path) -> Plan:
    """Check the request once, build the trainer sdist into ``workdir`` and put the final package URIs in.

    Local only: nothing is uploaded. Packages go in gcloud's order: gs:// ones, local --packages, the build.
    The rules ran on placeholder URIs of the same count and prefix, so the final URIs need no second pass.
    """
    prepared = prepare(request)  # fails fast on every config/flag problem, before the (slower) build
    if not request.has_package_flags:
        return Plan(prepared)
    files: list[str | Path] = [*request.remote_packages, *request.local_packages]
    if request.package_path:
        from mlsubmit.sdist.build import build_sdist  # tarfile, subprocess: only when there is a build

        files.append(build_sdist(Path(request.package_path), workdir))
    from mlsubmit.sdist.digest import cache_dir_for

    staged = plan_staging(
        files, prepared.staging_prefix, request.staging_layout, digest_cache=cache_dir_for(request.env)
    )
    prepared.body["trainingInput"]["packageUris"] = [s.uri for s in staged]
    return Plan(prepared, staged)


def dry_run(request: TrainingRequest) -> dict[str, Any]:
    """The exact Job body `training` would send (packages built and hashed locally, nothing uploaded)."""
    if not request.package_path:  # nothing to build: no folder (and no janitor process) is needed
        return plan(request, Path()).body
    with temporary_directory("mlsubmit-") as tmp:
        return plan(request, Path(tmp)).body


class ImageStep(Protocol):
    """``--build-image`` (README "Containers"; ``follow.image_step.JobImageStep``): ``plan`` names the image
    offline (None: the job builds none), ``ensure`` returns it pinned by digest, building it only when needed."""

    def plan(
        self,
        body: dict[str, Any],
        *,
        local: Sequence[Path],
        remote_packages: Sequence[str],
        staging_prefix: str | None,
        project: Any,
        workdir: Path,
    ) -> str | None: ...

    def ensure(self, settings: Settings) -> str: ...


@dataclass
class Submitted:
    """What `training` made: the job as the service returned it, and the settings to follow it with."""

    job: dict[str, Any]
    job_id: str
    recovered: bool
    bytes_uploaded: int
    settings: Settings
    warnings: Sequence[str] = ()
    backend: Any = None  # the JobsBackend that made it, to follow the job (--wait / --stream-logs)


def stage(mat: Plan, settings: Settings, progress: Any = None) -> int:
    """Upload the local packages (skipping unchanged ones) through ``settings.storage()``; returns the bytes
    sent. Cloud Storage is signed with the API calls' credentials (anonymous for STORAGE_EMULATOR_HOST)."""
    if not mat.uploads:
        return 0
    from mlsubmit.services.storage import chunk_size_from, upload

    chunk_size = chunk_size_from(settings.env)
    return upload(
        mat.staged, settings.storage(), progress=progress, retry=settings.storage_retry, chunk_size=chunk_size
    ).bytes_sent


def submit(
    request: TrainingRequest,
    settings: Settings,
    *,
    executor_image_uri: str | None = None,
    progress: Any = None,
    image: ImageStep | None = None,
) -> Submitted:
    """Validate, build, stage and create the job. Raises MlsubmitError subclasses; prints nothing itself.

    ``settings`` come from the command line; the job's own region (flag, config file or environment) replaces
    theirs, so Vertex AI is called, and follow-up commands are suggested, in the region the job runs in.
    ``image``: the ``--build-image`` step; the image is planned with the job, made after staging, and no job is
    created when that fails.
    """
    with temporary_directory("mlsubmit-") as tmp:
        mat = plan(request, Path(tmp))
        warnings: list[str] = []
        vertex_body: dict[str, Any] | None = None
        collection = "customJobs"
        settings = settings.with_region(mat.body["trainingInput"].get("region"))
        tagged = None
        if settings.target == "vertex":
            from mlsubmit.targets.hptuning import vertex_body_for

            if image is not None:
                tagged = image.plan(
                    mat.body,
                    local=[s.local for s in mat.uploads if s.local is not None],
                    remote_packages=request.remote_packages,
                    staging_prefix=mat.prepared.staging_prefix,
                    project=settings.project,
                    workdir=Path(tmp),
                )
            vertex_body, warnings, collection = vertex_body_for(
                mat.body, executor_image_uri=executor_image_uri, built_image=tagged
            )
        # credentials, project and region are checked before any upload
        backend = settings.jobs_backend(collection=collection)
        for staged in mat.staged:
            log.info("package %s -> %s", staged.local or "(already in Cloud Storage)", staged.uri)
        log.debug("job body: %s", json.dumps(vertex_body if vertex_body is not None else mat.body))
        sent = stage(mat, settings, progress)
        if image is not None and tagged is not None:
            from mlsubmit.targets.hptuning import vertex_body_for

            vertex_body, warnings, collection = vertex_body_for(
                mat.body, executor_image_uri=executor_image_uri, built_image=image.ensure(settings)
            )
        job_id = mat.body["jobId"]
        if vertex_body is not None:
            job = backend.create(vertex_body, job_id)
            recovered = bool(backend.last_recovered)
        else:
            result = backend.create(mat.body)
            job, recovered = result.job, result.recovered
        return Submitted(
            job=job,
            job_id=job_id,
            recovered=recovered,
            bytes_uploaded=sent,
            settings=settings,
            warnings=warnings,
            backend=backend,
        )
