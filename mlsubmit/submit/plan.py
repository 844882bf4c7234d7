"""``plan(request) -> Plan``: the whole plan of a submit, offline (docs/architecture.md).

Validate once, build and hash once, translate once: the job's body and every failover candidate's body, the image
``--build-image`` makes (decided before the upload list: nothing that goes into an image is staged), the uploads
per bucket (each candidate stages only what its own body names), and the project as ``Settings`` resolves it.
``--dry-run`` prints all of it; ``submit.run`` sends exactly these bodies (the built image pinned by digest).

Everything that can be checked locally is checked before the first network call, so a bad job uploads nothing
and creates nothing. Every command that reads a job (``training``, ``export``, ``migrate``, ``preflight``) goes
through :func:`plan`.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mlsubmit.job.validate import PreparedJob, TrainingRequest, prepare
from mlsubmit.services.staging import StagedFile, plan_staging
from mlsubmit.targets.translate import Kind, Translation, rules_for, translate

if TYPE_CHECKING:
    from mlsubmit.images.planner import JobImage
    from mlsubmit.job.imageref import ImageOptions
    from mlsubmit.sdist.build import WalkedPackage
    from mlsubmit.sdist.digest import Local
    from mlsubmit.submit.candidates import Planned
    from mlsubmit.targets.cost import Estimate
    from mlsubmit.targets.failover import Candidate


@dataclass(frozen=True)
class PlanRequest:
    """What to plan: the parsed training request, the target, and the options only a translation or an image
    needs. ``image`` None: the command takes no image options (``--build-image`` is then refused by the rules).
    ``token_file``: ``--access-token-file`` (a token beats Application Default Credentials for the project)."""

    training: TrainingRequest
    target: Kind = "ml"
    executor_image_uri: str | None = None
    namespace: str | None = None
    image: ImageOptions | None = None
    token_file: str | None = None


@dataclass
class Plan:
    """A validated job whose packages are built and hashed, translated for its target: the exact body to send
    (or print), where it goes, what to upload for it, its failover candidates and its image."""

    prepared: PreparedJob
    target: Kind = "ml"
    translation: Translation | None = None
    staged: list[StagedFile] = field(default_factory=list)
    # failover (docs/getting-jobs-to-start.md): every candidate's body, the job's first; empty without failover
    candidates: list[Planned] = field(default_factory=list)
    image: JobImage | None = None  # --build-image: made after staging, before the create
    # --package-path: the files the sdist build walked and read, for the trainer checkup to read none again
    walked: WalkedPackage | None = None
    sdist: Local | None = (
        None  # --package-path: the sdist built from it (what installing the package installs)
    )
    # what the job costs (docs/cost.md; targets.cost): None for a Kubernetes job, which has no price
    cost: Estimate | None = None
    budget: float | None = None  # the config's maxCost (a --max-cost flag wins over it)
    candidate_costs: list[tuple[Candidate, Estimate]] = field(default_factory=list)  # each failover candidate
    notes: list[str] = field(default_factory=list)  # candidates skipped for passing the budget, said once

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
        """What the target cannot express (and the candidates the budget skips), to show before the body is
        printed or sent."""
        return (self.translation.warnings if self.translation is not None else ()) + tuple(self.notes)

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
        """The job's own local packages to upload (a candidate's own bucket: :attr:`Planned.staged`)."""
        return [s for s in self.staged if s.local is not None]

    def uploads_by_bucket(self) -> dict[str, list[str]]:
        """Every package upload of the submit (the job's, then each candidate's own), by bucket."""
        out: dict[str, dict[str, None]] = {}
        for staged in [*self.uploads, *(s for c in self.candidates for s in c.staged if s.local is not None)]:
            out.setdefault(staged.uri[len("gs://") :].split("/", 1)[0], {})[staged.uri] = None
        return {bucket: list(uris) for bucket, uris in out.items()}

    def printed(self) -> dict[str, Any]:
        """What ``--dry-run`` prints: the body (as gcloud prints it), or with an image or failover candidates
        the whole plan, ``{job, image, candidates, uploads}`` (docs/containers.md, docs/getting-jobs-to-start.md)."""
        if self.image is None and not self.candidates:
            return self.body
        return {
            "job": self.body,
            "image": self.image.view() if self.image is not None else None,  # while its context exists
            "candidates": [c.view() for c in self.candidates],
            "uploads": self.uploads_by_bucket(),
        }

    def pinned(self, refs: Mapping[str, str]) -> Plan:
        """The plan whose bodies run each built image by digest (``refs``: ``NAME:TAG`` -> ``NAME@sha256:...``)
        instead of its content tag; nothing is translated again."""
        translation = None
        if self.translation is not None:
            translation = dataclasses.replace(self.translation, body=_pin(self.translation.body, refs))
        candidates = [dataclasses.replace(c, body=_pin(c.body, refs)) for c in self.candidates]
        return dataclasses.replace(self, translation=translation, candidates=candidates)


def _pin(value: Any, refs: Mapping[str, str]) -> Any:
    if isinstance(value, str):
        return refs.get(value, value)
    if isinstance(value, dict):
        return {k: _pin(v, refs) for k, v in value.items()}
    if isinstance(value, list):
        return [_pin(v, refs) for v in value]
    return value


def plan(request: PlanRequest, workdir: Path | Callable[[], Path]) -> Plan:
    """Check the request once (by the rules of its target), build the trainer sdist (held in memory), plan the
    image (its context and the sdist written into ``workdir``, a folder or what makes one when an image needs
    it) before the uploads, and translate the job and each failover candidate once. Local only: nothing is
    uploaded.

    Packages go in gcloud's order: gs:// ones, local --packages, the build. The rules ran on placeholder URIs of
    the same count and prefix, so the final URIs need no second pass.
    """
    training, target = request.training, request.target
    rules = training.target_rules if training.target_rules is not None else rules_for(target)
    training = dataclasses.replace(training, target_rules=rules)
    prepared = prepare(training)  # fails fast on every config/flag problem, before the (slower) build
    max_cost = prepared.body.pop("maxCost", None)  # the config's budget (docs/cost.md): never sent
    given = training.flags.given
    candidates = []
    if target != "ml" or given.get("fallback_regions") or given.get("max_queue_wait") is not None:
        from mlsubmit.submit.candidates import failover_candidates  # failover: Vertex AI jobs only

        candidates = failover_candidates(training, prepared, target)
    body = prepared.body
    builds = False
    if request.image is not None and target != "ml":
        from mlsubmit.images.planner import check_options, wants_image

        check_options(body, request.image)
        builds = wants_image(body)
    sdist: Local | None = None
    walked: WalkedPackage | None = None
    if training.package_path:
        from mlsubmit.sdist.build import build_package  # tarfile: only when there is a build

        sdist, walked = build_package(Path(training.package_path), _folder(workdir))
    image = None
    staged: list[StagedFile] = []
    region = str(body["trainingInput"].get("region") or "")
    if builds:  # the packages go into the image: nothing of them is staged
        from mlsubmit.images.planner import plan_job_image
        from mlsubmit.services.connection import project_of
        from mlsubmit.targets.failover import overlaid

        assert request.image is not None
        folder = _folder(workdir)()
        image = plan_job_image(
            body,
            request.image,
            sdist=sdist.write(folder) if sdist is not None and not isinstance(sdist, Path) else sdist,
            packages=[Path(p) for p in training.local_packages],
            remote_packages=training.remote_packages,
            regions=[c.region for c in candidates] or [region],
            candidates=[overlaid(body, c) for c in candidates[1:]],
            # the project as Settings resolves it (ADC included unless a token is given), asked once, to name it
            project=functools.cache(
                lambda: project_of(
                    training.project, training.env, token_file=request.token_file, required=False
                )
            ),
            staging_prefix=prepared.staging_prefix,
            workdir=folder,
        )
    elif training.has_package_flags:
        for package in training.local_packages:  # the user's own build is not rewritten: refused, not trimmed
            from mlsubmit.sdist.never_ship import refuse_archive

            refuse_archive(Path(package))
        files: list[str | Local] = [*training.remote_packages, *training.local_packages]
        files += [sdist] if sdist is not None else []
        cache = None
        if len(files) > len(training.remote_packages):  # something local to hash: its digests are cached
            from mlsubmit.sdist.digest import cache_dir_for

            cache = cache_dir_for(training.env)
        staged = plan_staging(files, prepared.staging_prefix, training.staging_layout, digest_cache=cache)
        body["trainingInput"]["packageUris"] = [s.uri for s in staged]
    translation = translate(
        body,
        target,
        executor_image_uri=request.executor_image_uri,
        namespace=request.namespace,
        checked=rules is not None,
        built_image=image.tagged_for(region) if image is not None else None,
    )
    from mlsubmit.targets.budget import (  # --max-cost refuses here, before uploads
        plan_estimate,
        priced_candidates,
    )

    built_image = image.tagged_for(region) if image is not None else None
    candidates, candidate_costs, skipped = priced_candidates(
        body,
        candidates,
        translate_body=lambda job: (
            translate(
                job,
                target,
                executor_image_uri=request.executor_image_uri,
                checked=True,
                built_image=built_image,
            ).body
        ),
        given=given,
        env=training.env,
        max_cost=max_cost,
    )
    cost = plan_estimate(
        translation.body,
        target=target,
        region=region or None,
        given=given,
        env=training.env,
        max_cost=max_cost,
        file=prepared.file,
    )
    planned = []
    if candidates:
        from mlsubmit.submit.candidates import planned_candidates

        planned = planned_candidates(
            prepared,
            translation,
            candidates,
            target,
            training,
            executor_image_uri=request.executor_image_uri,
            image=image,
            staged=staged,
            sdist=sdist,
        )
    return Plan(
        prepared,
        target,
        translation,
        staged,
        planned,
        image,
        walked=walked,
        sdist=sdist,
        cost=cost,
        budget=max_cost,
        candidate_costs=candidate_costs,
        notes=skipped,
    )


def _folder(workdir: Path | Callable[[], Path]) -> Callable[[], Path]:
    return workdir if callable(workdir) else lambda: workdir


@contextmanager
def planned(request: PlanRequest) -> Iterator[Plan]:
    """:func:`plan`, with a temporary folder made only for an image's context or a backend's sdist, living while
    the plan is used (they are uploaded from there); otherwise no folder and no janitor process."""
    with ExitStack() as stack:

        @functools.cache  # one folder, made on first need
        def folder() -> Path:
            from mlsubmit.proc.processes import temporary_directory

            return Path(stack.enter_context(temporary_directory("mlsubmit-")))

        yield plan(request, folder)


def dry_run(request: PlanRequest) -> tuple[Plan, dict[str, Any]]:
    """The plan `training` would send (packages built and hashed locally, nothing uploaded) and what a dry run
    prints of it (:meth:`Plan.printed`, made while the image's context exists)."""
    with planned(request) as done:
        return done, done.printed()
