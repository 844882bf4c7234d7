"""What `training` prints around a submit, gcloud-style: status on stderr, the job on stdout."""

from __future__ import annotations

import sys
from contextlib import ExitStack
from typing import Any

from mlsubmit.cli.output import emit, status
from mlsubmit.services.settings import Settings
from mlsubmit.spec.validate import TrainingRequest
from mlsubmit.submit import Preflight, Submitted, planned, run
from mlsubmit.targets.translate import Kind

FOLLOW_UP = """\
Your job is still active. You may view the status of your job with the command

  $ mlsubmit jobs describe {job_id}{hint}

or continue streaming the logs with the command

  $ mlsubmit jobs stream-logs {job_id}{hint}"""


def report_submitted(done: Submitted, fmt: str, follow: str | None) -> None:
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
        status(FOLLOW_UP.format(job_id=done.job_id, hint=done.settings.hint_flags))
    if follow is not None:
        return  # stdout gets the final job once it ends
    job = done.job
    if fmt == "text":
        emit({"jobId": job.get("jobId", done.job_id), "state": job.get("state", "QUEUED")}, "yaml")
    else:
        emit(job, fmt)


def submit_and_report(
    request: TrainingRequest,
    *,
    target: Kind,
    executor_image_uri: str | None,
    connection: dict[str, Any],
    fmt: str,
    follow: str | None,
    cancel_on_interrupt: bool,
    preflight: Preflight | None = None,
) -> None:
    """Plan, build the settings of that plan once, submit, report, and follow the job when asked (--wait /
    --stream-logs). ``connection``: the options ``Settings`` declares (project, token file, endpoint)."""
    from mlsubmit.cli.progress import progress_bar_for

    with ExitStack() as command:  # the settings' connections close when the command ends
        with planned(request, target=target, executor_image_uri=executor_image_uri) as plan:
            settings = command.enter_context(Settings.for_job(plan, request.env, **connection, notify=status))
            done = run(plan, settings, progress=progress_bar_for(sys.stderr), preflight=preflight)
        report_submitted(done, fmt, follow)
        if follow is None:
            return
        from mlsubmit.cli.following import follow_submitted

        follow_submitted(done, mode=follow, fmt=fmt, cancel_on_interrupt=cancel_on_interrupt)
