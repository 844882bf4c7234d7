"""ml v1 job calls through an injected googleapiclient service: retries, 409 resolution, clear errors.

Retry policy (STYLE.md practice 7, issue 3): 429, 5xx and dropped connections are retried with bounded
exponential backoff and each retry is reported. ``create`` is not idempotent, so a 409 after a retried
create is resolved by reading the job back: the same job means our earlier attempt landed (success), a
different one is an error. A 409 on the very first attempt means the id is taken.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from mlsubmit.errors import ApiError

RETRYABLE_STATUS = frozenset({429, 500, 502, 503, 504})
MAYBE_CREATED = (
    "An attempt may have reached the service: check with `mlsubmit jobs describe {job_id}` before submitting "
    "again with the same id."
)
INT64_KEYS = frozenset({"workerCount", "parameterServerCount", "evaluatorCount", "count"})
Notify = Callable[[str], None]


@dataclass(frozen=True)
class RetryPolicy:
    """Bounded exponential backoff: ``initial * factor**n`` seconds, capped, at most ``attempts`` tries."""

    attempts: int = 5
    initial: float = 1.0
    factor: float = 2.0
    cap: float = 30.0

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> RetryPolicy:
        """The default policy; MLSUBMIT_RETRY_INITIAL_DELAY (seconds) shortens the first wait, e.g. in tests."""
        import os

        raw = (env if env is not None else os.environ).get("MLSUBMIT_RETRY_INITIAL_DELAY")
        try:
            return cls(initial=float(raw)) if raw else cls()
        except ValueError:
            return cls()

    def delay(self, attempt: int) -> float:
        return float(min(self.cap, self.initial * self.factor ** (attempt - 1)))


def _status_of(err: Exception) -> int | None:
    resp = getattr(err, "resp", None)
    status = getattr(resp, "status", None)
    return int(status) if status is not None else None


def _is_connection_error(err: Exception) -> bool:
    import httplib2

    return isinstance(err, ConnectionError | TimeoutError | OSError | httplib2.HttpLib2Error) and not hasattr(
        err, "resp"
    )


def error_details(err: Exception) -> tuple[int | None, str, str]:
    """(HTTP status, Google status like PERMISSION_DENIED, message) of an HttpError."""
    status = _status_of(err)
    content = getattr(err, "content", b"") or b""
    try:
        payload = json.loads(content.decode("utf-8", "replace") if isinstance(content, bytes) else content)
        error = payload.get("error", {}) if isinstance(payload, dict) else {}
    except ValueError:
        error = {}
    message = str(error.get("message") or getattr(err, "reason", "") or err)
    return status, str(error.get("status") or ""), message


def api_error(
    err: Exception, what: str, project: str | None = None, permission: str | None = None
) -> ApiError:
    """Turn an HttpError into an ApiError naming the service's status and message (and, on 403, what to fix)."""
    status, gstatus, message = error_details(err)
    text = f"{what} failed: HTTP {status} {gstatus}: {message}".replace(":  ", ": ")
    if status == 403:
        text += (
            f" — check that project {project or '?'} exists, the API is enabled, and the caller has "
            f"permission {permission or 'for this call'}."
        )
    elif status == 401:
        text += (
            " — the access token is missing, invalid or expired; get a fresh one "
            "(CLOUDSDK_AUTH_ACCESS_TOKEN or --access-token-file) or use Application Default Credentials."
        )
    return ApiError(text, status=status)


class Caller:
    """Executes googleapiclient requests with the retry policy; ``notify`` receives one line per retry."""

    def __init__(
        self,
        *,
        policy: RetryPolicy | None = None,
        sleep: Callable[[float], None] = time.sleep,
        notify: Notify | None = None,
    ) -> None:
        self.policy = policy or RetryPolicy.from_env()
        self.sleep = sleep
        self.notify = notify or (lambda _msg: None)

    def execute(
        self,
        make_request: Callable[[], Any],
        what: str,
        *,
        on_status: Callable[[int, Exception, int], Any] | None = None,
    ) -> Any:
        """Run ``make_request().execute()`` with retries. ``on_status(status, err, attempt)`` may handle an error
        status itself (return a value) or return None to let the default handling happen."""
        from googleapiclient.errors import HttpError

        attempt = 0
        while True:
            attempt += 1
            try:
                return make_request().execute(num_retries=0)
            except HttpError as err:
                status = _status_of(err) or 0
                if on_status is not None:
                    handled = on_status(status, err, attempt)
                    if handled is not None:
                        return handled
                if status not in RETRYABLE_STATUS or attempt >= self.policy.attempts:
                    raise
                reason = f"HTTP {status}"
            except Exception as err:
                if not _is_connection_error(err) or attempt >= self.policy.attempts:
                    if _is_connection_error(err):
                        raise ApiError(
                            f"{what} failed: connection error after {attempt} attempts: {err}"
                        ) from None
                    raise
                reason = f"connection error ({type(err).__name__})"
            delay = self.policy.delay(attempt)
            self.notify(
                f"{what}: {reason}; retrying in {delay:g}s (attempt {attempt + 1} of {self.policy.attempts})"
            )
            self.sleep(delay)


def _normal(value: Any, key: str | None = None) -> Any:
    if isinstance(value, dict):
        return {k: _normal(v, k) for k, v in value.items() if v not in (None, False, [], {}, "")}
    if isinstance(value, list):
        return [_normal(v) for v in value]
    if key in INT64_KEYS and isinstance(value, int | str):
        return str(value)
    return value


