"""Content-addressed staging (docs/training.md): an object is staged only when its MD5 and size equal ours; uploads
carry CRC32C (and MD5 when known), through ``services.media``, not google-cloud-storage (~150 ms of imports)."""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, TypeVar

from mlsubmit.errors import StagingError, UsageError
from mlsubmit.job.vocab import split_gcs_uri
from mlsubmit.sdist.digest import Digests, Local, digests_of, drop, keep, md5_of, opened
from mlsubmit.services.answers import need_object
from mlsubmit.services.retry import STORAGE_POLICY, RetryPolicy, call, is_transient, status_of, unresolved
from mlsubmit.services.staging import _CHUNK_UNIT, CHUNK_SIZE, StagedFile

TYPE_CHECKING = False
if TYPE_CHECKING:
    from mlsubmit.services.rest import Resource

log = logging.getLogger(__name__)

_FIELDS = "size,md5Hash,crc32c"  # all the skip check and the verification need of an object
#: progress(uri, bytes_done, bytes_total), called as an upload advances; see cli.output.progress_bar_for.
ProgressCallback = Callable[[str, int, int], None]
_T = TypeVar("_T")


@dataclass
class UploadReport:
    """What `upload` did: every package URI in job order, bytes sent, and URIs that were already there."""

    uris: list[str] = field(default_factory=list)
    bytes_sent: int = 0
    skipped: list[str] = field(default_factory=list)


def already_uploaded(existing: Mapping[str, Any] | None, digests: Digests) -> bool:
    """Whether `existing` has these bytes: size and the service's MD5 match (a CRC32C is forgeable; no MD5, no)."""
    if not existing or str(existing.get("size")) != str(digests.size):
        return False
    return bool(existing.get("md5Hash")) and existing["md5Hash"] == digests.md5


class _CountingReader:
    """A read/seek view of a file that reports progress and counts the bytes handed to the client."""

    def __init__(self, handle: IO[bytes], uri: str, total: int, progress: ProgressCallback | None) -> None:
        self._handle = handle
        self._uri = uri
        self._total = total
        self._progress = progress
        self.bytes_read = 0  # read for sending; a chunk re-read after a failure counts again

    def read(self, size: int = -1) -> bytes:
        data = self._handle.read(size)
        self.bytes_read += len(data)
        if self._progress is not None:
            self._progress(self._uri, self._handle.tell(), self._total)
        return data

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        return self._handle.seek(offset, whence)


class _GaveUp(Exception):
    """Transient failures outlasted the retry policy; `cause` is the last of them."""

    def __init__(self, cause: BaseException) -> None:
        super().__init__(str(cause))
        self.cause = cause


def _retrying(fn: Callable[[], _T], what: str, policy: RetryPolicy) -> _T:
    """`fn()`, retried on transient failures as `policy` allows (names are content-addressed: safe)."""
    try:
        return call(
            fn, what, policy, notify=lambda line: log.warning("Cloud Storage: %s", line), reason=_describe
        )
    except Exception as exc:
        if is_transient(exc):
            raise _GaveUp(exc) from exc
        raise


def _describe(exc: BaseException) -> str:
    """One line about a storage error: HTTP status and the service's message, never request headers."""
    if isinstance(exc, Exception) and status_of(exc) is not None:
        from mlsubmit.services.ml import error_details

        status, _google_status, message = error_details(exc)
        lines = message.strip().splitlines()
        return f"HTTP {status} {lines[0] if lines else ''}".rstrip()
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__


def _storage_errors() -> tuple[type[BaseException], ...]:
    """What a storage call may raise besides OSError and StagingError (imported only when one is raised)."""
    import http.client

    from googleapiclient.errors import Error  # services.rest raises its HttpError

    errors: tuple[type[BaseException], ...] = (_GaveUp, Error, http.client.HTTPException)
    auth = sys.modules.get("google.auth.exceptions")  # loaded only to refresh Application Default Credentials
    return (*errors, auth.GoogleAuthError) if auth is not None else errors


def _staging_error(exc: BaseException, local: Local, uri: str) -> StagingError:
    """Turn a storage or transport exception into a StagingError saying what to do next."""
    bucket, _ = split_gcs_uri(uri)
    failed = f"cannot upload {local.name} to {uri}"
    if isinstance(exc, _GaveUp):
        return StagingError(
            f"{failed}: Cloud Storage kept failing ({_describe(exc.cause)}); try again later."
        )
    status = status_of(exc)
    why = _describe(exc)
    advice = {
        403: f"The account needs permission storage.objects.create on bucket {bucket} (role "
        "roles/storage.objectCreator); check the bucket and your credentials.",
        401: "The access token is missing, invalid or expired; refresh CLOUDSDK_AUTH_ACCESS_TOKEN or your "
        "Application Default Credentials.",
    }
    if status in advice:
        return StagingError(f"{failed}: {why}. {advice[status]}")
    if status == 404:
        return StagingError(
            f"cannot upload {local.name}: bucket {bucket} does not exist ({why}). Create it, "
            "or pass another --staging-bucket or --job-dir."
        )
    if status is None and type(exc).__module__.startswith("google.auth"):
        return StagingError(
            f"cannot authenticate to Cloud Storage: {why}. Set CLOUDSDK_AUTH_ACCESS_TOKEN or run "
            "`gcloud auth application-default login`."
        )
    if unresolved(exc):  # nothing was sent: say it as the network problem it is
        return StagingError(
            f"{failed}: Cloud Storage's host name does not resolve ({why}): no network, no DNS, or a wrong "
            "endpoint; nothing was sent."
        )
    return StagingError(f"{failed}: {why}")


