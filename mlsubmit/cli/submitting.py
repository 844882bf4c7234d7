"""What `training` prints around a submit, gcloud-style: status on stderr, the job on stdout."""

from __future__ import annotations

import sys
from contextlib import ExitStack
from typing import TYPE_CHECKING, Any

from mlsubmit.cli.output import (
    emit,
    make_console,
    progress_bar_for,
    refused_report,
    show_checkup,
    show_job,
    status,
    warn,
    warn_if_stale,
)
from mlsubmit.errors import NoCandidateLeft
from mlsubmit.submit.run import run

if TYPE_CHECKING:
    from mlsubmit.api import Call
    from mlsubmit.follow.session import FollowMode

FOLLOW_UP = """\
Your job is still active. You may view the status of your job with the command

  $ mlsubmit jobs describe {job_id}{hint}

or continue streaming the logs with the command

  $ mlsubmit jobs stream-logs {job_id}{hint}"""


def show_attempts(attempts: list[dict[str, Any]]) -> None:
    """Each failover attempt for people: ``Attempt: candidate 1 (europe-west4): stockout — Resources are ...``."""
    for attempt in attempts:
        text = f"candidate {attempt.get('candidate')} ({attempt.get('region')}): {attempt.get('outcome')}"
        status(f"Attempt: {text} — {attempt['reason']}" if attempt.get("reason") else f"Attempt: {text}")


def submit_and_report(made: Call, *, fmt: str, follow: FollowMode | None, cancel_on_interrupt: bool) -> None:
    """Plan, check, run and report the submit; follow the job when asked (--wait / --stream-logs)."""
    from mlsubmit.services.poll import raise_for_outcome, state_of

    options = made.run_options(progress=progress_bar_for(sys.stderr), cancel_on_interrupt=cancel_on_interrupt)
    with ExitStack() as command:  # the settings' connections close when the command ends
        with made.planned() as plan:
            show_checkup(made, plan)
            if plan.budget is not None or made.given.get("max_cost") is not None:
                warn_if_stale(plan)  # the budget was checked against these prices (docs/cost.md)
            settings = command.enter_context(made.settings(plan, status))
            # with failover candidates a refused preflight's report goes with the attempts, not alone on stdout
            shown = fmt if not plan.candidates else "text"
            try:
                done = refused_report(lambda: run(plan, settings, options), shown)
            except NoCandidateLeft as err:  # every attempt is part of the outcome, also when none started
                show_attempts(err.attempts)
                if fmt != "text":
                    show_job({"jobId": plan.job_id, "attempts": err.attempts}, fmt, err.preflight)
                raise
            from mlsubmit.cli.jobs_cost import record_end, record_submit  # the run ledger (docs/cost.md)

            record_submit(plan, done, made.request)
        warn(done.warnings)
        if done.recovered:
            status(
                f"A retried create found job [{done.job_id}] already made by an earlier attempt with the same "
                "definition; it was not created twice."
            )
        show_attempts(done.attempts)
        status(f"Job [{done.job_id}] submitted successfully.")
        if follow is None:
            status(FOLLOW_UP.format(job_id=done.job_id, hint=done.settings.hint_flags))
            job = done.job
            if fmt == "text":
                emit({"jobId": job.get("jobId", done.job_id), "state": job.get("state", "QUEUED")}, "yaml")
            else:
                show_job(job, fmt, done.preflight)
            # failover followed the job until it ran or ended: the exit code is the job's
            if done.attempts and state_of(done.job) in ("FAILED", "CANCELLED"):
                raise_for_outcome(done.job)
            return
        from mlsubmit.follow.session import Following, sigterm_as_interrupt
        from mlsubmit.follow.session import follow as follow_job

        with sigterm_as_interrupt():  # done.settings carry the job's region: the hints after Ctrl-C name it
            how = Following(follow, cancel_on_interrupt)
            final = follow_job(done.backend, done.job_id, done.settings, make_console(logs_to="stderr"), how)
    if done.attempts:  # failover: every attempt is part of the outcome (docs/getting-jobs-to-start.md)
        final = {**final, "attempts": done.attempts}
    record_end(done.job_id, final)
    show_job(final, fmt, done.preflight)  # the job's log lines went to stderr, as gcloud's
    raise_for_outcome(final)
