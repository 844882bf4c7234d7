"""The failover loop (docs/getting-jobs-to-start.md): each candidate in turn is skipped (quota too low) or created
once and watched; quota, stockout or QUEUED too long moves on (``services.classifier``), rounds repeat within the
budget. Exactly once: a live job of ours in any candidate's region is adopted first; after a create the oldest wins."""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from dataclasses import KW_ONLY, dataclass
from typing import Any

from mlsubmit import console
from mlsubmit.errors import ApiError, NoCandidateLeft, ServiceAnswerError
from mlsubmit.job.values import format_duration
from mlsubmit.job.vocab import as_dict
from mlsubmit.services.classifier import classify
from mlsubmit.services.compare import is_same_job
from mlsubmit.services.ml import id_taken
from mlsubmit.services.retry import PollPolicy
from mlsubmit.services.vertex import COLLECTION_SCHEMAS, VertexJobs, age_key, is_live, ml_state
from mlsubmit.submit.candidates import Planned
from mlsubmit.targets.failover import round_delay

ENDED = frozenset({"SUCCEEDED", "FAILED", "CANCELLED"})
CANCEL_WAIT = 300.0  # seconds a cancelled attempt may take to end before the next candidate goes ahead
ADOPTED = "adopted: made by an earlier run of this submission"


@dataclass
class Attempt:
    """One try: which candidate, what became of it and why, when (seconds since the submit began)."""

    candidate: int
    region: str
    outcome: str  # quota, stockout, queued too long, running, succeeded, failed, refused, skipped, adopted
    reason: str = ""
    started: float = 0.0
    ended: float | None = None
    job: str | None = None  # the Vertex AI resource name, when a job was made

    def as_dict(self) -> dict[str, Any]:
        """The attempt as `--format json` shows it."""
        out: dict[str, Any] = {"candidate": self.candidate, "region": self.region, "outcome": self.outcome}
        out |= {key: value for key, value in (("reason", self.reason), ("job", self.job)) if value}
        out["startedAfter"] = format_duration(self.started)
        return out | ({"endedAfter": format_duration(self.ended)} if self.ended is not None else {})


@dataclass(frozen=True)
class Live:
    """The attempt whose job has not ended, as Ctrl-C finds it; ``adopted``: made by an earlier run (never cancelled)."""

    jobs: VertexJobs
    region: str
    name: str
    adopted: bool = False


# the job the loop settled on (as ``jobs`` commands show it), its region's jobs, and its candidate
Outcome = tuple[dict[str, Any], VertexJobs, Planned]


