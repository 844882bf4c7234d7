"""``run(plan, settings)``: the submit sequence (docs/architecture.md): preflight (Vertex AI, read-only), stage
the packages, ensure the image (pinned by digest), create exactly once or fail over (:mod:`.failover`)."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from mlsubmit.errors import FollowInterrupted, NoCandidateLeft, PreflightRefused
from mlsubmit.services.backends import JobsBackend
from mlsubmit.services.settings import Settings
from mlsubmit.services.staging import StagedFile
from mlsubmit.submit.plan import Plan

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RunOptions:
    """Preflight on, the queue limit, whether Ctrl-C cancels what this run started, an upload progress."""

    preflight: bool = True
    max_queue_wait: float | None = None
    cancel_on_interrupt: bool = False
    progress: Any = None


@dataclass
class Submitted:
    """What `training` made: the job, the settings and backend to follow it; ``sent``: the body sent."""

    job: dict[str, Any]
    job_id: str
    recovered: bool
    settings: Settings
    warnings: Sequence[str] = ()
    backend: Any = None
    attempts: list[dict[str, Any]] = field(default_factory=list)  # failover (docs/getting-jobs-to-start.md)
    preflight: dict[str, Any] | None = None
    sent: dict[str, Any] | None = None


def upload(files: Sequence[StagedFile], settings: Settings, progress: Any = None) -> int:
    """Upload the local ones of ``files`` (skipping unchanged ones) through ``settings.storage()``; the bytes sent."""
    if not any(s.local is not None for s in files):
        return 0
    from mlsubmit.services.staging import chunk_size_from
    from mlsubmit.services.storage import upload as send

    chunk = chunk_size_from(settings.env)
    return send(
        list(files), settings.storage(), progress=progress, retry=settings.storage_retry, chunk_size=chunk
    ).bytes_sent


def realize(plan: Plan, settings: Settings, options: RunOptions = RunOptions()) -> tuple[Plan, int]:
    """Stage the packages, then ensure the image: the plan pinned by digest, and the bytes uploaded."""
    for staged in plan.staged:
        log.info("package %s -> %s", staged.local or "(already in Cloud Storage)", staged.uri)
    sent = upload(plan.staged, settings, options.progress)
    if plan.image is not None:
        from mlsubmit.images.ensure import ensure_job_image

        refs = ensure_job_image(plan.image, settings, cancel_on_interrupt=options.cancel_on_interrupt)
        plan = plan.pinned(refs)
    return plan, sent


def run(plan: Plan, settings: Settings, options: RunOptions = RunOptions()) -> Submitted:
    """Preflight, stage, ensure the image, then create the body exactly once, or fail over (module docstring).
    ``settings``: :meth:`Settings.for_job` of this plan; credentials, project and region are checked first."""
    backend: JobsBackend = settings.jobs_backend(collection=plan.collection)
    report = None
    try:
        if options.preflight and plan.service == "vertex":  # read-only checks, before any upload or create
            from mlsubmit.submit.preflight import check

            try:
                report = check(plan, settings)
            except PreflightRefused as err:  # a quota refusal skips that candidate instead (quota_skip)
                if not (plan.candidates and err.quota_only):
                    raise
                report = err.report
        plan, _sent = realize(plan, settings, options)
    except KeyboardInterrupt:  # nothing was sent that makes a job (a Cloud Build in flight says so itself)
        raise FollowInterrupted(
            f"interrupted before job {plan.job_id} was created: no job was created. Running the same command "
            "again starts over; packages already uploaded whole are not sent again."
        ) from None
    log.debug("job body: %s", json.dumps(plan.body))
    if plan.candidates:
        return fail_over(plan, settings, options, report)
    try:
        result = backend.create(plan.body, plan.job_id)
    except KeyboardInterrupt:
        where = f"region {settings.region}" if plan.service == "vertex" else f"project {backend.project}"
        raise FollowInterrupted(
            f"interrupted while creating job {plan.job_id} in {where}: the job may exist there. Check with "
            f"`mlsubmit jobs describe {plan.job_id}{settings.hint_flags}`; if it runs and should not, cancel it "
            f"with `mlsubmit jobs cancel {plan.job_id}{settings.hint_flags}`."
        ) from None
    return Submitted(
        job=result.job,
        job_id=plan.job_id,
        recovered=result.recovered,
        settings=settings,
        warnings=plan.warnings,
        backend=backend,
        preflight=report,
        sent=plan.body,
    )


def fail_over(
    plan: Plan, settings: Settings, options: RunOptions, report: dict[str, Any] | None
) -> Submitted:
    """Create the job with the first candidate that can start it (docs/getting-jobs-to-start.md)."""
    from mlsubmit.job.values import api_duration_seconds
    from mlsubmit.submit.candidates import Planned
    from mlsubmit.submit.failover import Failover
    from mlsubmit.submit.preflight import quota_skip
    from mlsubmit.targets.failover import failover_block

    staged: set[int] = set()

    def stage_own(p: Planned) -> None:
        if p.staged and p.candidate.number not in staged:
            upload(p.staged, settings)
            staged.add(p.candidate.number)

    def jobs_for(region: str, collection: str) -> Any:
        return settings.in_region(region).jobs_backend(collection=collection)

    loop = Failover(
        plan.candidates,
        plan.job_id,
        jobs_for=jobs_for,
        stage=stage_own,
        skip=(lambda p: quota_skip(settings, p)) if options.preflight else (lambda _p: None),
        max_queue_wait=options.max_queue_wait,
        budget=float(api_duration_seconds(failover_block(plan.job).get("budget")) or 0),  # 0: one round
        poll=settings.poll,
    )
    try:
        job, jobs, planned = loop.run()
    except NoCandidateLeft as err:
        err.preflight = report  # the outcome shows the preflight beside every attempt
        raise
    except KeyboardInterrupt:
        raise interrupted(loop, settings, cancel=options.cancel_on_interrupt) from None
    attempts = [a.as_dict() for a in loop.attempts]
    return Submitted(
        job={**job, "attempts": attempts},
        job_id=plan.job_id,
        recovered=False,
        settings=settings.in_region(planned.candidate.region),
        warnings=plan.warnings,
        backend=jobs,
        attempts=attempts,
        preflight=report,
        sent=planned.body,
    )


def interrupted(loop: Any, settings: Settings, *, cancel: bool) -> FollowInterrupted:
    """The error after Ctrl-C during the failover: what became of the live attempt's job, and how to go on."""
    from mlsubmit.services.poll import interrupted as follow_interrupted

    rerun = "run the same command again: it adopts a live job of this submission instead of creating another."
    live, job_id = loop.live, loop.job_id
    if loop.creating is not None:  # a create was sent and not answered yet: the job may exist
        candidate = loop.creating.candidate
        hint = settings.in_region(candidate.region).hint_flags
        left = " (not cancelled: its create had no answer yet)" if cancel else ""
        return FollowInterrupted(
            f"interrupted while creating job {job_id} in {candidate.region} (failover candidate "
            f"{candidate.number}): the job may exist there{left}. Check with `mlsubmit jobs describe {job_id}"
            f"{hint}`; cancel it with `mlsubmit jobs cancel {job_id}{hint}`, or to resume the failover, {rerun}"
        )
    if loop.cancelling is not None:  # it queued too long: the service is cancelling it, whatever --cancel-...
        going = loop.cancelling
        hint = settings.in_region(going.region).hint_flags
        return FollowInterrupted(
            f"interrupted; job {job_id} ({going.name}) in {going.region} queued too long and is being cancelled: "
            f"the service goes on cancelling it. Check with `mlsubmit jobs describe {job_id}{hint}`. To resume "
            f"the failover, {rerun}"
        )
    if live is None:
        return FollowInterrupted(
            f"interrupted during the failover while no attempt of job {job_id} was being watched. "
            f"To resume, {rerun}"
        )
    hint = settings.in_region(live.region).hint_flags
    if cancel and live.adopted:
        return FollowInterrupted(
            f"interrupted; job {job_id} ({live.name}) was made by an earlier run, so it was not cancelled and "
            f"keeps running. Cancel it with `mlsubmit jobs cancel {job_id}{hint}`."
        )
    said = follow_interrupted(live.jobs, job_id, cancel=cancel, hint_flags=hint)
    return said if cancel else FollowInterrupted(f"{said} To resume the failover, {rerun}")
