"""What `training` prints around a submit, gcloud-style: status on stderr, the job on stdout."""

from __future__ import annotations

import sys

from mlsubmit.cli.output import emit, status
from mlsubmit.spec.validate import TrainingRequest
from mlsubmit.submit import SubmitOptions, Submitted, submit

FOLLOW_UP = """\
Your job is still active. You may view the status of your job with the command

  $ mlsubmit jobs describe {job_id}{target}

or continue streaming the logs with the command

  $ mlsubmit jobs stream-logs {job_id}{target}"""


def report_submitted(done: Submitted, fmt: str, target: str, follow: str | None) -> None:
    """`Job [ID] submitted successfully.` and hints on stderr; jobId/state (or the whole job) on stdout."""
    for warning in done.warnings:
        status(f"WARNING: {warning}")
    if done.recovered:
        status(
            f"A retried create found job [{done.job_id}] already made by an earlier attempt with the same "
            "definition; it was not created twice."
        )
    status(f"Job [{done.job_id}] submitted successfully.")
    if follow is None:
        status(FOLLOW_UP.format(job_id=done.job_id, target="" if target == "ml" else f" --target {target}"))
    if follow is not None:
        return  # stdout gets the final job once it ends
    job = done.job
    if fmt == "text":
        emit({"jobId": job.get("jobId", done.job_id), "state": job.get("state", "QUEUED")}, "yaml")
    else:
        emit(job, fmt)


def submit_and_report(
    request: TrainingRequest,
    options: SubmitOptions,
    *,
    fmt: str,
    follow: str | None,
    cancel_on_interrupt: bool,
) -> None:
    """Submit, report, and follow the job when asked (--wait / --stream-logs)."""
    from mlsubmit.cli.progress import progress_bar_for

    done = submit(request, options, notify=status, progress=progress_bar_for(sys.stderr))
    if follow is None:
        report_submitted(done, fmt, options.target, follow)
        return
    report_submitted(done, fmt, options.target, follow)
    from mlsubmit.cli.following import follow_submitted

    follow_submitted(done, request, options, mode=follow, fmt=fmt, cancel_on_interrupt=cancel_on_interrupt)
