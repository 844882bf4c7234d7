"""The submit path: ``plan`` (validate once, build, hash: the exact body and the uploads, what ``--dry-run``
prints) and ``submit`` (stage, then create exactly once).

Order matters: everything that can be checked locally is checked before the first network call, so a bad job
uploads nothing and creates nothing.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mlsubmit.processes import temporary_directory
from mlsubmit.services.storage import StagedFile, plan_staging
from mlsubmit.spec.validate import PreparedJob, TrainingRequest, prepare

Notify = Callable[[str], None]
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
    from mlsubmit.sdist.build import build_sdist

    files: list[str | Path] = [*request.remote_packages, *request.local_packages]
    if request.package_path:
        files.append(build_sdist(Path(request.package_path), workdir))
    staged = plan_staging(files, prepared.staging_prefix)
    prepared.body["trainingInput"]["packageUris"] = [s.uri for s in staged]
    return Plan(prepared, staged)


def dry_run(request: TrainingRequest) -> dict[str, Any]:
    """The exact Job body `training` would send (packages built and hashed locally, nothing uploaded)."""
    with temporary_directory("mlsubmit-") as tmp:
        return plan(request, Path(tmp)).body


@dataclass(frozen=True)
class SubmitOptions:
    """How to reach the services; each None falls back to gcloud's environment conventions."""

    target: str = "ml"
    access_token_file: str | None = None
    api_endpoint: str | None = None
    executor_image_uri: str | None = None


@dataclass
class Submitted:
    """What `training` made: the job as the service returned it."""

    job: dict[str, Any]
    job_id: str
    recovered: bool
    bytes_uploaded: int
    warnings: Sequence[str] = ()
    backend: Any = None  # the JobsBackend that made it, to follow the job (--wait / --stream-logs)


def stage(
    mat: Plan,
    env: Mapping[str, str],
    progress: Any = None,
    *,
    http: Any = None,
    storage_service: Any = None,
) -> int:
    """Upload the local packages (skipping unchanged ones); returns the bytes sent.

    `http` is the API's authorized http: Cloud Storage is signed with the same credentials (unless
    STORAGE_EMULATOR_HOST is set, see transport.make_storage_service).
    """
    if not mat.uploads:
        return 0
    from mlsubmit.services.connection import make_storage_service
    from mlsubmit.services.storage import upload

    service = storage_service or make_storage_service(env, http=http)
    return upload(mat.staged, service, progress=progress).bytes_sent


def submit(
    request: TrainingRequest,
    options: SubmitOptions,
    *,
    notify: Notify,
    progress: Any = None,
    connect: Callable[..., tuple[Any, str]] | None = None,
) -> Submitted:
    """Validate, build, stage and create the job. Raises MlsubmitError subclasses; prints nothing itself."""
    from mlsubmit.services import connection as transport
    from mlsubmit.services.ml import Caller

    connect = connect or transport.connect
    with temporary_directory("mlsubmit-") as tmp:
        mat = plan(request, Path(tmp))
        warnings: list[str] = []
        vertex_body: dict[str, Any] | None = None
        if options.target == "vertex":
            from mlsubmit.targets.vertex import to_custom_job

            vertex_body, warnings = to_custom_job(mat.body, executor_image_uri=options.executor_image_uri)
        region = mat.body["trainingInput"].get("region")
        api_name = "aiplatform" if options.target == "vertex" else "ml"
        service, project = connect(
            api_name,
            env=request.env,
            project_flag=request.project,
            token_file=options.access_token_file,
            endpoint=options.api_endpoint,
            region=region,
        )
        # Staging signs with the API client's authorized http (a googleapiclient Resource keeps it in _http).
        for staged in mat.staged:
            log.info("package %s -> %s", staged.local or "(already in Cloud Storage)", staged.uri)
        log.debug("job body: %s", json.dumps(vertex_body if vertex_body is not None else mat.body))
        sent = stage(mat, request.env, progress, http=getattr(service, "_http", None))
        caller = Caller(notify=notify)
        job_id = mat.body["jobId"]
        if vertex_body is not None:
            from mlsubmit.services.vertex import VertexJobs

            backend = VertexJobs(service, project, region, caller)
            job = backend.create(vertex_body, job_id)
            return Submitted(
                job=job,
                job_id=job_id,
                recovered=backend.last_recovered,
                bytes_uploaded=sent,
                warnings=warnings,
                backend=backend,
            )
        from mlsubmit.services.ml import MlJobs

        jobs = MlJobs(service, project, caller)
        result = jobs.create(mat.body)
        return Submitted(
            job=result.job,
            job_id=job_id,
            recovered=result.recovered,
            bytes_uploaded=sent,
            warnings=warnings,
            backend=jobs,
        )
