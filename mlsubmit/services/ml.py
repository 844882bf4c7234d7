"""ml v1 job calls with retries and clear errors; a 409 after a retried create is resolved by reading the job
back (``services.compare``), a 409 on the first attempt means the id is taken."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from mlsubmit.errors import ApiError, HostNotFoundError, ServiceAnswerError
from mlsubmit.services import retry
from mlsubmit.services.answers import (
    ML_JOB_SHAPE,
    PageGuard,
    check_shape,
    error_fields,
    excerpt,
    need_job,
    need_page,
    read_json,
    shorten,
)
from mlsubmit.services.backends import CreateResult
from mlsubmit.services.compare import ML_JOB, is_same_job
from mlsubmit.services.retry import API_POLICY, TRANSIENT_STATUS, RetryPolicy

log = logging.getLogger(__name__)
MAYBE_CREATED = (
    "An attempt may have reached the service: check with `mlsubmit jobs describe {job_id}` before submitting "
    "again with the same id."
)


def _is_connection_error(err: BaseException) -> bool:
    """A failure of the connection itself (no HTTP answer), transient or not (a TLS certificate error)."""
    import http.client
    import sys

    httplib2 = sys.modules.get("httplib2")  # loaded only to refresh Application Default Credentials
    kinds: tuple[type[BaseException], ...] = (OSError, http.client.HTTPException)
    if httplib2 is not None:
        kinds += (httplib2.HttpLib2Error,)
    return isinstance(err, kinds) and not hasattr(err, "resp")


def error_payload(err: Exception) -> Any:
    """The JSON of an HttpError's body, or None."""
    content = getattr(err, "content", b"") or b""
    try:  # the one bounded reader (numbers and depth): an error body is an answer like any other
        return read_json(content, "an error answer") if isinstance(content, bytes | str) else None
    except ServiceAnswerError:
        return None


def error_details(err: Exception) -> tuple[int | None, str, str]:
    """(HTTP status, Google status, message) of an HttpError, neutralised (``answers.error_fields``)."""
    status = retry.status_of(err)
    gstatus, message = error_fields(error_payload(err))
    if not message:
        message = shorten(str(getattr(err, "reason", "") or "") or type(err).__name__)
    return status, gstatus, message


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
    from mlsubmit.services.classifier import detail_types

    return ApiError(text, status=status, details=detail_types(error_payload(err)))


def id_taken(job_id: str, where: str, detail: str = "") -> ApiError:
    """The one "this job id is taken" error (exit 1) of ml v1 and Vertex AI creates (docs/ci.md)."""
    return ApiError(
        f"job id {job_id!r} is already taken in {where}{detail}; choose another JOB id.", status=409
    )


class Caller:
    """Executes ``services.rest`` requests with a :class:`RetryPolicy`; ``notify`` gets one line per retry."""

    def __init__(
        self,
        *,
        policy: RetryPolicy | None = None,
        sleep: Callable[[float], None] = time.sleep,
        notify: Callable[[str], None] | None = None,
    ) -> None:
        self.policy = policy or API_POLICY
        self.sleep = sleep
        self.notify: Callable[[str], None] = notify or log.warning

    def execute(
        self,
        make_request: Callable[[], Any],
        what: str,
        *,
        on_status: Callable[[int, Exception, int], Any] | None = None,
        recover: Callable[[], Any] | None = None,
    ) -> Any:
        """``make_request().execute()`` retried; ``on_status(status, err, attempt)`` may answer an error,
        ``recover()`` a retry with what an earlier attempt made. Raises HttpError, or ApiError (no answer)."""
        from googleapiclient.errors import HttpError

        attempts = 0

        def attempt() -> Any:
            if attempts and recover is not None and (made := recover()) is not None:
                return made
            return make_request().execute(num_retries=0)

        def on_error(err: BaseException, attempt: int) -> Any:
            nonlocal attempts
            attempts = attempt
            if on_status is not None and isinstance(err, HttpError):
                return on_status(retry.status_of(err) or 0, err, attempt)
            return None

        try:
            return retry.call(
                attempt,
                what,
                self.policy,
                sleep=self.sleep,
                notify=self.notify,
                on_error=on_error,
            )
        except HttpError:
            raise
        except Exception as err:
            if not _is_connection_error(err):
                raise
            if retry.unresolved(err):  # before any request went out: nothing was created
                raise HostNotFoundError(
                    f"{what} failed: the service's host name does not resolve ({err}): no network, no DNS, or a "
                    "wrong endpoint (nothing was sent)"
                ) from None
            if retry.is_transient(err):
                raise ApiError(f"{what} failed: connection error after {attempts} attempts: {err}") from None
            raise ApiError(
                f"{what} failed: {err} (not retried: check the endpoint, proxy and CA certificates)"
            ) from None

    def checked(
        self,
        make_request: Callable[[], Any],
        what: str,
        project: str,
        permission: str,
        not_found: str | None = None,
        on_status: Callable[[int, Exception, int], Any] | None = None,
        recover: Callable[[], Any] | None = None,
    ) -> Any:
        """:meth:`execute`, an error answer raised as :func:`api_error` (a 404 as ``not_found`` when given)."""
        from googleapiclient.errors import HttpError

        try:
            return self.execute(make_request, what, on_status=on_status, recover=recover)
        except HttpError as err:
            if not_found is not None and retry.status_of(err) == 404:
                raise ApiError(not_found, status=404) from None
            raise api_error(err, what, project, permission) from None


