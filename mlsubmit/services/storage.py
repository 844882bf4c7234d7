"""Content-addressed staging of trainer packages to Cloud Storage (REFERENCE.md "Packaging and staging").

Layout as gcloud (command_lib/ml_engine/jobs_prep.py, uploads.py): `PREFIX/<sha256 of the files>/<name>`
where PREFIX is `gs://STAGING_BUCKET/JOB/` or `JOB_DIR/packages/`. Unlike gcloud, an object that is already
there with the same checksum is not sent again, so re-submitting unchanged code uploads zero bytes.

Planning is pure and runs before any network call; `upload` talks to Cloud Storage only through the
storage v1 service it is given: googleapiclient built from the static discovery document, sharing the ml
API's authorized http (`make_storage_service`). Not google-cloud-storage: importing it and google-api-core
cost ~150 ms of a ~450 ms submit (issue 3), for two calls, objects.get and objects.insert.
"""

from __future__ import annotations

import base64
import hashlib
import logging
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, NamedTuple, TypeVar

from mlsubmit.errors import StagingError, UsageError
from mlsubmit.services.retry import STORAGE_POLICY, RetryPolicy, is_transient, status_of
from mlsubmit.spec.vocab import is_gcs, split_gcs_uri

log = logging.getLogger(__name__)

#: Files up to this size go up in one multipart request (as google-cloud-storage does); larger ones resumably.
MULTIPART_MAX = 8 * 1024 * 1024
#: Resumable-upload chunk: files above MULTIPART_MAX go in chunks of this size, so memory stays flat and a
#: dropped connection costs one chunk. Must be a multiple of 256 KiB (the service's rule).
CHUNK_SIZE = 16 * 1024 * 1024
_FIELDS = "size,md5Hash,crc32c"  # all the skip check and the verification need of an object
_MIME_TYPE = "application/octet-stream"
_READ_BUFFER = 1024 * 1024

#: progress(uri, bytes_done, bytes_total), called as an upload advances; see upload_progress.ProgressBar.
ProgressCallback = Callable[[str, int, int], None]
_T = TypeVar("_T")


class StagedFile(NamedTuple):
    """One package of the job: `local` is None for a gs:// package that is passed through as is."""

    local: Path | None
    uri: str


@dataclass
class UploadReport:
    """What `upload` did: every package URI in job order, bytes sent, and URIs that were already there."""

    uris: list[str] = field(default_factory=list)
    bytes_sent: int = 0
    skipped: list[str] = field(default_factory=list)


def check_local_packages(paths: Sequence[str | Path]) -> list[Path]:
    """Check every local package file before any network call; returns them as Paths (gs:// ones skipped).

    Reports all the unusable files at once.
    """
    problems: list[str] = []
    local: list[Path] = []
    for entry in paths:
        if is_gcs(entry):
            continue
        path = Path(entry)
        if not path.exists():
            problems.append(f"{path}: no such file")
        elif not path.is_file():
            problems.append(f"{path}: not a file (pass built packages, e.g. dist/trainer-1.0.tar.gz)")
        else:
            try:
                with open(path, "rb"):
                    pass
            except OSError as exc:
                problems.append(f"{path}: cannot be read ({exc.strerror})")
        local.append(path)
    if problems:
        raise UsageError("--packages: " + "; ".join(problems))
    return local


def _sha256_of_files(paths: Sequence[Path]) -> str:
    """One digest over the files' contents in order, as gcloud's uploads.UploadFiles computes it."""
    digest = hashlib.sha256()
    for path in paths:
        try:
            with open(path, "rb") as handle:
                while chunk := handle.read(_READ_BUFFER):
                    digest.update(chunk)
        except OSError as exc:
            raise UsageError(f"{path}: cannot be read ({exc.strerror})") from exc
    return digest.hexdigest()


def plan_staging(packages: Sequence[str | Path], prefix: str | None) -> list[StagedFile]:
    """Decide where each package goes: gs:// entries pass through first, in order; local files go to
    `PREFIX/<sha256 of all local files>/<file name>`, in order. Reads local files; no network.
    """
    remote = [StagedFile(None, str(p)) for p in packages if is_gcs(p)]
    local = [Path(p) for p in packages if not is_gcs(p)]
    if not local:
        return remote
    if prefix is None:
        raise UsageError(
            "local packages must be uploaded, but there is no staging location: "
            "pass --staging-bucket gs://BUCKET or --job-dir gs://BUCKET/PATH"
        )
    by_name: dict[str, list[Path]] = {}
    for path in local:
        by_name.setdefault(path.name, []).append(path)
    clashes = [paths for paths in by_name.values() if len(paths) > 1]
    if clashes:
        listed = "; ".join(" and ".join(str(p) for p in paths) for paths in clashes)
        raise UsageError(
            "two packages have the same file name and would overwrite each other in Cloud Storage: "
            f"{listed}. Rename one of them."
        )
    folder = f"{prefix.rstrip('/')}/{_sha256_of_files(local)}/"
    return remote + [StagedFile(path, folder + path.name) for path in local]


