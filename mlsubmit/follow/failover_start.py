"""Starting a Vertex AI job with failover, from a plan (docs/getting-jobs-to-start.md).

One Vertex AI body per candidate, translated like the job's (a candidate with its own ``stagingBucket`` gets its
packages staged there, at the same content addresses, before its first create), then the loop of
:mod:`mlsubmit.follow.failover` in the candidates' regions. ``training`` hands this function to the submit path
(``submit.submit(failover=...)``): its one call site.

Ctrl-C (or SIGTERM) while the loop waits is decided as when following a job (``follow.session``): the live
attempt's job keeps running and the message says how to follow it, or with ``--cancel-on-interrupt`` it is
cancelled; a job adopted from an earlier run is never cancelled. Either way the command exits 130.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, cast

from mlsubmit.errors import FollowInterrupted
from mlsubmit.follow.failover import Failover, Notify, Planned
from mlsubmit.follow.session import interrupted as follow_interrupted
from mlsubmit.job.values import api_duration_seconds
from mlsubmit.job.vocab import staging_prefix
from mlsubmit.services.backends import JobsBackend
from mlsubmit.services.staging import StagedFile, plan_staging
from mlsubmit.targets.failover import TI, Candidate, failover_block, overlaid
from mlsubmit.targets.translate import Kind, translate


class FailoverPlan(Protocol):
    """The parts of ``submit.Plan`` failover reads."""

    @property
    def job(self) -> dict[str, Any]: ...

    @property
    def target(self) -> Kind: ...

    candidates: list[Candidate]
    image_name: str | None  # --build-image: the image every candidate runs (pinned by digest once built)
    staged: list[StagedFile]
    sources: list[str | Path]
    layout: str


@dataclass
class Started:
    """What the failover settled on (``submit.Started``)."""

    job: dict[str, Any]
    region: str
    backend: Any
    attempts: list[dict[str, Any]]
    bytes_uploaded: int


def budget_of(body: dict[str, Any]) -> float:
    """``vertex.failover.budget`` in seconds (0: one round, no waiting)."""
    seconds = api_duration_seconds(failover_block(body).get("budget"))
    return float(seconds) if seconds is not None else 0.0


def planned_bodies(
    plan: FailoverPlan, *, executor_image_uri: str | None, digest_cache: Path | None
) -> tuple[list[Planned], dict[int, list[StagedFile]]]:
    """Each candidate's Vertex AI body, and the packages a candidate stages in its own bucket."""
    job_id = str(plan.job["jobId"])
    local = [s for s in plan.staged if s.local is not None]
    planned: list[Planned] = []
    own: dict[int, list[StagedFile]] = {}
    for candidate in plan.candidates:
        body = overlaid(plan.job, candidate)
        if candidate.staging_bucket and local:
            prefix = staging_prefix(candidate.staging_bucket, job_id, None)
            files = plan_staging(plan.sources, prefix, plan.layout, digest_cache=digest_cache)
            body[TI]["packageUris"] = [s.uri for s in files]
            own[candidate.number] = files
        # checked: the candidate passed the same rules as the job (submit.failover_candidates)
        done = translate(
            body,
            plan.target,
            executor_image_uri=executor_image_uri,
            checked=True,
            built_image=plan.image_name,
        )
        planned.append(Planned(candidate, done.body, done.collection))
    return planned, own


def quota_skip(settings: Any) -> Callable[[Planned], str | None]:
    """Preflight feeds failover: a candidate whose quota limit in its region is below the request is skipped
    before any create (``mlsubmit.preflight.quota_checks``; a limit that cannot be read skips nothing)."""
    from mlsubmit.preflight import quota_checks

    def skip(planned: Planned) -> str | None:
        checks = quota_checks(planned.body, settings, region=planned.candidate.region)
        low = [c for c in checks if c.status == "refused"]
        return "; ".join(f"{c.name}: {c.message}" for c in low) or None

    return skip


def start(
    plan: FailoverPlan,
    settings: Any,
    upload: Callable[[list[StagedFile]], int],
    *,
    executor_image_uri: str | None = None,
    max_queue_wait: float | None = None,
    skip: Callable[[Planned], str | None] | None = None,
    cancel_on_interrupt: bool = False,
    notify: Notify = lambda _m: None,
) -> Started:
    """Run the failover for ``plan`` with ``settings`` (``services.settings.Settings``); see the module doc."""
    from mlsubmit.sdist.digest import cache_dir_for

    planned, own = planned_bodies(
        plan, executor_image_uri=executor_image_uri, digest_cache=cache_dir_for(settings.env)
    )
    sent = 0
    staged: set[int] = set()

    def stage(p: Planned) -> None:
        nonlocal sent
        files = own.get(p.candidate.number)
        if files and p.candidate.number not in staged:
            sent += upload(files)
            staged.add(p.candidate.number)

    def jobs_for(region: str, collection: str) -> Any:
        return settings.in_region(region).jobs_backend(collection=collection)

    run = Failover(
        planned,
        str(plan.job["jobId"]),
        jobs_for=jobs_for,
        stage=stage,
        skip=skip or (lambda _p: None),
        max_queue_wait=max_queue_wait,
        budget=budget_of(plan.job),
        poll=settings.poll,
        notify=notify,
    )
    try:
        outcome = run.run()
    except KeyboardInterrupt:
        raise interrupted(run, settings, cancel=cancel_on_interrupt) from None
    return Started(
        job={**outcome.job, "attempts": [a.as_dict() for a in outcome.attempts]},
        region=outcome.planned.candidate.region,
        backend=outcome.jobs,
        attempts=[a.as_dict() for a in outcome.attempts],
        bytes_uploaded=sent,
    )


def interrupted(run: Failover, settings: Any, *, cancel: bool) -> FollowInterrupted:
    """The error to raise after Ctrl-C during the failover (module doc): what became of the live attempt's job,
    and how to go on."""
    rerun = "run the same command again: it adopts a live job of this submission instead of creating another."
    live, job_id = run.live, run.job_id
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
    said = follow_interrupted(cast(JobsBackend, live.jobs), job_id, cancel=cancel, hint_flags=hint)
    return said if cancel else FollowInterrupted(f"{said} To resume the failover, {rerun}")
