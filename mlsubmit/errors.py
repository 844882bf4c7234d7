"""One error root for the whole tool; only ``cli.main`` turns these into messages and exit codes."""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


class ExitStatus(enum.IntEnum):
    """Process exit codes a pipeline can rely on (docs/ci.md)."""

    OK = 0
    FAILURE = 1  # the job failed or was cancelled, or the remote service refused us
    USAGE = 2  # bad command line or invalid config: nothing was uploaded or created
    BUG = 3  # an unexpected error in mlsubmit itself
    INTERRUPTED = 130


class MlsubmitError(Exception):
    """Root of every error mlsubmit reports to the user. The message says what to do next."""

    exit_status: ExitStatus = ExitStatus.FAILURE

    def lines(self) -> list[str]:
        """The message as it should be printed, one line each."""
        return [str(self)]

    def report_lines(self) -> list[str]:
        """What the user sees, gcloud-style: ``ERROR: ...``, one line per problem (printed on stderr)."""
        return [f"ERROR: {line}" for line in self.lines()]


class UsageError(MlsubmitError):
    """The command line is wrong (a flag, a value, a missing option)."""

    exit_status = ExitStatus.USAGE


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a config file or the merged job, located as precisely as we can."""

    message: str
    path: str = "$"  # JSON path, e.g. $.trainingInput.workerCount
    file: str | None = None
    line: int | None = None

    def __str__(self) -> str:
        where = ""
        if self.file:
            where = f"{self.file}:{self.line}: " if self.line else f"{self.file}: "
        return f"{where}{self.path}: {self.message}"


class InvalidJobError(UsageError):
    """The config file and flags describe a job the service would refuse. Carries every problem found."""

    def __init__(self, problems: Sequence[Problem]) -> None:
        self.problems = list(dict.fromkeys(problems))  # the same problem found twice is said once
        super().__init__("\n".join(str(p) for p in self.problems))

    def lines(self) -> list[str]:
        return [str(p) for p in self.problems]


class ConfigFileError(UsageError):
    """The config file cannot be read or parsed at all (missing, a directory, not UTF-8, bad YAML)."""


class PackagingError(UsageError):
    """The trainer package cannot be built from what the user gave us."""


class PreflightRefused(UsageError):
    """A preflight check refused the Vertex AI job: nothing was uploaded or created (exit 2;
    docs/getting-jobs-to-start.md). ``refusals`` holds one line per refused check, ``report`` the whole preflight as `--format json`
    shows it."""

    def __init__(self, refusals: Sequence[str], report: dict[str, Any] | None = None) -> None:
        super().__init__(
            f"preflight: {len(refusals)} check(s) refused the job; nothing was uploaded or created."
        )
        self.refusals = list(refusals)
        self.report = report

    def lines(self) -> list[str]:
        return [*self.refusals, str(self)]


class StagingError(MlsubmitError):
    """Uploading packages to Cloud Storage failed."""


class BuilderUnavailableError(UsageError):
    """The image builder asked for (docker, podman, buildah) is not installed or does not answer (exit 2)."""


class ImageBuildError(MlsubmitError):
    """Building or pushing the training image failed (exit 1); the message carries the build's last lines."""


class ApiError(MlsubmitError):
    """The remote API refused or failed a call; the message carries the service's status and message."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class EndpointRefusedError(MlsubmitError):
    """Nothing listens at an endpoint: its connections were refused outright, again and again (a wrong endpoint
    or a service that is down; not worth minutes of retries)."""


class ServiceAnswerError(ApiError):
    """A call was answered, but not with what the API promises (an HTML page, a list for an object, a state that
    is no string, a page token that never ends): the service or something in between misbehaves (exit 1)."""


class NoCandidateLeft(ApiError):
    """Failover: every round ended with no candidate able to start the job, and the budget is spent (exit 1).
    ``attempts`` are the attempts as `--format json` shows them (docs/getting-jobs-to-start.md)."""

    def __init__(self, message: str, attempts: list[dict[str, Any]]) -> None:
        super().__init__(message)
        self.attempts = attempts


class JobFailedError(MlsubmitError):
    """The job ended in FAILED or CANCELLED (or its Vertex equivalent)."""


class JobEndedError(MlsubmitError):
    """``Handle.cancel()`` (the Python API) on a job that has already ended: nothing was cancelled (exit 1).
    ``status`` is the job as read (``mlsubmit.api.JobStatus``)."""

    def __init__(self, message: str, status: Any) -> None:
        super().__init__(message)
        self.status = status


class CloudBuildFailedError(ImageBuildError):
    """An image build on Cloud Build ended without the image (FAILURE, TIMEOUT, ...): no job is created."""


class LocalRunError(MlsubmitError):
    """A local training run ended badly (a replica failed, timed out, or could not start)."""


class ReplicaFailedError(LocalRunError):
    """A replica other than the primary exited non-zero or was killed."""


class RunTimeoutError(LocalRunError):
    """The run outlived its maximum running time."""


class RunStoppedError(LocalRunError):
    """The caller asked for this run to end (``supervise(stop=...)``), e.g. a tuning trial stopped early."""


class RunInterruptedError(LocalRunError):
    """The user (or the system) asked us to stop."""

    exit_status = ExitStatus.INTERRUPTED


class FollowInterrupted(MlsubmitError):
    """Ctrl-C while following a job; the message says what happened to the job (exit 130)."""

    exit_status = ExitStatus.INTERRUPTED


class WaitTimeoutError(MlsubmitError):
    """``--timeout`` expired while the job was still going; it keeps running (exit 1)."""

    def __init__(self, message: str, job: dict[str, Any]) -> None:
        super().__init__(message)
        self.job = job
