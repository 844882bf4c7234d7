"""The failover candidates of a plan (docs/getting-jobs-to-start.md), each checked and translated once in ``plan``
(a dry run prints every body the loop may send); one with its own bucket stages the job's packages there."""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mlsubmit.errors import InvalidJobError, Problem, UsageError
from mlsubmit.job.jobfile import JobFile, check_job_file
from mlsubmit.job.validate import PreparedJob, TrainingRequest
from mlsubmit.job.vocab import as_dict, staging_prefix
from mlsubmit.services.staging import StagedFile, plan_staging
from mlsubmit.targets.translate import Kind, Translation

if TYPE_CHECKING:
    from mlsubmit.sdist.digest import Local
    from mlsubmit.targets.failover import Candidate  # the failover tables load only for Vertex AI jobs

VERTEX_KINDS = ("vertex", "customjob", "hptuningjob")


@dataclass(frozen=True)
class Planned:
    """A candidate ready to send: its body, its collection, and the packages it stages in its own bucket."""

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


def with_region(
    training: TrainingRequest, target: Kind
) -> tuple[TrainingRequest, JobFile | None, dict[str, str]]:
    """``{region}`` in ``--job-dir``/``jobDir`` and ``--staging-bucket`` filled in with the job's region: the request
    to prepare, its config file read once (None: it has problems, for ``prepare``), and the values as written."""
    file, problems = check_job_file(training.config) if training.config else (None, [])
    if problems:
        return training, None, {}
    given = dict(training.flags.given)
    ti = as_dict(file.data.get("trainingInput")) if file is not None else {}
    from_file = not given.get("job_dir") and isinstance(ti.get("jobDir"), str)
    values = {"jobDir": given.get("job_dir") or ti.get("jobDir"), "stagingBucket": training.staging_bucket}
    written: dict[str, str] = {k: v for k, v in values.items() if isinstance(v, str) and {"{", "}"} & set(v)}
    if not written:
        return training, file, {}
    from mlsubmit.job.merge import region_of
    from mlsubmit.targets.failover import REGION_FIELD

    region, _ = region_of(given, ti, training.env)  # as the merge decides it
    found = []
    for key, value in written.items():
        if {"{", "}"} & set(value.replace(REGION_FIELD, "")):
            why = f"{REGION_FIELD} is the only placeholder it may hold (each failover candidate's region)"
        elif target not in VERTEX_KINDS:
            why = (
                f"{REGION_FIELD} is filled in with each failover candidate's region, and only Vertex AI jobs "
                "(--target vertex) fail over: write the region itself"
            )
        elif not region:
            why = f"{REGION_FIELD} stands for the job's region: pass --region, set it in the file, or set CLOUDSDK_COMPUTE_REGION"
        else:
            continue
        shown = value if value.isprintable() and len(value) <= 300 else repr(value[:80])  # one line, bounded
        text = f"{key} {shown}: {why}"
        if key == "jobDir" and from_file and file is not None:
            found.append(file.problem(("trainingInput", "jobDir"), text))
        else:
            found.append(Problem(text, file="--job-dir" if key == "jobDir" else "--staging-bucket"))
    if found:
        raise InvalidJobError(found)
    if "jobDir" in written:  # filled in where it was written: the file's trainingInput, else the flag
        place, key = (ti, "jobDir") if from_file else (given, "job_dir")
        place[key] = written["jobDir"].replace(REGION_FIELD, region)
    staging = training.staging_bucket
    training = dataclasses.replace(
        training,
        flags=dataclasses.replace(training.flags, given=given),
        staging_bucket=staging.replace(REGION_FIELD, region) if staging else None,
    )
    return training, file, written


def failover_candidates(
    request: TrainingRequest, prepared: PreparedJob, target: Kind, written: Mapping[str, str]
) -> list[Candidate]:
    """The job and its failover candidates (Vertex AI only), each merged and checked like the job (InvalidJobError);
    none without failover. ``written``: the job's values with ``{region}`` in them (:func:`with_region`)."""
    given = request.flags.given
    if target not in VERTEX_KINDS:
        if given.get("fallback_regions") or given.get("max_queue_wait") is not None:
            raise UsageError(
                "--fallback-regions and --max-queue-wait are for Vertex AI jobs (--target vertex)"
            )
        return []
    from mlsubmit.targets.failover import candidate_problems, candidates_of

    candidates = candidates_of(
        prepared.body,
        list(given.get("fallback_regions") or []),
        job_dir=written.get("jobDir"),
        staging_bucket=written.get("stagingBucket"),
    )
    if len(candidates) > 1:
        into_image = as_dict(prepared.body.get("vertex")).get("buildImage") is True
        problems = candidate_problems(
            prepared.body,
            candidates,
            rules=request.target_rules,
            file=prepared.file,
            # a job that builds its image stages no package: the job's bucket binds no candidate
            job_bucket=None if into_image else request.staging_bucket,
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


def staged_files(training: TrainingRequest, sdist: Local | None, prefix: str | None) -> list[StagedFile]:
    """The packages staged under ``prefix``, in gcloud's order: gs:// ones, local ``--packages``, the build."""
    files: list[str | Local] = [
        *training.remote_packages,
        *training.local_packages,
        *([sdist] if sdist else []),
    ]
    cache = None
    if len(files) > len(training.remote_packages):  # something local to hash: its digests are cached
        from mlsubmit.sdist.digest import cache_dir_for

        cache = cache_dir_for(training.env)
    return plan_staging(files, prefix, training.staging_layout, digest_cache=cache)


def planned_candidates(
    prepared: PreparedJob,
    translation: Translation,
    candidates: list[Candidate],
    training: TrainingRequest,
    translated: Callable[[dict[str, Any], str], Translation],
    *,
    staged: list[StagedFile],
    sdist: Local | None,
) -> list[Planned]:
    """Each candidate's body, translated once in its region, and its own uploads (own bucket or jobDir)."""
    if len(candidates) < 2:
        return []
    from mlsubmit.targets.failover import TI, overlaid

    out = [Planned(candidates[0], translation.body, translation.collection)]
    for candidate in candidates[1:]:
        body = overlaid(prepared.body, candidate)
        own: list[StagedFile] = []
        job_dir = None if training.staging_bucket else body[TI].get("jobDir")
        prefix = staging_prefix(candidate.staging_bucket, str(prepared.body["jobId"]), job_dir)
        if any(s.local is not None for s in staged) and prefix and prefix != prepared.staging_prefix:
            own = staged_files(training, sdist, prefix)
            body[TI]["packageUris"] = [s.uri for s in own]
        done = translated(body, candidate.region)
        out.append(Planned(candidate, done.body, done.collection, tuple(own)))
    return out