def is_same_job(sent: Mapping[str, Any], found: Mapping[str, Any]) -> bool:
    """True when the job the service holds is the one we sent (ignoring output-only fields and empty defaults).

    Every field we sent must be in ``found`` with the same meaning; the service may add fields of its own.
    """

    def covers(mine: Any, theirs: Any) -> bool:
        if isinstance(mine, dict):
            return isinstance(theirs, dict) and all(covers(v, theirs.get(k)) for k, v in mine.items())
        return bool(mine == theirs)

    mine = _normal(dict(sent))
    theirs = _normal(dict(found))
    return covers({k: mine.get(k) for k in ("jobId", "labels", "trainingInput") if k in mine}, theirs)


def list_pages(
    caller: Caller,
    method: Callable[..., Any],
    params: Mapping[str, Any],
    *,
    items: str,
    what: str,
    project: str,
    permission: str,
    limit: int | None = None,
    page_size: int = 100,
) -> list[dict[str, Any]]:
    """Call a googleapiclient ``list`` method page by page (each page retried) until ``limit`` items."""
    from googleapiclient.errors import HttpError

    found: list[dict[str, Any]] = []
    token: str | None = None
    while True:
        kwargs = {k: v for k, v in params.items() if v}
        kwargs["pageSize"] = page_size
        if token:
            kwargs["pageToken"] = token
        try:
            page = caller.execute(lambda kw=kwargs: method(**kw), what)  # type: ignore[misc]
        except HttpError as err:
            raise api_error(err, what, project, permission) from None
        found.extend(page.get(items, []))
        token = page.get("nextPageToken")
        if not token or (limit is not None and len(found) >= limit):
            break
    return found[:limit] if limit is not None else found


@dataclass
class CreateResult:
    job: dict[str, Any]
    recovered: bool  # True: a retried create found our earlier attempt already made the job


class MlJobs:
    """The ml v1 ``projects.jobs`` calls mlsubmit makes."""

    def __init__(self, service: Any, project: str, caller: Caller | None = None) -> None:
        self.service = service
        self.project = project
        self.caller = caller or Caller()

    @property
    def _jobs(self) -> Any:
        return self.service.projects().jobs()

    def _name(self, job_id: str) -> str:
        return f"projects/{self.project}/jobs/{job_id}"

    def create(self, body: dict[str, Any]) -> CreateResult:
        """Create the job exactly once, even when answers are lost and the call is retried."""
        from googleapiclient.errors import HttpError

        job_id = body["jobId"]
        recovered: dict[str, Any] = {}

        def on_status(status: int, err: Exception, attempt: int) -> Any:
            if status != 409:
                return None
            if attempt == 1:
                raise ApiError(
                    f"job id {job_id!r} is already taken in project {self.project}; choose another JOB id.",
                    status=409,
                )
            found = self.get(job_id)
            if is_same_job(body, found):
                recovered["yes"] = True
                return found
            raise ApiError(
                f"job {job_id!r} already exists with a different definition (an earlier attempt of ours may have "
                "been answered 409 by another creator); not overwriting it. Choose another JOB id.",
                status=409,
            )

        try:
            job = self.caller.execute(
                lambda: self._jobs.create(parent=f"projects/{self.project}", body=body),
                f"creating job {job_id}",
                on_status=on_status,
            )
        except HttpError as err:
            error = api_error(err, f"creating job {job_id}", self.project, "ml.jobs.create")
            if error.status in RETRYABLE_STATUS:
                raise ApiError(
                    f"{error} {MAYBE_CREATED.format(job_id=job_id)}", status=error.status
                ) from None
            raise error from None
        except ApiError as err:
            if err.status is None:  # a connection that kept failing: an attempt may still have landed
                raise ApiError(f"{err} {MAYBE_CREATED.format(job_id=job_id)}") from None
            raise
        return CreateResult(job=job, recovered=bool(recovered))

    def get(self, job_id: str) -> dict[str, Any]:
        """Read a job (retried: reads are safe)."""
        from googleapiclient.errors import HttpError

        try:
            job: dict[str, Any] = self.caller.execute(
                lambda: self._jobs.get(name=self._name(job_id)), f"reading job {job_id}"
            )
        except HttpError as err:
            if _status_of(err) == 404:
                raise ApiError(f"job {job_id!r} not found in project {self.project}.", status=404) from None
            raise api_error(err, f"reading job {job_id}", self.project, "ml.jobs.get") from None
        return job

    def list(
        self, filter_: str | None = None, limit: int | None = None, page_size: int = 100
    ) -> list[dict[str, Any]]:
        """List jobs, following pages until ``limit``."""
        return list_pages(
            self.caller,
            self._jobs.list,
            {"parent": f"projects/{self.project}", "filter": filter_},
            items="jobs",
            what="listing jobs",
            project=self.project,
            permission="ml.jobs.list",
            limit=limit,
            page_size=page_size,
        )

    def cancel(self, job_id: str) -> None:
        """Cancel a job (cancel is idempotent on the service side, so it is retried)."""
        from googleapiclient.errors import HttpError

        try:
            self.caller.execute(
                lambda: self._jobs.cancel(name=self._name(job_id), body={}), f"cancelling job {job_id}"
            )
        except HttpError as err:
            if _status_of(err) == 404:
                raise ApiError(f"job {job_id!r} not found in project {self.project}.", status=404) from None
            raise api_error(err, f"cancelling job {job_id}", self.project, "ml.jobs.cancel") from None
