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
        where = (f"{self.file}:{self.line}: " if self.line else f"{self.file}: ") if self.file else ""
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
    """A preflight check refused the job (nothing uploaded or created): one line per refusal, the ``report`` as
    `--format json` shows it; ``quota_only``: failover skips the region (docs/getting-jobs-to-start.md)."""

    def __init__(
        self, refusals: Sequence[str], report: dict[str, Any] | None = None, *, quota_only: bool = False
    ) -> None:
        super().__init__(
            f"preflight: {len(refusals)} check(s) refused the job; nothing was uploaded or created."
        )
        self.refusals, self.report, self.quota_only = list(refusals), report, quota_only

    def lines(self) -> list[str]:
        return [*self.refusals, str(self)]


class StagingError(MlsubmitError):
    """Uploading packages to Cloud Storage failed."""


class BuilderUnavailableError(UsageError):
    """The image builder asked for (docker, podman, buildah) is not installed or does not answer (exit 2)."""


class ImageBuildError(MlsubmitError):
    """Building or pushing the training image failed; the message carries the build's last lines."""


class CloudBuildFailedError(ImageBuildError):
    """An image build on Cloud Build ended without the image (FAILURE, TIMEOUT, ...): no job is created."""


class ApiError(MlsubmitError):
    """The remote API refused or failed a call: its status, message and ``google.rpc`` ``details`` types."""

    def __init__(self, message: str, status: int | None = None, details: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.status, self.details = status, details


class HostNotFoundError(ApiError):
    """A host name did not resolve: no request left this machine, and trying again at once would not help."""


class EndpointRefusedError(MlsubmitError):
    """Nothing listens at an endpoint (connections refused again and again): not worth minutes of retries."""


class ServiceAnswerError(ApiError):
    """A call was answered, but not with what the API promises: the service or something in between misbehaves."""


class NoCandidateLeft(ApiError):
    """Failover: no candidate could start the job within the budget; its ``attempts`` and ``preflight`` report."""

    def __init__(self, message: str, attempts: list[dict[str, Any]]) -> None:
        super().__init__(message)
        self.attempts = attempts
        self.preflight: dict[str, Any] | None = None


class KubeApiError(ApiError):
    """A Kubernetes API server answered with an error ``Status``: its code, reason and message (docs/kubernetes.md)."""

    def __init__(self, message: str, status: int | None, reason: str = "") -> None:
        super().__init__(message, status=status)
        self.reason = reason


class ExecPluginError(UsageError):
    """A kubeconfig's exec credential plugin failed, hung or printed no credential (exit 2)."""


class JobFailedError(MlsubmitError):
    """The job ended in FAILED or CANCELLED (or its Vertex equivalent)."""


class JobEndedError(MlsubmitError):
    """``Handle.cancel()`` on a job that has already ended: nothing was cancelled; ``status``: the job as read."""

    def __init__(self, message: str, status: Any) -> None:
        super().__init__(message)
        self.status = status


class WaitTimeoutError(MlsubmitError):
    """``--timeout`` expired while the job was still going; it keeps running (exit 1)."""

    def __init__(self, message: str, job: dict[str, Any]) -> None:
        super().__init__(message)
        self.job = job


class FollowInterrupted(MlsubmitError):
    """Ctrl-C while following a job; the message says what happened to the job (exit 130)."""

    exit_status = ExitStatus.INTERRUPTED


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


class LedgerError(MlsubmitError):
    """The run ledger cannot be used (not trusted, not writable; docs/cost.md): a submit warns and goes on."""