def iter_pages(
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
) -> Iterator[dict[str, Any]]:
    """The items of a ``list`` method page by page until ``limit`` (``answers.need_page``, ``PageGuard``)."""
    count = 0
    token: str | None = None
    guard = PageGuard(what)
    while limit is None or count < limit:
        kwargs = {k: v for k, v in params.items() if v} | {"pageSize": page_size}
        if token:
            kwargs["pageToken"] = token
        answer = caller.checked(lambda kw=kwargs: method(**kw), what, project, permission)  # type: ignore[misc]
        items_found, token = need_page(answer, items, what)
        yield from items_found[: None if limit is None else limit - count]
        count += len(items_found)
        if not guard.advance(token, len(items_found)):
            return


class Collection:
    """A collection of a Google API (ml v1 jobs, Vertex AI jobs, Cloud Builds) whose calls go through a Caller."""

    permission = ""  # the IAM permission of a call is this prefix and the method: ``ml.jobs.get``

    def __init__(self, service: Any, project: str, caller: Caller | None = None) -> None:
        self.service = service
        self.project = project
        self.caller = caller or Caller()

    @property
    def _resource(self) -> Any:
        raise NotImplementedError

    def _call(
        self,
        method: str,
        what: str,
        not_found: str | None = None,
        *,
        permission: str | None = None,
        on_status: Callable[[int, Exception, int], Any] | None = None,
        recover: Callable[[], Any] | None = None,
        **params: Any,
    ) -> Any:
        """``method(**params)`` retried and checked (:meth:`Caller.checked`)."""
        return self.caller.checked(
            lambda: getattr(self._resource, method)(**params),
            what,
            self.project,
            permission or f"{self.permission}.{method}",
            not_found,
            on_status=on_status,
            recover=recover,
        )

    def _pages(
        self, items: str, what: str, limit: int | None, page_size: int = 100, **params: Any
    ) -> Iterator[dict[str, Any]]:
        return iter_pages(
            self.caller,
            self._resource.list,
            params,
            items=items,
            what=what,
            project=self.project,
            permission=f"{self.permission}.list",
            limit=limit,
            page_size=page_size,
        )


class MlJobs(Collection):
    """The ml v1 ``projects.jobs`` calls mlsubmit makes."""

    permission = "ml.jobs"

    @property
    def _resource(self) -> Any:
        return self.service.projects().jobs()

    def _name(self, job_id: str) -> str:
        return f"projects/{self.project}/jobs/{job_id}"

    def create(self, body: dict[str, Any], job_id: str) -> CreateResult:
        """Create the job exactly once, even when answers are lost and the call is retried."""
        from googleapiclient.errors import HttpError

        recovered: dict[str, Any] = {}

        def on_status(status: int, err: Exception, attempt: int) -> Any:
            if status != 409:
                return None
            if attempt == 1:
                raise id_taken(job_id, f"project {self.project}")
            found = self.get(job_id)
            if is_same_job(ML_JOB, body, found):
                recovered["yes"] = True
                return found
            raise ApiError(
                f"job {job_id!r} already exists with a different definition (an earlier attempt of ours may have "
                "been answered 409 by another creator); not overwriting it. Choose another JOB id.",
                status=409,
            )

        try:
            job = self.caller.execute(
                lambda: self._resource.create(parent=f"projects/{self.project}", body=body),
                f"creating job {job_id}",
                on_status=on_status,
            )
        except HttpError as err:
            error = api_error(err, f"creating job {job_id}", self.project, "ml.jobs.create")
            if error.status in TRANSIENT_STATUS:
                raise ApiError(
                    f"{error} {MAYBE_CREATED.format(job_id=job_id)}", status=error.status
                ) from None
            raise error from None
        except ApiError as err:
            if err.status is None and not isinstance(err, HostNotFoundError):
                # a connection that kept failing: an attempt may still have landed
                raise ApiError(f"{err} {MAYBE_CREATED.format(job_id=job_id)}") from None
            raise
        # A 200 with an HTML page (a proxy, a portal) or any other shape is no job: never "submitted".
        job = need_job(job, f"creating job {job_id}", shape=ML_JOB_SHAPE)
        if job.get("jobId") != job_id:  # another job (or another project's): never read or cancelled as ours
            raise ServiceAnswerError(
                f"creating job {job_id}: the service answered with the job {excerpt(job.get('jobId'))}; not taking "
                f"it for ours. Whether ours was created, check with `mlsubmit jobs describe {job_id}`."
            )
        return CreateResult(job=job, recovered=bool(recovered))

    def _not_found(self, job_id: str) -> str:
        return f"job {job_id!r} not found in project {self.project}."

    def get(self, job_id: str) -> dict[str, Any]:
        """Read a job (retried: reads are safe)."""
        what = f"reading job {job_id}"
        job = self._call("get", what, self._not_found(job_id), name=self._name(job_id))
        return need_job(job, what, shape=ML_JOB_SHAPE)

    def list(self, filter_: str | None = None, limit: int | None = None) -> list[dict[str, Any]]:
        """List jobs, following pages until ``limit``."""
        return list(self.iter_list(filter_, limit))

    def iter_list(self, filter_: str | None = None, limit: int | None = None) -> Iterator[dict[str, Any]]:
        """The jobs one page at a time (``jobs list`` streams them to its output), each checked for shape."""
        pages = self._pages("jobs", "listing jobs", limit, parent=f"projects/{self.project}", filter=filter_)
        return (check_shape(job, ML_JOB_SHAPE, "listing jobs") for job in pages)

    def cancel(self, job_id: str) -> None:
        """Cancel a job (cancel is idempotent on the service side, so it is retried)."""
        self._call(
            "cancel", f"cancelling job {job_id}", self._not_found(job_id), name=self._name(job_id), body={}
        )
