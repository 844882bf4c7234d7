"""The job surface shared by every target: jobs as dicts with ``jobId``, an ml-style ``state`` and
``errorMessage``, so exit codes and output are the same whichever service runs the job."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from mlsubmit.job.vocab import TARGETS

TERMINAL_STATES = frozenset({"SUCCEEDED", "FAILED", "CANCELLED"})
# --target value -> the Google API its jobs live in (services.connection.APIS, services.rest.DOCUMENTS); a TFJob
# lives in no Google API (services.kubernetes), its packages and image still go through Cloud Storage and Build.
TARGET_APIS = dict(zip(TARGETS, ("ml", "aiplatform", ""), strict=True))


@dataclass
class CreateResult:
    """What a create made: the job as the service shows it, and whether a retried create found it already made."""

    job: dict[str, Any]
    recovered: bool  # True: a retried create found our earlier attempt already made the job


class JobsBackend(Protocol):
    """What `training` (create), the `jobs` commands and `training --wait` need from a target service."""

    project: str

    def create(self, body: dict[str, Any], job_id: str) -> CreateResult:
        """Create the job ``body`` (the plan's body for this target) exactly once, even when answers are lost."""

    def get(self, job_id: str) -> dict[str, Any]:
        """The job, with ``jobId`` and an ml-style ``state``."""

    def list(self, filter_: str | None = None, limit: int | None = None) -> list[dict[str, Any]]:
        """Jobs of the project, newest first where the service orders them."""

    def cancel(self, job_id: str) -> None:
        """Ask the service to cancel the job."""
