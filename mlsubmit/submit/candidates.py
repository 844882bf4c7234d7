"""The failover candidates of a plan (docs/getting-jobs-to-start.md), each checked and translated once.

Candidate 0 is the job itself; each other candidate is the job overlaid with its own values
(``targets.failover``), checked by the same rules as the job, then translated here, in ``plan``, never in the
failover loop: a dry run prints every body the loop may send. A candidate with its own ``stagingBucket`` stages
the job's packages there, at the same content addresses, and its body names them; a job that builds its image
stages no package anywhere, and each candidate runs the image of its own region's registry.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mlsubmit.errors import UsageError
from mlsubmit.job.validate import PreparedJob, TrainingRequest
from mlsubmit.job.vocab import staging_prefix
from mlsubmit.services.staging import StagedFile, plan_staging
from mlsubmit.targets.translate import Kind, Translation, translate

if TYPE_CHECKING:
    from mlsubmit.images.planner import JobImage
    from mlsubmit.sdist.digest import Local
    from mlsubmit.targets.failover import Candidate  # the failover tables load only for Vertex AI jobs

VERTEX_KINDS = ("vertex", "customjob", "hptuningjob")


@dataclass(frozen=True)
class Planned:
    """A candidate ready to send: its body, the collection it goes to, and the packages it stages in its own
    bucket (none: the job's staging, or an image)."""

    candidate: Candidate
    body: dict[str, Any]
    collection: str = "customJobs"
    staged: tuple[StagedFile, ...] = ()

    @property
    def flex_start(self) -> bool:
        spec = self.body.get("jobSpec") or self.body.get("trialJobSpec") or {}
        return (spec.get("scheduling") or {}).get("strategy") == "FLEX_START"

    def view(self) -> dict[str, Any]:
        """The candidate as ``--dry-run`` shows it."""
        c = self.candidate
        out: dict[str, Any] = {"candidate": c.number, "region": c.region, "source": c.source}
        if self.staged:
            out["uploads"] = [s.uri for s in self.staged if s.local is not None]
        return {**out, "body": copy.deepcopy(self.body)}  # its own object: YAML shows it, not an alias


def failover_candidates(request: TrainingRequest, prepared: PreparedJob, target: Kind) -> list[Candidate]:
    """The job and its failover candidates, each merged and checked like the job, region-bound values included
    (InvalidJobError, exit 2); none without failover. Vertex AI jobs only."""
    given = request.flags.given
    if target not in VERTEX_KINDS:
        if given.get("fallback_regions") or given.get("max_queue_wait") is not None:
            raise UsageError(
                "--fallback-regions and --max-queue-wait are for Vertex AI jobs (--target vertex)"
            )
        return []
    from mlsubmit.errors import InvalidJobError
    from mlsubmit.targets.failover import candidate_problems, candidates_of

    candidates = candidates_of(prepared.body, list(given.get("fallback_regions") or []))
    if len(candidates) > 1:
        vertex = prepared.body.get("vertex")
        into_image = isinstance(vertex, dict) and vertex.get("buildImage") is True
        problems = candidate_problems(
            prepared.body,
            candidates,
            rules=request.target_rules,
            file=prepared.file,
            # a job that builds its image stages no package: the job's bucket binds no candidate
            job_bucket=None if into_image else request.staging_bucket,
            job_problems=(),  # prepare() raised on any problem of the job's own
        )
        if problems:
            raise InvalidJobError(problems)
        return candidates
    if given.get("max_queue_wait") is not None:
        raise UsageError(
            "--max-queue-wait moves a queued job to the next failover candidate: give some with "
            "--fallback-regions or vertex.failover.candidates (docs/getting-jobs-to-start.md)"
        )
    return []


def planned_candidates(
    prepared: PreparedJob,
    translation: Translation,
    candidates: list[Candidate],
    target: Kind,
    training: TrainingRequest,
    *,
    executor_image_uri: str | None,
    image: JobImage | None,
    staged: list[StagedFile],
    sdist: Local | None,
) -> list[Planned]:
    """Each candidate's body, translated once (the job's is ``translation``), and its own uploads."""
    if len(candidates) < 2:
        return []
    from mlsubmit.targets.failover import TI, overlaid

    local = [s for s in staged if s.local is not None]
    sources: list[str | Local] = [*training.remote_packages, *training.local_packages]
    sources += [sdist] if sdist is not None else []
    out = [Planned(candidates[0], translation.body, translation.collection)]
    for candidate in candidates[1:]:
        body = overlaid(prepared.body, candidate)
        own: list[StagedFile] = []
        if candidate.staging_bucket and local:
            from mlsubmit.sdist.digest import cache_dir_for

            prefix = staging_prefix(candidate.staging_bucket, str(prepared.body["jobId"]), None)
            cache = cache_dir_for(training.env)
            own = plan_staging(sources, prefix, training.staging_layout, digest_cache=cache)
            body[TI]["packageUris"] = [s.uri for s in own]
        # checked: the candidate passed the same rules as the job (failover_candidates)
        done = translate(
            body,
            target,
            executor_image_uri=executor_image_uri,
            checked=True,
            built_image=image.tagged_for(candidate.region) if image is not None else None,
        )
        out.append(Planned(candidate, done.body, done.collection, tuple(own)))
    return out
