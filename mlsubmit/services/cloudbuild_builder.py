"""The ``cloud-build`` builder (docs/containers.md): upload the context once, start the build once, wait and
stream the log (bounded); a failure names the failing step, and Ctrl-C cancels only with ``cancel_on_interrupt``."""

from __future__ import annotations

import collections
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol, cast

from mlsubmit import console
from mlsubmit.errors import (
    ApiError,
    CloudBuildFailedError,
    FollowInterrupted,
    ServiceAnswerError,
    WaitTimeoutError,
)
from mlsubmit.proc.processes import temporary_directory
from mlsubmit.services.answers import excerpt, neutralize
from mlsubmit.services.backends import JobsBackend
from mlsubmit.services.cloudbuild import (
    CloudBuilds,
    builds_plan,
    failure_text,
    image_digest,
    plan_build,
    state_of,
)
from mlsubmit.services.poll import drop_connections, wait_for_job
from mlsubmit.services.retry import PollPolicy, RetryPolicy
from mlsubmit.services.storage import upload

MAX_SHOWN = 4 * 1024 * 1024  # log bytes printed per build; the rest is counted, and its tail kept
MAX_LINE = 4096  # characters of one log line shown (a line without an end is cut there)
TAIL_LINES = 20
#: Polling a build: it takes minutes, and its log is read on every poll (MLSUBMIT_POLL_INTERVAL overrides).
BUILD_POLL = PollPolicy(initial=2.0, factor=1.5, cap=15.0)
#: How long we wait at most: the build's own timeout plus Cloud Build's default queueTtl (3600 s) and a margin,
#: so a service that never says the build ended cannot keep a pipeline waiting.
WAIT_LIMIT_S = 3600 + 3600 + 600


class TaggedImage(Protocol):
    """What a builder needs of the images ``ImageSpec``: the image name with its content tag."""

    @property
    def tagged(self) -> str: ...


def printable(line: str) -> str:
    """A log line safe for a terminal (control characters shown as ``\\xNN``, docs/security.md), bounded."""
    return neutralize(line[:MAX_LINE])


class LogStream:
    """The build log as it grows: ``[build]`` lines printed up to MAX_SHOWN bytes, last TAIL_LINES kept."""

    def __init__(self, builds: CloudBuilds, notify: Callable[[str], None]) -> None:
        self.builds = builds
        self.notify = notify
        self.offset = 0
        self.partial = ""
        self.tail: collections.deque[str] = collections.deque(maxlen=TAIL_LINES)
        self.broken = False

    def get(self, job_id: str) -> dict[str, Any]:
        """The build (``CloudBuilds.get``), printing the log lines that arrived since the last poll."""
        build = self.builds.get(job_id)
        self.pull(build)
        return build

    def _emit(self, line: str) -> None:
        self.notify(f"[build] {line}")

    def pull(self, build: dict[str, Any]) -> None:
        """Read what the log gained since the last pull (one bounded read); never fails the build."""
        if self.broken:
            return
        try:
            data = self.builds.read_log(build, self.offset)
        except (ApiError, OSError) as err:
            self.broken = True
            self.notify(f"the build log cannot be read ({err}); the build goes on")
            return
        if not data:
            return
        shown_before = self.offset < MAX_SHOWN
        self.offset += len(data)
        text = self.partial + data.decode("utf-8", "replace")
        *lines, self.partial = text.split("\n")
        self.partial = self.partial[-MAX_LINE:]
        for line in lines:
            clean = printable(line.rstrip("\r"))
            self.tail.append(clean)
            if shown_before:
                self._emit(clean)
        if shown_before and self.offset >= MAX_SHOWN:
            self.notify(f"the build log passed {MAX_SHOWN // (1024 * 1024)} MiB; not printing more of it")

    def finish(self, build: dict[str, Any]) -> None:
        """Read the log to its end (bounded rounds) once the build has ended."""
        for _ in range(64):
            before = self.offset
            self.pull(build)
            if self.offset == before:
                break
        if self.partial:
            self.tail.append(printable(self.partial))
            if self.offset <= MAX_SHOWN:
                self._emit(printable(self.partial))
            self.partial = ""


