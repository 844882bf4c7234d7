"""``plan(request) -> Plan``: the whole plan of a submit, offline (docs/architecture.md). Validate, build and
translate once: the job's body and every failover candidate's, the image (planned before the uploads), the uploads
per bucket, the cost. ``--dry-run`` prints it; ``submit.run`` sends exactly these bodies."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mlsubmit.job.validate import PreparedJob, TrainingRequest, prepare
from mlsubmit.services.staging import StagedFile
from mlsubmit.submit.candidates import failover_candidates, planned_candidates, staged_files, with_region
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
    """What to plan: the training request, the target, translation and image options, a token file."""

    training: TrainingRequest
    target: Kind = "ml"
    executor_image_uri: str | None = None
    namespace: str | None = None
    image: ImageOptions | None = None
    token_file: str | None = None


@dataclass
class Plan:
    """A validated job translated for its target: the body to send (or print), its uploads, failover candidates
    (the job's first), image, and cost (docs/cost.md; None for a Kubernetes job)."""

    prepared: PreparedJob
    target: Kind
    translation: Translation
    staged: list[StagedFile] = field(default_factory=list)
    candidates: list[Planned] = field(default_factory=list)
    image: JobImage | None = None
    walked: WalkedPackage | None = None  # what the sdist build read: the trainer checkup reads none again
    sdist: Local | None = None  # Path, or held in memory
    cost: Estimate | None = None
    budget: float | None = None  # the config's maxCost (a --max-cost flag wins over it)
    candidate_costs: list[tuple[Candidate, Estimate]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # candidates skipped for passing the budget, said once

    @property
    def job(self) -> dict[str, Any]:
        """The merged, validated ml v1 Job (the source of every translation)."""
        return self.prepared.body

    @property
    def body(self) -> dict[str, Any]:
        """The body for the target: what a dry run prints, an export writes and a submit sends."""
        return self.translation.body

    @property
    def warnings(self) -> tuple[str, ...]:
        """What the target cannot express and the candidates the budget skips, said before the body."""
        return self.translation.warnings + tuple(self.notes)

    @property
    def collection(self) -> str:
        """The collection the body is created in (``jobs``, ``customJobs``, ``hyperparameterTuningJobs``)."""
        return self.translation.collection

    @property
    def job_id(self) -> str:
        return str(self.job["jobId"])

    @property
    def service(self) -> str:
        """The service the plan is created on: ``ml`` or ``vertex`` (the Settings' target)."""
        return self.translation.service

    @property
    def region(self) -> str | None:
        """The job's region as merged: ``--region``, else the config file, else CLOUDSDK_COMPUTE_REGION."""
        return str(self.job["trainingInput"].get("region") or "") or None

    @property
    def uploads(self) -> list[StagedFile]:
        """The job's own local packages to upload (a candidate's own: :attr:`Planned.staged`)."""
        return [s for s in self.staged if s.local is not None]

    def printed(self) -> dict[str, Any]:
        """What ``--dry-run`` prints: the body, or with an image or candidates the whole plan."""
        if self.image is None and not self.candidates:
            return self.body
        uploads: dict[str, dict[str, None]] = {}
        for staged in [*self.uploads, *(s for c in self.candidates for s in c.staged if s.local is not None)]:
            uploads.setdefault(staged.uri[len("gs://") :].split("/", 1)[0], {})[staged.uri] = None
        return {
            "job": self.body,
            "image": self.image.view() if self.image is not None else None,  # while its context exists
            "candidates": [c.view() for c in self.candidates],
            "uploads": {bucket: list(uris) for bucket, uris in uploads.items()},
        }

    def pinned(self, refs: Mapping[str, str]) -> Plan:
        """The plan whose bodies run each built image by digest (``refs``: tag -> digest ref)."""
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
    """Check the request once (by its target's rules), build the sdist, plan the image before the uploads (into
    ``workdir``, or the folder it makes when needed), translate the job and each candidate once; nothing uploaded."""
    training, target = request.training, request.target
    folder = workdir if callable(workdir) else lambda: workdir
    rules = training.target_rules if training.target_rules is not None else rules_for(target)
    training, file, written = with_region(dataclasses.replace(training, target_rules=rules), target)
    prepared = prepare(training, file=file)  # every config/flag problem, before the (slower) build
    max_cost = prepared.body.pop("maxCost", None)  # the config's budget (docs/cost.md): never sent
    given = training.flags.given
    candidates = failover_candidates(training, prepared, target, written)  # none without failover
    body = prepared.body
    builds = False
    if request.image is not None and target != "ml":
        from mlsubmit.images.planner import wants_image

        builds = wants_image(body, request.image)
    sdist: Local | None = None
    walked: WalkedPackage | None = None
    if training.package_path:
        from mlsubmit.sdist.build import build_package  # only when there is a build

        sdist, walked = build_package(Path(training.package_path), folder)
    image = None
    staged: list[StagedFile] = []
    region = str(body["trainingInput"].get("region") or "")
    if builds:  # the packages go into the image: nothing of them is staged
        from mlsubmit.images.planner import plan_job_image
        from mlsubmit.services.connection import project_of
        from mlsubmit.targets.failover import overlaid

        assert request.image is not None
        # the project as Settings resolves it (ADC included unless a token is given), asked once, to name it
        project = functools.cache(
            lambda: project_of(training.project, training.env, token_file=request.token_file, required=False)
        )
        made = folder()
        image = plan_job_image(
            body,
            request.image,
            sdist=sdist.write(made) if sdist is not None and not isinstance(sdist, Path) else sdist,
            packages=[Path(p) for p in training.local_packages],
            remote_packages=training.remote_packages,
            regions=[c.region for c in candidates] or [region],
            candidates=[overlaid(body, c) for c in candidates[1:]],
            project=project,
            staging_prefix=prepared.staging_prefix,
            workdir=made,
        )
    elif training.has_package_flags:
        for package in training.local_packages:  # the user's own build is not rewritten: refused, not trimmed
            from mlsubmit.sdist.never_ship import refuse_archive

            refuse_archive(Path(package))
        staged = staged_files(training, sdist, prepared.staging_prefix)
        body["trainingInput"]["packageUris"] = [s.uri for s in staged]

    def translated(job: dict[str, Any], region: str) -> Translation:
        """``job`` for the target (a candidate passed the same rules as the job: failover_candidates)."""
        return translate(
            job,
            target,
            executor_image_uri=request.executor_image_uri,
            namespace=request.namespace,
            checked=rules is not None,
            built_image=image.tagged_for(region) if image is not None else None,
        )

    translation = translated(body, region)
    from mlsubmit.targets.budget import plan_estimate, priced_candidates  # --max-cost refuses before uploads

    candidates, candidate_costs, skipped = priced_candidates(
        body,
        candidates,
        translate_body=lambda job: translated(job, region).body,
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
    planned = planned_candidates(
        prepared, translation, candidates, training, translated, staged=staged, sdist=sdist
    )
    return Plan(
        prepared,
        target,
        translation,
        staged,
        planned,
        image,
        walked,
        sdist,
        cost,
        budget=max_cost,
        candidate_costs=candidate_costs,
        notes=skipped,
    )


@contextmanager
def planned(request: PlanRequest) -> Iterator[Plan]:
    """:func:`plan`, with a temporary folder made only when needed, living while the plan is used."""
    with ExitStack() as stack:

        @functools.cache  # one folder, made on first need
        def folder() -> Path:
            from mlsubmit.proc.processes import temporary_directory

            return Path(stack.enter_context(temporary_directory("mlsubmit-")))

        yield plan(request, folder)