# --- upload -----------------------------------------------------------------------------------------------


def _crc32c_of(path: Path) -> str:
    """Base64 big-endian CRC32C of a file, the form Cloud Storage reports in `crc32c` (C-accelerated)."""
    import google_crc32c

    crc = 0
    with open(path, "rb") as handle:
        while chunk := handle.read(_READ_BUFFER):
            crc = google_crc32c.extend(crc, chunk)
    return base64.b64encode(int(crc).to_bytes(4, "big")).decode("ascii")


def _md5_of(path: Path) -> str:
    digest = hashlib.md5(usedforsecurity=False)
    with open(path, "rb") as handle:
        while chunk := handle.read(_READ_BUFFER):
            digest.update(chunk)
    return base64.b64encode(digest.digest()).decode("ascii")


def already_uploaded(
    existing: Mapping[str, Any] | None, path: Path, size: int, crc32c: str | None = None
) -> bool:
    """Whether the object resource `existing` (None: no object) holds exactly the bytes of `path`.

    Compares size, then crc32c (`crc32c` is the file's, if already known), or md5 when the object has no
    crc32c. An object reporting neither checksum does not count as the same.
    """
    if not existing or str(existing.get("size")) != str(size):
        return False
    if existing.get("crc32c"):
        return bool(existing["crc32c"] == (crc32c or _crc32c_of(path)))
    if existing.get("md5Hash"):
        return bool(existing["md5Hash"] == _md5_of(path))
    return False


class _CountingReader:
    """A read/seek/tell view of a file that reports progress and counts the bytes handed to the client."""

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

    def tell(self) -> int:
        return self._handle.tell()

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        return self._handle.seek(offset, whence)


def _media(reader: _CountingReader, size: int) -> Any:
    """The media of an objects.insert: one multipart request up to 8 MiB, else resumable CHUNK_SIZE chunks."""
    from googleapiclient.http import MediaIoBaseUpload

    class ChunkReads(MediaIoBaseUpload):  # type: ignore[misc]
        # Chunks go out as bytes read with getbytes(), not as a slice of the stream: httplib2 silently
        # re-sends a request whose keep-alive connection turned out stale, and a half-read stream would
        # then go out short. One chunk in memory at a time keeps memory flat all the same.
        def has_stream(self) -> bool:
            return False

    return ChunkReads(reader, mimetype=_MIME_TYPE, chunksize=CHUNK_SIZE, resumable=size > MULTIPART_MAX)


class _GaveUp(Exception):
    """Transient failures outlasted the retry policy; `cause` is the last of them."""

    def __init__(self, cause: BaseException) -> None:
        super().__init__(str(cause))
        self.cause = cause


def _status(exc: BaseException) -> int | None:
    """The HTTP status of a googleapiclient HttpError, else None."""
    return status_of(exc)


def _is_transient(exc: BaseException) -> bool:
    """408/429/5xx answers and dropped or refused connections (services.retry.is_transient)."""
    return is_transient(exc)


def _retrying(call: Callable[[], _T], what: str, policy: RetryPolicy) -> _T:
    """`call()`, retried on transient failures as `policy` allows (services.retry.call); each retry is logged.

    Retrying uploads unconditionally is safe here: object names are content-addressed, so a repeated
    write stores the same bytes under the same name. A resumable chunk is retried from what the service
    confirms it has, within the policy's deadline.
    """
    from mlsubmit.services import retry

    try:
        return retry.call(
            call,
            what,
            policy,
            notify=lambda line: log.warning("Cloud Storage: %s", line),
            reason=_describe,
        )
    except Exception as exc:
        if is_transient(exc):
            raise _GaveUp(exc) from exc
        raise


def _describe(exc: BaseException) -> str:
    """One line about a storage error: HTTP status and the service's message, never request headers."""
    if isinstance(exc, Exception) and _status(exc) is not None:
        from mlsubmit.services.ml import error_details

        status, _google_status, message = error_details(exc)
        lines = message.strip().splitlines()
        return f"HTTP {status} {lines[0] if lines else ''}".rstrip()
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__


def _storage_errors() -> tuple[type[BaseException], ...]:
    """What a storage call may raise besides OSError and StagingError (imported only when one is raised)."""
    import http.client

    import httplib2
    from google.auth.exceptions import GoogleAuthError
    from googleapiclient.errors import Error

    return (_GaveUp, Error, httplib2.HttpLib2Error, http.client.HTTPException, GoogleAuthError)


