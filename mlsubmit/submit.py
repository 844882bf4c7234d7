"""The submit path: ``plan`` (validate once, build, hash: the exact body and the uploads, what ``--dry-run``
prints) and ``submit`` (stage, then create exactly once).

Order matters: everything that can be checked locally is checked before the first network call, so a bad job
uploads nothing and creates nothing.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from mlsubmit.errors import UsageError
from mlsubmit.processes import temporary_directory
from mlsubmit.services.storage import StagedFile, plan_staging
from mlsubmit.spec.validate import PreparedJob, TrainingRequest, prepare
from mlsubmit.targets.failover import Candidate

if TYPE_CHECKING:
    from mlsubmit.services.settings import Settings

log = logging.getLogger(__name__)
# The preflight hook: (Vertex AI body, the job's settings, the URIs to upload); raises to stop the submit.
# (body, settings, uploads, failing_over): with failover the report goes to stderr only, and a quota refusal
# of the job's own region does not stop the submit (the loop skips that candidate).
Preflight = Callable[[dict[str, Any], "Settings", list[str], bool], None]


@dataclass
class Plan:
    """A validated job whose packages are built and hashed: the exact body, and what to upload for it; its
    failover candidates (README "Getting jobs to start"), each checked like the job; the packages' sources."""

    prepared: PreparedJob
    staged: list[StagedFile] = field(default_factory=list)
    candidates: list[Candidate] = field(default_factory=list)
    sources: list[str | Path] = field(default_factory=list)
    layout: str = "shared"  # where packages go (README "Packaging and staging")

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
    candidates = failover_candidates(request, prepared)
    if not request.has_package_flags:
        return Plan(prepared, candidates=candidates)
    files: list[str | Path] = [*request.remote_packages, *request.local_packages]
    if request.package_path:
        from mlsubmit.sdist.build import build_sdist  # tarfile, subprocess: only when there is a build

        files.append(build_sdist(Path(request.package_path), workdir))
    from mlsubmit.sdist.digest import cache_dir_for

    staged = plan_staging(
        files, prepared.staging_prefix, request.staging_layout, digest_cache=cache_dir_for(request.env)
    )
    prepared.body["trainingInput"]["packageUris"] = [s.uri for s in staged]
    return Plan(prepared, staged, candidates, files, request.staging_layout)


def failover_candidates(request: TrainingRequest, prepared: PreparedJob) -> list[Candidate]:
    """The job and its failover candidates, each merged and checked like the job (InvalidJobError, exit 2)."""
    from mlsubmit.errors import InvalidJobError
    from mlsubmit.targets.failover import candidate_problems, candidates_of

    regions = list(request.flags.given.get("fallback_regions") or [])
    candidates = candidates_of(prepared.body, regions)
    if len(candidates) > 1:
        problems = candidate_problems(
            prepared.body,
            candidates,
            rules=request.target_rules,
            file=prepared.file,
            job_bucket=request.staging_bucket,
        )
        if problems:
            raise InvalidJobError(problems)
    elif request.flags.given.get("max_queue_wait") is not None:
        raise UsageError(
            "--max-queue-wait moves a queued job to the next failover candidate: give some with "
            '--fallback-regions or vertex.failover.candidates (README "Getting jobs to start")'
        )
    return candidates


def dry_run(request: TrainingRequest) -> dict[str, Any]:
    """The exact Job body `training` would send (packages built and hashed locally, nothing uploaded)."""
    if not request.package_path:  # nothing to build: no folder (and no janitor process) is needed
        return plan(request, Path()).body
    with temporary_directory("mlsubmit-") as tmp:
        return plan(request, Path(tmp)).body


class Started(Protocol):
    """What a failover run settled on: the job (as `jobs` commands show it), its region and backend, the
    attempts as `--format json` shows them, and the bytes uploaded to candidates' own buckets."""

    job: dict[str, Any]
    region: str
    backend: Any
    attempts: list[dict[str, Any]]
    bytes_uploaded: int


# (plan, settings, upload) -> Started: ``mlsubmit.follow.failover_start.start``, given by the CLI (submit does
# not import follow: they are sibling layers); ``upload(files)`` stages a candidate's own packages.
FailoverStart = Callable[["Plan", "Settings", Callable[[list[StagedFile]], int]], Started]


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
    attempts: list[dict[str, Any]] = field(
        default_factory=list
    )  # failover attempts (README "Getting jobs to start")


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
    failover: FailoverStart | None = None,
    preflight: Preflight | None = None,
) -> Submitted:
    """Validate, build, stage and create the job. Raises MlsubmitError subclasses; prints nothing itself.

    ``preflight`` (Vertex AI) runs first over the body, before any upload or create (README "Getting jobs to
    start"); it raises to stop the submit.

    ``settings`` come from the command line; the job's own region (flag, config file or environment) replaces
    theirs, so Vertex AI is called, and follow-up commands are suggested, in the region the job runs in.
    """
    with temporary_directory("mlsubmit-") as tmp:
        mat = plan(request, Path(tmp))
        warnings: list[str] = []
        vertex_body: dict[str, Any] | None = None
        collection = "customJobs"
        if settings.target == "vertex":
            from mlsubmit.targets.hptuning import vertex_body_for

            vertex_body, warnings, collection = vertex_body_for(
                mat.body, executor_image_uri=executor_image_uri
            )
        settings = settings.with_region(mat.body["trainingInput"].get("region"))
        # credentials, project and region are checked before any upload
        backend = settings.jobs_backend(collection=collection)
        failing_over = vertex_body is not None and failover is not None and len(mat.candidates) > 1
        if preflight is not None and vertex_body is not None:  # read-only checks, before any upload or create
            try:
                preflight(vertex_body, settings, [s.uri for s in mat.uploads], failing_over)
            except UsageError as err:
                # with failover, a quota limit too low here only skips the job's own region: the loop checks
                # each candidate's quota before its create (README "Getting jobs to start")
                refusals = getattr(err, "refusals", None) or [""]
                if not failing_over or not all(r.startswith("preflight refused: quota ") for r in refusals):
                    raise
        for staged in mat.staged:
            log.info("package %s -> %s", staged.local or "(already in Cloud Storage)", staged.uri)
        log.debug("job body: %s", json.dumps(vertex_body if vertex_body is not None else mat.body))
        sent = stage(mat, settings, progress)
        job_id = mat.body["jobId"]
        if failing_over:
            assert failover is not None
            # the one call site of failover (README "Getting jobs to start"): the loop lives in follow/
            started = failover(
                mat, settings, lambda files: stage(Plan(mat.prepared, files), settings, progress)
            )
            return Submitted(
                job=started.job,
                job_id=job_id,
                recovered=False,
                bytes_uploaded=sent + started.bytes_uploaded,
                settings=settings.with_region(started.region),
                warnings=warnings,
                backend=started.backend,
                attempts=started.attempts,
            )
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
