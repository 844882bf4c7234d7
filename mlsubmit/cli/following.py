"""`training --wait` / `--stream-logs`: follow the job just created and exit with its outcome."""

from __future__ import annotations

from typing import Any

from mlsubmit.cli.output import emit, make_console
from mlsubmit.submit import Submitted


def follow_submitted(
    done: Submitted,
    *,
    mode: str,
    fmt: str,
    cancel_on_interrupt: bool,
    preflight: dict[str, Any] | None = None,
) -> None:
    """Follow ``done`` until it ends; print the final job (with the ``preflight`` report); raise JobFailedError
    unless it SUCCEEDED.

    ``done.settings`` carry the job's own region, so the commands suggested after Ctrl-C name it.
    """
    from mlsubmit.follow.lifecycle import job_summary, raise_for_outcome
    from mlsubmit.follow.session import Following, follow, sigterm_as_interrupt

    with sigterm_as_interrupt():
        final = follow(
            done.backend,
            done.job_id,
            done.settings,
            make_console(logs_to="stderr"),  # gcloud streams submit logs on stderr
            Following(
                mode="stream-logs" if mode == "stream-logs" else "wait",
                cancel_on_interrupt=cancel_on_interrupt,
            ),
        )
    if done.attempts:  # failover: every attempt is part of the outcome (docs/getting-jobs-to-start.md)
        final = {**final, "attempts": done.attempts}
    if preflight is not None:
        final = {**final, "preflight": preflight}
    emit(final if fmt != "text" else job_summary(final), fmt)
    raise_for_outcome(final)