def _existing(objects: Any, bucket: str, name: str, uri: str, policy: RetryPolicy) -> dict[str, Any] | None:
    """The object's size and checksums, or None when there is none (or we may not look)."""
    from googleapiclient.errors import HttpError

    try:
        found: dict[str, Any] = _retrying(
            lambda: objects.get(bucket=bucket, object=name, fields=_FIELDS).execute(num_retries=0),
            f"checking {uri}",
            policy,
        )
    except HttpError as exc:
        if status_of(exc) == 404:  # no such object (or bucket: the upload will say which)
            return None
        if status_of(exc) == 403:
            # storage.objects.get is not part of roles/storage.objectCreator, which is enough to stage.
            log.info("cannot check whether %s is already staged (%s); uploading it", uri, _describe(exc))
            return None
        raise
    return need_object(found, f"checking {uri}")


def _upload_one(
    lean: Resource,
    staged: StagedFile,
    progress: ProgressCallback | None,
    policy: RetryPolicy,
    chunk_size: int,
    put_size: int = 0,
) -> int | None:
    """Upload one file unless it is already there; the bytes read for sending, None if skipped."""
    local, uri = staged.local, staged.uri
    assert local is not None
    digests = staged.digests or digests_of(local)
    # a vanished file named before any call
    if isinstance(local, Path) and local.stat().st_size != digests.size:
        raise StagingError(f"{local} changed after it was hashed; submit again")
    bucket, name = split_gcs_uri(uri)
    existing = _existing(lean.objects(), bucket, name, uri, policy)
    if existing and not digests.md5 and str(existing.get("size")) == str(digests.size):
        digests = digests._replace(md5=md5_of(local))  # something is there: is it ours?
        keep(local, staged.stamp, digests)
    if already_uploaded(existing, digests):
        log.info("%s is already staged with the same MD5; not uploading it again", uri)
        return None
    size = digests.size
    with opened(local) as handle:
        if isinstance(local, Path) and os.fstat(handle.fileno()).st_size != size:
            raise StagingError(f"{local} changed after it was hashed; submit again")
        reader = _CountingReader(handle, uri, size, progress)
        what = f"uploading {uri}"
        metadata = {"name": name, "crc32c": digests.crc32c}  # the service refuses bytes that do not match
        if digests.md5:
            metadata["md5Hash"] = digests.md5
        from mlsubmit.services.media import ResumableUpload, multipart_insert

        if size <= chunk_size:

            def send() -> Any:
                reader.seek(0)
                return multipart_insert(lean, bucket, metadata, reader.read(), fields=_FIELDS)

            stored = _retrying(send, what, policy)
        else:
            upload = ResumableUpload(lean, bucket, metadata, reader, size, put_size or size, fields=_FIELDS)
            stored = None
            while stored is None:
                try:
                    stored = _retrying(upload.step, what, policy)
                except Exception as exc:
                    if upload.session is not None and status_of(exc) in (404, 410):  # not a missing bucket
                        raise StagingError(
                            f"{what}: the resumable upload session is gone ({_describe(exc)}); submit again."
                        ) from exc
                    raise
    stored = need_object(stored, what)
    if str(stored.get("size")) != str(size):
        raise StagingError(
            f"{uri} holds {stored.get('size')} bytes after the upload, but {local} has {size}; submit again"
        )
    # every checksum the service reports that we know equals ours, and at least one does (a large file's MD5 is
    # not known ahead: its CRC32C is compared, and the service checked it too)
    pairs = [(stored.get("md5Hash"), digests.md5), (stored.get("crc32c"), digests.crc32c)]
    compared = [(theirs, ours) for theirs, ours in pairs if theirs and ours]
    if not compared or any(theirs != ours for theirs, ours in compared):
        raise StagingError(
            f"{uri}: the uploaded bytes do not match {local} (checksum mismatch); submit again"
        )
    if not digests.md5 and isinstance(stored.get("md5Hash"), str):
        # The service's MD5 of the bytes we just sent, which it checked against our CRC32C: ours from now on,
        # so an unchanged re-submit finds the whole set in the cache and reads nothing.
        digests = digests._replace(md5=stored["md5Hash"])
    keep(local, staged.stamp, digests)
    return reader.bytes_read


def upload(
    plan: Sequence[StagedFile],
    service: Resource,
    progress: ProgressCallback | None = None,
    retry: RetryPolicy | None = None,
    chunk_size: int | None = None,
) -> UploadReport:
    """Upload `plan`'s local files (skipping objects of the same size and MD5): multipart up to `chunk_size`."""
    policy = retry or STORAGE_POLICY
    chunk = chunk_size or CHUNK_SIZE
    put_size = chunk if chunk_size else 0  # 0: the whole rest of the file in one PUT
    if chunk % _CHUNK_UNIT:
        raise UsageError(f"the upload chunk size must be a multiple of 256 KiB, not {chunk} bytes")
    report = UploadReport(uris=[staged.uri for staged in plan])
    for staged in plan:
        if staged.local is None:
            continue
        local, uri = staged.local, staged.uri
        try:
            sent = _upload_one(service, staged, progress, policy, chunk, put_size)
        except StagingError:
            # the service contradicted our digests, maybe cached ones: hash afresh next time
            drop(staged.stamp)
            raise
        except OSError as exc:
            if exc.filename is not None:
                raise StagingError(f"cannot read {local}: {exc.strerror}") from exc
            raise _staging_error(exc, local, uri) from exc
        except _storage_errors() as exc:
            drop(staged.stamp)
            raise _staging_error(exc, local, uri) from exc
        if sent is None:
            report.skipped.append(uri)
        else:
            report.bytes_sent += sent
    return report