@dataclass
class Failover:
    """One submission's failover. ``jobs_for(region, collection)``: a region's jobs; ``stage``: upload a candidate's
    packages before its first create; ``skip``: why a candidate cannot run (its quota: preflight), or None."""

    planned: Sequence[Planned]
    job_id: str
    _: KW_ONLY
    jobs_for: Callable[[str, str], VertexJobs]
    stage: Callable[[Planned], None]
    skip: Callable[[Planned], str | None]
    max_queue_wait: float | None
    budget: float
    poll: PollPolicy

    def __post_init__(self) -> None:
        # looked up here, so a test's fake ``time``/``random`` in this module drives every wait
        self.clock, self.sleep, self.rand = time.monotonic, time.sleep, random.random
        self.notify = console.current().notify
        self.attempts: list[Attempt] = []
        # the attempt being watched: what Ctrl-C cancels (submit.run)
        self.live: Live | None = None
        # what Ctrl-C finds in flight besides it: a create not yet answered, a queued-too-long job being cancelled
        self.creating: Planned | None = None
        self.cancelling: Live | None = None
        self._start = 0.0

    def _regions(self) -> list[tuple[str, str]]:
        return list(dict.fromkeys((p.candidate.region, p.collection) for p in self.planned))

    def _ours(self, job: dict[str, Any]) -> Planned | None:
        """The candidate whose body ``job`` carries (an attempt of this submission), else None."""
        region = str(job.get("name", "")).split("/")[3:4]
        for p in self.planned:
            same_place = region == [p.candidate.region] and f"/{p.collection}/" in str(job.get("name", ""))
            if same_place and is_same_job(COLLECTION_SCHEMAS[p.collection], p.body, job):
                return p
        return None

    def _earlier(self, job: dict[str, Any]) -> bool:
        """An ended attempt of this submission: no obstacle to creating the next one."""
        return not is_live(job) and self._ours(job) is not None

    def adopt(self) -> Outcome | None:
        """Before any create: adopt a live job of ours in a candidate's region; another: id taken."""
        for region, collection in self._regions():
            jobs = self.jobs_for(region, collection)
            for job in jobs.find_all(self.job_id):
                ours = self._ours(job)
                if ours is None:
                    raise id_taken(self.job_id, f"region {region}", f" (Vertex AI job {job.get('name')})")
                if is_live(job):
                    name = str(job.get("name"))
                    self.notify(f"adopting {name}, made for job [{self.job_id}] by an earlier run")
                    self.attempts.append(
                        Attempt(ours.candidate.number, region, "adopted", ADOPTED, 0.0, None, name)
                    )
                    region_jobs = self.jobs_for(region, ours.collection)
                    self.live = Live(region_jobs, region, name, adopted=True)
                    return self._watch(ours, region_jobs, jobs.view(job))
        return None

    def _now(self) -> float:
        return self.clock() - self._start

    def _try(self, planned: Planned) -> Outcome | None:
        """Create and watch one candidate; None to move on. Raises what stops the failover."""
        c = planned.candidate
        attempt = Attempt(c.number, c.region, "skipped", started=self._now())
        self.attempts.append(attempt)
        why = self.skip(planned)
        if why:
            attempt.reason, attempt.ended = why, self._now()
            self.notify(f"failover: candidate {c.number} ({c.region}) skipped: {why}")
            return None
        self.stage(planned)
        jobs = self.jobs_for(c.region, planned.collection)
        self.creating = planned  # an interrupt now leaves a job that may exist in c.region (submit.run)
        try:
            job = jobs.create(planned.body, self.job_id, earlier=self._earlier).job
        except ApiError as err:
            self.creating = None
            verdict, outcome = classify("create", err.status, str(err), err.details)
            attempt.outcome, attempt.reason, attempt.ended = outcome, str(err), self._now()
            if verdict == "stop" or isinstance(err, ServiceAnswerError):  # an answer not ours: never go on
                raise
            self.notify(f"failover: candidate {c.number} ({c.region}): {outcome}; trying the next")
            return None
        self.creating = None
        attempt.job = str(job.get("name") or "")
        self.live = Live(jobs, c.region, attempt.job)
        self._keep_oldest_everywhere(jobs, job, c.region)
        found = self._watch(planned, jobs, job)
        if found is None:
            self.live = None  # it ended (stockout) or was cancelled (queued too long): nothing live to cancel
        return found

    def _keep_oldest_everywhere(self, jobs: VertexJobs, job: dict[str, Any], region: str) -> None:
        """Another run may have made a live job of this id in another region: the oldest stays (module doc)."""
        live = [(job, region)]
        for other, collection in self._regions():  # the create looked in its own region already
            if other != region:
                live += [
                    (j, other) for j in self.jobs_for(other, collection).find_all(self.job_id) if is_live(j)
                ]
        live.sort(key=lambda item: age_key(item[0]))
        if live[0][0].get("name") == job.get("name"):
            return
        jobs.cancel(str(job.get("name")))
        self.attempts[-1].outcome, self.attempts[-1].ended = "cancelled", self._now()
        raise id_taken(self.job_id, f"region {live[0][1]}", f" (Vertex AI job {live[0][0].get('name')})")

    def _watch(self, planned: Planned, jobs: VertexJobs, job: dict[str, Any]) -> Outcome | None:
        """Poll until the job runs (an Outcome) or moves on (None); record the attempt's end."""
        attempt = self.attempts[-1]
        said = f"failover: candidate {planned.candidate.number} ({planned.candidate.region})"
        name = str(job.get("name") or attempt.job or "")
        queued_since = self._now()
        deadline = self._start + self.budget if self.budget else None
        quiet = 0
        while True:
            state = str(job.get("state") or "")
            if state == "RUNNING" or state in ENDED:
                break
            if state != "QUEUED":
                queued_since = self._now()
            elif self._queued_too_long(planned, queued_since):
                waited = format_duration(self._now() - queued_since)
                self.cancelling = Live(jobs, planned.candidate.region, name)
                self._cancel(jobs, name)
                self.cancelling = None
                attempt.outcome, attempt.reason = "queued too long", f"QUEUED for {waited}; cancelled"
                attempt.ended = self._now()
                self.notify(f"{said} {attempt.reason}")
                return None
            elif self.max_queue_wait is None and deadline is not None and self.clock() >= deadline:
                break  # no queue limit: once the budget is spent the queued job is the one we keep
            self.sleep(self.poll.delay(quiet))
            quiet += 1
            job = jobs.get(name)
        attempt.ended = self._now()
        if job.get("state") == "FAILED":
            message = str(job.get("errorMessage") or "")
            verdict, outcome = classify("failed", None, message)
            attempt.outcome, attempt.reason = outcome, message
            if verdict == "next":
                self.notify(f"{said}: {outcome}")
                return None
        else:
            attempt.outcome = str(job.get("state") or "").lower()
        return job, jobs, planned

    def _queued_too_long(self, planned: Planned, since: float) -> bool:
        if self.max_queue_wait is None or planned.flex_start:
            return False  # FLEX_START queues by design, under its own maxWaitDuration
        return self._now() - since > self.max_queue_wait

    def _cancel(self, jobs: VertexJobs, name: str) -> None:
        """Cancel a job and wait (up to ``CANCEL_WAIT``) until it has ended: never two live jobs of one submission."""
        jobs.cancel(name)
        until, quiet = self.clock() + CANCEL_WAIT, 0
        while str(jobs.get(name).get("state") or "") not in ENDED and self.clock() < until:
            self.sleep(self.poll.delay(quiet))
            quiet += 1

    def run(self) -> Outcome:
        """The job that started (or ended on its own), after as many rounds as the budget allows."""
        self._start = self.clock()
        adopted = self.adopt()
        if adopted is not None:
            return adopted
        self.live = None  # an adopted job that ended without starting (a stockout) is no longer live
        round_ = 0
        while True:
            round_ += 1
            for planned in self.planned:
                found = self._try(planned)
                if found is not None:
                    return found
            delay = round_delay(round_, self.rand())
            if self._now() + delay > self.budget:
                this_round = self.attempts[-len(self.planned) :]
                last = "; ".join(f"candidate {a.candidate} ({a.region}): {a.outcome}" for a in this_round)
                raise NoCandidateLeft(
                    f"no failover candidate could start job {self.job_id} in {round_} round(s) "
                    f"({format_duration(self._now())}): {last}",
                    [a.as_dict() for a in self.attempts],
                )
            self.notify(
                f"failover: no candidate left in round {round_}; trying again in {format_duration(delay)}"
            )
            self.sleep(delay)


def attempts_of(jobs: Sequence[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    """The attempts `jobs describe` sees afterwards: every job of the submission, oldest first."""
    out: list[dict[str, Any]] = []
    for region, job in sorted(jobs, key=lambda item: age_key(item[1])):
        state = ml_state(job.get("state"))
        message = str(as_dict(job.get("error")).get("message") or "")
        outcome = classify("failed", None, message)[1] if state == "FAILED" else state.lower()
        entry: dict[str, Any] = {"region": region, "job": job.get("name"), "outcome": outcome}
        if message:
            entry["reason"] = message
        out.append(entry | {key: job[key] for key in ("createTime", "startTime", "endTime") if job.get(key)})
    return out
