"""The submit path: ``plan`` (validate once, build, hash, translate once: the exact body and the uploads, what
``--dry-run`` prints) and ``run`` (stage, then create exactly once).

Order matters: everything that can be checked locally is checked before the first network call, so a bad job
uploads nothing and creates nothing. Every command that reads a job (``training``, ``export``) goes through
``plan``; the body a dry run prints is the body ``run`` sends, by construction (docs/architecture.md).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from mlsubmit.errors import UsageError
from mlsubmit.job.validate import PreparedJob, TrainingRequest, prepare
from mlsubmit.services.staging import StagedFile, plan_staging
from mlsubmit.targets.translate import Kind, Translation, rules_for, translate

if TYPE_CHECKING:
    from mlsubmit.sdist.build import WalkedPackage
    from mlsubmit.services.backends import JobsBackend
    from mlsubmit.services.settings import Settings
    from mlsubmit.targets.failover import Candidate  # the failover tables load only for Vertex AI jobs


class ImageStep(Protocol):
    """``--build-image`` (docs/containers.md; ``follow.image_step.JobImageStep``): ``plan`` names the image
    offline (None: the job builds none), ``view`` is what a dry run shows of it, ``ensure`` returns it pinned by
    digest, building it only when the registry lacks it."""

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

    def view(self) -> dict[str, Any]: ...

    def ensure(self, settings: Settings) -> str: ...


@dataclass
class Plan:
    """A validated job whose packages are built and hashed, translated for its target: the exact body to send
    (or print), where it goes, and what to upload for it."""

    prepared: PreparedJob
    target: Kind = "ml"
    translation: Translation | None = None
    staged: list[StagedFile] = field(default_factory=list)
    # failover (docs/getting-jobs-to-start.md): the job and its candidates, each checked like the job; the
    # packages' sources and layout, to stage a candidate's own bucket
    candidates: list[Candidate] = field(default_factory=list)
    sources: list[str | Path] = field(default_factory=list)
    layout: str = "shared"
    # --build-image: the step, the image's name with its content tag (what the body names until it is pinned),
    # what a dry run shows of it, and what the translation was asked for (to translate again once pinned)
    image: ImageStep | None = None
    image_name: str | None = None
    image_view: dict[str, Any] | None = None
    executor_image_uri: str | None = None
    namespace: str | None = None
    # --package-path: the files the sdist build walked and read, for the trainer checkup to read none again
    walked: WalkedPackage | None = None

    @property
    def job(self) -> dict[str, Any]:
        """The merged, validated ml v1 Job (the source of every translation)."""
        return self.prepared.body

    @property
    def body(self) -> dict[str, Any]:
        """The body for the target: what a dry run prints, an export writes and a submit sends."""
        return self.translation.body if self.translation is not None else self.prepared.body

    @property
    def warnings(self) -> tuple[str, ...]:
        """What the target cannot express, to show before the body is printed or sent."""
        return self.translation.warnings if self.translation is not None else ()

    @property
    def collection(self) -> str:
        """The collection the body is created in (``jobs``, ``customJobs``, ``hyperparameterTuningJobs``)."""
        return self.translation.collection if self.translation is not None else "jobs"

    @property
    def job_id(self) -> str:
        return str(self.job["jobId"])

    @property
    def service(self) -> str:
        """The service the plan is created on: ``ml`` or ``vertex`` (the Settings' target)."""
        return self.translation.service if self.translation is not None else "ml"

    @property
    def region(self) -> str | None:
        """The job's region as merged: ``--region``, else the config file, else CLOUDSDK_COMPUTE_REGION."""
        ti = self.job.get("trainingInput")
        region = ti.get("region") if isinstance(ti, dict) else None
        return str(region) if region else None

    @property
    def uploads(self) -> list[StagedFile]:
        return [s for s in self.staged if s.local is not None]

    def with_image(self, pinned: str) -> Plan:
        """The plan whose body runs ``pinned`` (``REPOSITORY@sha256:...``) instead of the content tag."""
        translation = translate(
            self.job,
            self.target,
            executor_image_uri=self.executor_image_uri,
            namespace=self.namespace,
            checked=True,
            built_image=pinned,
        )
        return dataclasses.replace(self, translation=translation, image_name=pinned)


def plan(
    request: TrainingRequest,
    workdir: Path,
    *,
    target: Kind = "ml",
    executor_image_uri: str | None = None,
    namespace: str | None = None,
    image: ImageStep | None = None,
) -> Plan:
    """Check the request once (by the rules of ``target``), build the trainer sdist into ``workdir``, put the
    final package URIs in and translate the job for ``target`` once. ``image``: with ``--build-image`` the
    image is planned here too (Dockerfile, content tag, name; its context written into ``workdir``).

    Local only: nothing is uploaded. Packages go in gcloud's order: gs:// ones, local --packages, the build.
    The rules ran on placeholder URIs of the same count and prefix, so the final URIs need no second pass.
    """
    rules = request.target_rules if request.target_rules is not None else rules_for(target)
    checked = rules is not None
    request = dataclasses.replace(request, target_rules=rules)
    prepared = prepare(request)  # fails fast on every config/flag problem, before the (slower) build
    candidates = failover_candidates(request, prepared, target)
    staged: list[StagedFile] = []
    files: list[str | Path] = []
    walked = None
    if request.has_package_flags:
        files = [*request.remote_packages, *request.local_packages]
        if request.package_path:
            from mlsubmit.sdist.build import build_package  # tarfile, subprocess: only when there is a build

            built = build_package(Path(request.package_path), workdir)
            files.append(built.sdist)
            walked = built.walked
        cache = None
        if len(files) > len(request.remote_packages):  # something local to hash: its digests are cached
            from mlsubmit.sdist.digest import cache_dir_for

            cache = cache_dir_for(request.env)
        staged = plan_staging(files, prepared.staging_prefix, request.staging_layout, digest_cache=cache)
        prepared.body["trainingInput"]["packageUris"] = [s.uri for s in staged]
    image_name = None
    if image is not None and target != "ml":
        from mlsubmit.services.connection import resolve_project

        image_name = image.plan(
            prepared.body,
            local=[s.local for s in staged if s.local is not None],
            remote_packages=request.remote_packages,
            staging_prefix=prepared.staging_prefix,
            project=lambda: resolve_project(request.project, request.env),
            workdir=workdir,
        )
    translation = translate(
        prepared.body,
        target,
        executor_image_uri=executor_image_uri,
        namespace=namespace,
        checked=checked,
        built_image=image_name,
    )
    return Plan(
        prepared,
        target,
        translation,
        staged,
        image=image if image_name else None,
        image_name=image_name,
        executor_image_uri=executor_image_uri,
        namespace=namespace,
        candidates=candidates,
        sources=files,
        layout=request.staging_layout,
        walked=walked,
    )


def failover_candidates(request: TrainingRequest, prepared: PreparedJob, target: Kind) -> list[Candidate]:
    """The job and its failover candidates (docs/getting-jobs-to-start.md), each merged and checked like the
    job, region-bound values included (InvalidJobError, exit 2). Vertex AI jobs only."""
    given = request.flags.given
    if target not in ("vertex", "customjob", "hptuningjob"):
        if given.get("fallback_regions") or given.get("max_queue_wait") is not None:
            raise UsageError(
                "--fallback-regions and --max-queue-wait are for Vertex AI jobs (--target vertex)"
            )
        return []
    from mlsubmit.errors import InvalidJobError
    from mlsubmit.targets.failover import candidate_problems, candidates_of

    candidates = candidates_of(prepared.body, list(given.get("fallback_regions") or []))
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
    elif given.get("max_queue_wait") is not None:
        raise UsageError(
            "--max-queue-wait moves a queued job to the next failover candidate: give some with "
            "--fallback-regions or vertex.failover.candidates (docs/getting-jobs-to-start.md)"
        )
    return candidates


@contextmanager
def planned(
    request: TrainingRequest,
    *,
    target: Kind = "ml",
    executor_image_uri: str | None = None,
    namespace: str | None = None,
    image: ImageStep | None = None,
) -> Iterator[Plan]:
    """:func:`plan` in a temporary folder that lives while the plan is used (its sdist and image context are
    uploaded from there)."""
    options: dict[str, Any] = {
        "target": target,
        "executor_image_uri": executor_image_uri,
        "namespace": namespace,
        "image": image,
    }
    if not request.package_path and not (image is not None and target != "ml" and request.local_packages):
        yield plan(request, Path(), **options)  # nothing to build: no folder (and no janitor process)
        return
    from mlsubmit.proc.processes import temporary_directory  # the keeper's janitor: only with a build

    with temporary_directory("mlsubmit-") as tmp:
        yield plan(request, Path(tmp), **options)


def dry_run(
    request: TrainingRequest,
    *,
    target: Kind = "ml",
    executor_image_uri: str | None = None,
    image: ImageStep | None = None,
) -> Plan:
    """The plan `training` would send (packages built and hashed locally, nothing uploaded): print its body,
    and with ``image`` its ``image_view`` (Dockerfile, content tag, name, build request)."""
    with planned(request, target=target, executor_image_uri=executor_image_uri, image=image) as done:
        if done.image is not None:
            done.image_view = done.image.view()  # while the context is on disk
        return done


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
    attempts: list[dict[str, Any]] = field(default_factory=list)  # failover (docs/getting-jobs-to-start.md)


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
# The preflight hook: (the plan, its settings); raises to stop the submit (docs/getting-jobs-to-start.md).
# With failover candidates a quota refusal in the job's own region does not stop it: the loop skips that one.
Preflight = Callable[["Plan", "Settings"], None]


def stage(mat: Plan, settings: Settings, progress: Any = None) -> int:
    """Upload the local packages (skipping unchanged ones) through ``settings.storage()``; returns the bytes
    sent. Cloud Storage is signed with the API calls' credentials (anonymous for STORAGE_EMULATOR_HOST)."""
    if not mat.uploads:
        return 0
    from mlsubmit.services.staging import chunk_size_from
    from mlsubmit.services.storage import upload

    chunk_size = chunk_size_from(settings.env)
    return upload(
        mat.staged, settings.storage(), progress=progress, retry=settings.storage_retry, chunk_size=chunk_size
    ).bytes_sent


def run(
    mat: Plan,
    settings: Settings,
    *,
    progress: Any = None,
    preflight: Preflight | None = None,
    failover: FailoverStart | None = None,
) -> Submitted:
    """Stage the plan's packages and create its body exactly once. Raises MlsubmitError subclasses; prints
    nothing itself. ``settings`` come from :meth:`Settings.for_job` of this plan (its region and target).

    ``preflight`` (Vertex AI) runs first, before any upload or create; ``failover`` creates the job with the
    first candidate that can start it (docs/getting-jobs-to-start.md), when the plan has candidates.
    """
    import logging  # a dry run never logs and does not load it

    log = logging.getLogger(__name__)

    # credentials, project and region are checked before any upload
    backend: JobsBackend = settings.jobs_backend(collection=mat.collection)
    failing_over = failover is not None and len(mat.candidates) > 1
    if preflight is not None and mat.service == "vertex":  # read-only checks, before any upload or create
        try:
            preflight(mat, settings)
        except UsageError as err:
            refusals = getattr(err, "refusals", None) or [""]
            if not failing_over or not all(r.startswith("preflight refused: quota ") for r in refusals):
                raise
    for staged in mat.staged:
        log.info("package %s -> %s", staged.local or "(already in Cloud Storage)", staged.uri)
    log.debug("job body: %s", json.dumps(mat.body))
    sent = stage(mat, settings, progress)
    if mat.image is not None:  # after staging, before the create: a failed build creates no job
        mat = mat.with_image(mat.image.ensure(settings))
    if failover is not None and failing_over:  # the one call site of failover; its loop lives in follow/
        started = failover(
            mat, settings, lambda files: stage(dataclasses.replace(mat, staged=files), settings)
        )
        return Submitted(
            job=started.job,
            job_id=mat.job_id,
            recovered=False,
            bytes_uploaded=sent + started.bytes_uploaded,
            settings=settings.in_region(started.region),
            warnings=mat.warnings,
            backend=started.backend,
            attempts=started.attempts,
        )
    result = backend.create(mat.body, mat.job_id)
    return Submitted(
        job=result.job,
        job_id=mat.job_id,
        recovered=result.recovered,
        bytes_uploaded=sent,
        settings=settings,
        warnings=mat.warnings,
        backend=backend,
    )