class CloudBuilder:
    """The ``cloud-build`` builder: ``build(spec, context_tar) -> "sha256:..."`` (module docstring)."""

    name = "cloud-build"

    def __init__(
        self,
        builds: CloudBuilds,
        *,
        staging_bucket: str | None,
        poll: PollPolicy | None = None,
        storage_retry: RetryPolicy | None = None,
        cancel_on_interrupt: bool = False,
    ) -> None:
        self.builds = builds
        self.staging_bucket = staging_bucket
        self.notify = console.current().notify  # status lines; the build log's lines marked [build]
        self.poll = poll or BUILD_POLL
        self.storage_retry = storage_retry
        self.cancel_on_interrupt = cancel_on_interrupt
        self.bytes_uploaded = 0

    def build(self, spec: TaggedImage, context_tar: Path) -> str:
        """Build and push ``spec.tagged`` from ``context_tar``; the pushed manifest's digest."""
        image = spec.tagged
        with temporary_directory("mlsubmit-build-") as tmp:
            plan = plan_build(image, Path(context_tar), self.staging_bucket, Path(tmp))
            # the context archive at its content address (nothing sent when it is there)
            self.bytes_uploaded += upload(
                [plan.staged], self.builds.storage, retry=self.storage_retry
            ).bytes_sent
            try:
                started = self.builds.start(plan, self.notify)
            except KeyboardInterrupt:  # the create may have been sent: a build may run, no job was created
                raise FollowInterrupted(
                    f"interrupted while starting the Cloud Build of {image}: a build may have started; no job "
                    f"was created. Check with `gcloud builds list --filter=tags={plan.tag}`; running the "
                    "same command again follows that build instead of starting another."
                ) from None
        build_id = str(started["id"])
        where = f" (log: {started['logUrl']})" if started.get("logUrl") else ""
        self.notify(f"Cloud Build {build_id} builds {image}{where}")
        log = LogStream(self.builds, self.notify)
        try:
            # the poll engine only reads (get); a build is never "created" here
            final = wait_for_job(
                cast(JobsBackend, log),
                build_id,
                timeout=WAIT_LIMIT_S,
                on_state=lambda b: self.notify(f"Cloud Build {build_id} is {b.get('status')}."),
                poll=self.poll,
                hint=f"Cloud Build {build_id} may still be running (`gcloud builds describe {build_id}`); "
                "no job was created.",
            )
        except KeyboardInterrupt:
            raise self._interrupted(build_id) from None
        except WaitTimeoutError:
            raise CloudBuildFailedError(
                f"Cloud Build {build_id} has not ended after {WAIT_LIMIT_S:g}s; no job was created. Check it "
                f"with `gcloud builds describe {build_id}`."
            ) from None
        log.finish(final)
        if state_of(final) != "SUCCEEDED":
            raise CloudBuildFailedError(failure_text(final, list(log.tail)))
        # the digest run is only ever that of this run's archive, read back from the build that was followed
        if str(final.get("id")) != build_id or not builds_plan(final, plan):
            raise ServiceAnswerError(
                f"Cloud Build {build_id} ended SUCCESS, but the build read back is {excerpt(final.get('id'))} from "
                f"{excerpt(final.get('source'))}, not this run's archive and steps; not running the image it "
                "reports. No job was created."
            )
        return image_digest(final, image)

    def _interrupted(self, build_id: str) -> FollowInterrupted:
        if self.cancel_on_interrupt and self.builds.started_elsewhere:
            return FollowInterrupted(
                f"interrupted; Cloud Build {build_id} was started by another run, so it was not cancelled; "
                "no job was created."
            )
        if not self.cancel_on_interrupt:
            return FollowInterrupted(
                f"interrupted; Cloud Build {build_id} was not cancelled and keeps running; no job was created. "
                f"Cancel it with `gcloud builds cancel {build_id}`, or pass --cancel-on-interrupt."
            )
        # a request cut by Ctrl-C leaves its connection out of step
        drop_connections(cast(JobsBackend, self.builds))
        try:
            self.builds.cancel(build_id)
        except ApiError as err:
            return FollowInterrupted(
                f"interrupted; cancelling Cloud Build {build_id} failed: {err} Cancel it with "
                f"`gcloud builds cancel {build_id}`; no job was created."
            )
        return FollowInterrupted(
            f"interrupted; asked Cloud Build to cancel build {build_id} (--cancel-on-interrupt); "
            "no job was created."
        )
