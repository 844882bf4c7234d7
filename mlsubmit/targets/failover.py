"""Capacity failover for Vertex AI jobs, the pure parts (docs/getting-jobs-to-start.md): the job, then each
``vertex.failover.candidates[i]``, then one per ``--fallback-regions`` region, each an overlay on ``trainingInput``.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from mlsubmit.errors import Problem
from mlsubmit.job.hints import format_path
from mlsubmit.job.jobfile import JobFile, job_schema
from mlsubmit.job.rules import TargetRules, check_job
from mlsubmit.job.vocab import as_dict, gcs_url_problem

TI = "trainingInput"
FALLBACK_FLAG = "--fallback-regions"
MAX_CANDIDATES = 16  # the schema's maxItems: each one costs a create, a watch and label lookups
REGION = re.compile(r"[a-z]+(-[a-z0-9]+)+")  # the schema's trainingInput.region
CANDIDATES = ("vertex", "failover", "candidates")
# in --job-dir / jobDir, --staging-bucket and --output-image-uri: each candidate's region (docs/getting-jobs-to-start.md)
REGION_FIELD = "{region}"


@dataclass(frozen=True)
class Candidate:
    """One way to run the job (0: as written): ``overlay`` on its trainingInput, its own staging bucket (None: the
    job's), its ``index`` in vertex.failover.candidates (None: the job, or a flag)."""

    number: int
    region: str
    overlay: Mapping[str, Any] = field(default_factory=dict)
    staging_bucket: str | None = None
    index: int | None = None

    @property
    def source(self) -> str:
        """Where the candidate was written: the job, an entry of the failover list, or the flag."""
        if self.number == 0:
            return "the job"
        return FALLBACK_FLAG if self.index is None else format_path((*CANDIDATES, self.index))


def deep_merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """``base`` with ``over`` laid on top: objects merge key by key, anything else is replaced."""
    out = copy.deepcopy(dict(base))
    for key, value in over.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def failover_block(body: Mapping[str, Any]) -> dict[str, Any]:
    """``vertex.failover`` of a merged job, or {}."""
    return dict(as_dict(as_dict(body.get("vertex")).get("failover")))


def candidates_of(
    body: Mapping[str, Any],
    fallback_regions: Sequence[str] = (),
    *,
    job_dir: str | None = None,
    staging_bucket: str | None = None,
) -> list[Candidate]:
    """The job itself, the file's candidates in order, then one per ``--fallback-regions`` region; a ``{region}``
    in ``job_dir``/``staging_bucket`` (the job's, as written) or in a candidate's own values becomes its region."""
    ti = as_dict(body.get(TI))
    region = str(ti.get("region") or "")
    out = [Candidate(0, region)]
    # the trainingInput keys a candidate may set: the schema's FailoverCandidate, less stagingBucket
    overlay_keys = set(job_schema()["$defs"]["FailoverCandidate"]["properties"]) - {"stagingBucket"}
    listed = failover_block(body).get("candidates")
    entries = [*enumerate(listed if isinstance(listed, list) else [])]
    for index, entry in [*entries, *((None, {"region": r}) for r in fallback_regions)]:
        if not isinstance(entry, Mapping):
            continue  # the schema reports it
        overlay = {k: v for k, v in entry.items() if k in overlay_keys}
        own = str(overlay.get("region") or region)
        written = overlay.get("jobDir", job_dir)
        if isinstance(written, str):
            overlay["jobDir"] = written.replace(REGION_FIELD, own)
        bucket = entry.get("stagingBucket") or staging_bucket
        bucket = str(bucket).replace(REGION_FIELD, own).rstrip("/") if bucket else None
        out.append(Candidate(len(out), own, overlay, bucket, index))
    return out


def overlaid(body: Mapping[str, Any], candidate: Candidate) -> dict[str, Any]:
    """The job body as ``candidate`` would run it (a new object; ``body`` is left alone)."""
    return deep_merge(body, {TI: candidate.overlay})


def _locate(candidate: Candidate, path: tuple[str | int, ...], message: str, file: JobFile | None) -> Problem:
    """The problem at ``path`` of the overlaid job, at the candidate's entry (at the value it set, if it did)."""
    text = f"failover candidate {candidate.number} ({candidate.region}): {message}"
    if candidate.index is None:
        return Problem(text, format_path(path), file=FALLBACK_FLAG)
    at: tuple[str | int, ...] = (*CANDIDATES, candidate.index)
    if len(path) > 1 and path[0] == TI and path[1] in candidate.overlay:
        at = (*at, *path[1:])
    return file.problem(at, text) if file is not None else Problem(text, format_path(at))


def _region_bound(
    body: Mapping[str, Any], candidate: Candidate, job_bucket: str | None
) -> Iterator[tuple[Any, str]]:
    """Values bound to the job's region that a candidate in another region would inherit (Vertex AI wants
    buckets in the job's region: https://github.com/googleapis/python-aiplatform/issues/885, checked
    2026-11-25; the KMS key, TensorBoard and experiments are checked by the Vertex rules themselves)."""
    ti = as_dict(body.get(TI))
    home = str(ti.get("region") or "")
    if not home or candidate.region == home:
        return
    where = f"runs in {candidate.region}, but"
    if job_bucket and not candidate.staging_bucket:
        yield (
            ("stagingBucket",),
            f"{where} it would stage in {job_bucket}, the job's bucket for {home}; give it its own stagingBucket "
            f"in {candidate.region}, or write {REGION_FIELD} in the job's (gs://BUCKET-{REGION_FIELD}) for each "
            "candidate to fill in its own",
        )
    if ti.get("jobDir") and "jobDir" not in candidate.overlay:
        yield (
            (TI, "jobDir"),
            f"{where} the job's jobDir {ti['jobDir']} is for {home}; give it its own jobDir in {candidate.region}, "
            f"or write {REGION_FIELD} in the job's (gs://BUCKET-{REGION_FIELD}/PATH) for each candidate to fill in "
            "its own",
        )
    vertex = as_dict(body.get("vertex"))
    if vertex.get("persistentResourceId"):
        yield (("vertex", "persistentResourceId"), f"{where} the persistent resource is in {home}")
    by_pool = as_dict(vertex.get("poolReservationAffinity")).values()
    for affinity in [vertex.get("reservationAffinity"), *by_pool]:
        for value in as_dict(affinity).get("values") or []:
            zone = re.search(r"/zones/([a-z]+-[a-z0-9]+)-[a-z]/", str(value))
            if zone and zone.group(1) != candidate.region:
                yield ("vertex", "reservationAffinity"), f"{where} reservation {value} is in {zone.group(1)}"


def candidate_problems(
    body: Mapping[str, Any],
    candidates: Sequence[Candidate],
    *,
    rules: TargetRules | None,
    file: JobFile | None = None,
    job_bucket: str | None = None,
) -> list[Problem]:
    """Every problem of every candidate of a job that passed the rules, located at the candidate's file line (or
    at ``--fallback-regions``). ``job_bucket``: the job's ``--staging-bucket``."""
    # the rules run once per distinct body: the job's own ran already, and found nothing
    seen: dict[str, list[tuple[Any, str]]] = {json.dumps(body, sort_keys=True, default=str): []}
    out: list[Problem] = []
    if len(candidates) > MAX_CANDIDATES + 1:
        message = f"at most {MAX_CANDIDATES} failover candidates (file and --fallback-regions together)"
        return [Problem(message, format_path(CANDIDATES), file=FALLBACK_FLAG)]
    tried = {candidates[0].region} if candidates else set()  # the regions --fallback-regions adds once each
    for candidate in candidates[1:]:
        if candidate.index is None and candidate.region in tried:
            # The same region twice in one round creates the same job twice there (docs/getting-jobs-to-start.md)
            message = f"region {candidate.region[:64]!r} is already tried in this round (the job's or listed before); list each region once"
            out.append(_locate(candidate, (TI, "region"), message, file))
            continue
        tried.add(candidate.region)
        if not REGION.fullmatch(candidate.region):
            shown = candidate.region[:64] or "(none)"
            message = f"region {shown!r} is not a Vertex AI region name such as europe-west4"
            out.append(_locate(candidate, (TI, "region"), message, file))
            continue
        candidate_body = overlaid(body, candidate)
        key = json.dumps(candidate_body, sort_keys=True, default=str)
        if key not in seen:
            seen[key] = check_job(candidate_body, target_rules=rules)
        out += [_locate(candidate, tuple(path), message, file) for path, message in seen[key]]
        for path, message in _region_bound(body, candidate, job_bucket):
            if path == ("stagingBucket",) and candidate.index is not None:
                path = (TI, "stagingBucket")  # located at the candidate entry
            out.append(_locate(candidate, path, message, file))
        if bucket := candidate.staging_bucket:
            problem = gcs_url_problem(bucket, "stagingBucket")
            if problem is None and bucket[len("gs://") :].strip("/").count("/"):
                problem = "stagingBucket takes a bucket only (gs://BUCKET)"
            if problem:
                out.append(_locate(candidate, (TI, "stagingBucket"), problem, file))
    return out


def round_delay(round_: int, unit: float) -> float:
    """The wait after round ``round_`` (1 = the first) with no candidate left, for a random ``unit`` in [0, 1):
    60 s x 1.6**(round_ - 1) capped at 300 s, times a jitter of 1 +- 0.4 (0.5: none). The numbers are SkyPilot's
    managed-job backoff between failover rounds (https://github.com/skypilot-org/skypilot, checked 2026-11-24)."""
    base = min(300.0, 60.0 * 1.6 ** max(0, round_ - 1))
    return float(base * (1.0 + 0.4 * (2.0 * unit - 1.0)))