def _staging_error(exc: BaseException, local: Path, uri: str) -> StagingError:
    """Turn a storage or transport exception into a StagingError saying what to do next."""
    bucket, _ = split_gcs_uri(uri)
    if isinstance(exc, _GaveUp):
        return StagingError(
            f"cannot upload {local.name} to {uri}: Cloud Storage kept failing ({_describe(exc.cause)}); "
            "try again later."
        )
    status = _status(exc)
    if status == 403:
        return StagingError(
            f"cannot upload {local.name} to {uri}: {_describe(exc)}. The account needs permission "
            f"storage.objects.create on bucket {bucket} (role roles/storage.objectCreator); check the "
            "bucket and your credentials."
        )
    if status == 401:
        return StagingError(
            f"cannot upload {local.name} to {uri}: {_describe(exc)}. The access token is missing, invalid "
            "or expired; refresh CLOUDSDK_AUTH_ACCESS_TOKEN or your Application Default Credentials."
        )
    if status == 404:
        return StagingError(
            f"cannot upload {local.name}: bucket {bucket} does not exist ({_describe(exc)}). Create it, "
            "or pass another --staging-bucket or --job-dir."
        )
    if status is None and type(exc).__module__.startswith("google.auth"):
        return StagingError(
            f"cannot authenticate to Cloud Storage: {_describe(exc)}. Set CLOUDSDK_AUTH_ACCESS_TOKEN or run "
            "`gcloud auth application-default login`."
        )
    return StagingError(f"cannot upload {local.name} to {uri}: {_describe(exc)}")


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
        if _status(exc) == 404:  # no such object (or bucket: the upload will say which)
            return None
        if _status(exc) == 403:
            # storage.objects.get is not part of roles/storage.objectCreator, which is enough to stage.
            log.info("cannot check whether %s is already staged (%s); uploading it", uri, _describe(exc))
            return None
        raise
    return found


def _insert(
    objects: Any, bucket: str, name: str, media: Any, crc32c: str, what: str, policy: RetryPolicy
) -> Any:
    """objects.insert the media; returns the stored object's size and checksums.

    The CRC32C goes along in the metadata, so the service itself refuses bytes that arrive damaged.
    """

    def request() -> Any:
        body = {"name": name, "crc32c": crc32c}
        return objects.insert(bucket=bucket, body=body, media_body=media, fields=_FIELDS)

    if not media.resumable():
        return _retrying(lambda: request().execute(num_retries=0), what, policy)
    from googleapiclient.errors import HttpError

    pending = request()  # a failed chunk is retried from what the service confirms it has (status query)
    stored = None
    while stored is None:
        try:
            _progress, stored = _retrying(lambda: pending.next_chunk(num_retries=0), what, policy)
        except HttpError as exc:
            if pending.resumable_uri and _status(exc) in (404, 410):  # not a missing bucket
                raise StagingError(
                    f"{what}: the resumable upload session is gone ({_describe(exc)}); submit again."
                ) from exc
            raise
    return stored


def _upload_one(
    objects: Any, local: Path, uri: str, progress: ProgressCallback | None, policy: RetryPolicy
) -> int | None:
    """Upload one file unless it is already there; returns the bytes read for sending, None if skipped."""
    bucket, name = split_gcs_uri(uri)
    size = local.stat().st_size
    crc32c = _crc32c_of(local)
    if already_uploaded(_existing(objects, bucket, name, uri, policy), local, size, crc32c):
        log.info("%s is already staged with the same checksum; not uploading it again", uri)
        return None
    with open(local, "rb") as handle:
        reader = _CountingReader(handle, uri, size, progress)
        stored = _insert(objects, bucket, name, _media(reader, size), crc32c, f"uploading {uri}", policy)
    if str(stored.get("size")) != str(size):
        raise StagingError(
            f"{uri} holds {stored.get('size')} bytes after the upload, but {local} has {size}; submit again"
        )
    if not already_uploaded(stored, local, size, crc32c):
        raise StagingError(f"{uri}: the uploaded bytes do not match {local} (CRC32C mismatch); submit again")
    return reader.bytes_read


def upload(
    plan: Sequence[StagedFile],
    service: Any,
    progress: ProgressCallback | None = None,
    retry: RetryPolicy | None = None,
) -> UploadReport:
    """Upload the local files of `plan` through the storage v1 `service` (make_storage_service); report it.

    An object that already exists with the same size and checksum is skipped. Files above 8 MiB go up
    resumably in CHUNK_SIZE chunks, streamed from disk; every upload is verified with CRC32C.
    """
    policy = retry or STORAGE_POLICY
    report = UploadReport(uris=[staged.uri for staged in plan])
    objects = service.objects()
    for staged in plan:
        if staged.local is None:
            continue
        local, uri = staged.local, staged.uri
        try:
            sent = _upload_one(objects, local, uri, progress, policy)
        except StagingError:
            raise
        except OSError as exc:
            if exc.filename is not None:
                raise StagingError(f"cannot read {local}: {exc.strerror}") from exc
            raise _staging_error(exc, local, uri) from exc
        except _storage_errors() as exc:
            raise _staging_error(exc, local, uri) from exc
        if sent is None:
            report.skipped.append(uri)
        else:
            report.bytes_sent += sent
    return report
