"""What `training` prints around a submit, gcloud-style: status on stderr, the job on stdout."""

from __future__ import annotations

import sys
from collections.abc import Callable
from contextlib import ExitStack
from typing import Any

from mlsubmit.cli.output import emit, status
from mlsubmit.errors import NoCandidateLeft, PreflightRefused
from mlsubmit.job.validate import TrainingRequest
from mlsubmit.services.settings import Settings
from mlsubmit.submit import FailoverStart, ImageStep, Plan, Preflight, Submitted, planned, run
from mlsubmit.targets.translate import Kind

FOLLOW_UP = """\
Your job is still active. You may view the status of your job with the command

  $ mlsubmit jobs describe {job_id}{hint}

or continue streaming the logs with the command

  $ mlsubmit jobs stream-logs {job_id}{hint}"""
# The preflight `training` runs first: it returns its report (``{"ok", "checks"}``), which `--format json` shows
# beside the job and the failover attempts; it raises to stop the submit (docs/getting-jobs-to-start.md).
CheckedPreflight = Callable[[Plan, Settings], "dict[str, Any] | None"]


def with_preflight(job: dict[str, Any], preflight: dict[str, Any] | None) -> dict[str, Any]:
    """The job as `--format json` prints it: with the preflight report beside it, when one ran."""
    return job if preflight is None else {**job, "preflight": preflight}


def report_submitted(
    done: Submitted, fmt: str, follow: str | None, preflight: dict[str, Any] | None = None
) -> None:
    """`Job [ID] submitted successfully.` and hints on stderr; jobId/state (or the whole job, with the
    ``preflight`` report) on stdout."""
    for warning in done.warnings:
        status(f"WARNING: {warning}")
    if done.recovered:
        status(
            f"A retried create found job [{done.job_id}] already made by an earlier attempt with the same "
            "definition; it was not created twice."
        )
    for attempt in done.attempts:
        status(f"Attempt: {attempt_line(attempt)}")
    status(f"Job [{done.job_id}] submitted successfully.")
    if follow is None:
        status(FOLLOW_UP.format(job_id=done.job_id, hint=done.settings.hint_flags))
    if follow is not None:
        return  # stdout gets the final job once it ends
    job = done.job
    if fmt == "text":
        emit({"jobId": job.get("jobId", done.job_id), "state": job.get("state", "QUEUED")}, "yaml")
    else:
        emit(with_preflight(job, preflight), fmt)


def failover_hook(
    executor_image_uri: str | None,
    max_queue_wait: float | None,
    settings: Settings,
    preflight: bool,
    cancel_on_interrupt: bool = False,
) -> FailoverStart:
    """The failover of a Vertex AI submit with candidates (docs/getting-jobs-to-start.md); with the preflight on,
    a candidate whose quota limit is below the request is skipped; Ctrl-C cancels the live attempt's job with
    ``cancel_on_interrupt``."""
    import functools

    from mlsubmit.follow.failover_start import quota_skip, start

    return functools.partial(
        start,
        executor_image_uri=executor_image_uri,
        max_queue_wait=max_queue_wait,
        cancel_on_interrupt=cancel_on_interrupt,
        notify=status,
        skip=quota_skip(settings) if preflight else None,
    )


def attempt_line(attempt: dict[str, Any]) -> str:
    """One failover attempt for people: ``candidate 1 (europe-west4): stockout — Resources are ...``."""
    text = f"candidate {attempt.get('candidate')} ({attempt.get('region')}): {attempt.get('outcome')}"
    return f"{text} — {attempt['reason']}" if attempt.get("reason") else text


def submit_and_report(
    request: TrainingRequest,
    *,
    target: Kind,
    executor_image_uri: str | None,
    connection: dict[str, Any],
    fmt: str,
    follow: str | None,
    cancel_on_interrupt: bool,
    max_queue_wait: float | None = None,
    image: ImageStep | None = None,
    preflight: CheckedPreflight | None = None,
    checkup: Callable[[Plan], None] | None = None,
) -> None:
    """Plan, build the settings of that plan once, submit, report, and follow the job when asked (--wait /
    --stream-logs). ``connection``: the options ``Settings`` declares (project, token file, endpoint);
    ``checkup``: what says what it sees in the plan before anything goes out (the trainer checkup)."""
    from mlsubmit.cli.progress import progress_bar_for

    checks: dict[str, dict[str, Any] | None] = {"report": None}
    keeping: Preflight | None = None
    if preflight is not None:
        check = preflight

        def keeping(plan: Plan, settings: Settings) -> None:  # keeps the report for the output
            try:
                checks["report"] = check(plan, settings)
            except PreflightRefused as err:  # a quota refusal does not stop a failover (submit.run)
                checks["report"] = err.report
                raise

    with ExitStack() as command:  # the settings' connections close when the command ends
        with planned(request, target=target, executor_image_uri=executor_image_uri, image=image) as plan:
            if checkup is not None:
                checkup(plan)
            settings = command.enter_context(Settings.for_job(plan, request.env, **connection, notify=status))
            try:
                done = run(
                    plan,
                    settings,
                    progress=progress_bar_for(sys.stderr),
                    preflight=keeping,
                    failover=failover_hook(
                        executor_image_uri,
                        max_queue_wait,
                        settings,
                        preflight is not None,
                        cancel_on_interrupt,
                    ),
                )
            except NoCandidateLeft as err:  # every attempt is part of the outcome, also when none started
                for attempt in err.attempts:
                    status(f"Attempt: {attempt_line(attempt)}")
                if fmt != "text":
                    emit(
                        with_preflight({"jobId": plan.job_id, "attempts": err.attempts}, checks["report"]),
                        fmt,
                    )
                raise
        report_submitted(done, fmt, follow, checks["report"])
        if follow is None:
            if done.attempts:  # failover followed the job until it ran or ended: the exit code is the job's
                from mlsubmit.follow.lifecycle import raise_for_outcome, state_of

                if state_of(done.job) in ("FAILED", "CANCELLED"):
                    raise_for_outcome(done.job)
            return
        from mlsubmit.cli.following import follow_submitted

        follow_submitted(
            done, mode=follow, fmt=fmt, cancel_on_interrupt=cancel_on_interrupt, preflight=checks["report"]
        )
