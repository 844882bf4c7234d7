"""Content-addressed staging of trainer packages to Cloud Storage (REFERENCE.md "Packaging and staging").

Layout as gcloud (command_lib/ml_engine/jobs_prep.py, uploads.py): `PREFIX/<sha256 of the files>/<name>`
where PREFIX is `gs://STAGING_BUCKET/JOB/` or `JOB_DIR/packages/`. Unlike gcloud, an object that is already
there with the same checksum is not sent again, so re-submitting unchanged code uploads zero bytes.

Planning is pure and runs before any network call; `upload` talks to Cloud Storage only through the
google.cloud.storage Client it is given.
"""

from __future__ import annotations

import base64
import hashlib
import importlib
import logging
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, NamedTuple

from mlsubmit import __version__
from mlsubmit.errors import StagingError, UsageError

log = logging.getLogger(__name__)

GCS_SCHEME = "gs://"
#: Resumable-upload chunk: files above 8 MiB go in chunks of this size, so memory stays flat and a dropped
#: connection costs one chunk. Must be a multiple of 256 KiB (the service's rule).
CHUNK_SIZE = 16 * 1024 * 1024
_READ_BUFFER = 1024 * 1024
# Bucket names: https://cloud.google.com/storage/docs/buckets#naming (dots allowed, 3-222 chars).
_BUCKET = re.compile(r"[a-z0-9][a-z0-9._-]{1,220}[a-z0-9]")

#: progress(uri, bytes_done, bytes_total), called as an upload advances; see upload_progress.ProgressBar.
ProgressCallback = Callable[[str, int, int], None]


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


@dataclass(frozen=True)
class RetryPolicy:
    """Bounded exponential backoff for 408/429/5xx and dropped connections (per request or chunk)."""

    initial: float = 1.0
    maximum: float = 30.0
    multiplier: float = 2.0
    deadline: float = 300.0  # total seconds one request may spend retrying


def split_gcs_uri(uri: str) -> tuple[str, str]:
    """Split `gs://BUCKET/OBJECT` into (BUCKET, OBJECT); OBJECT may be empty."""
    if not uri.startswith(GCS_SCHEME):
        raise UsageError(f"{uri} is not a Cloud Storage URL; expected gs://BUCKET/PATH")
    bucket, _, name = uri[len(GCS_SCHEME) :].partition("/")
    if not _BUCKET.fullmatch(bucket):
        raise UsageError(f"{uri}: {bucket!r} is not a valid bucket name")
    return bucket, name


def staging_prefix(staging_bucket: str | None, job_id: str, job_dir: str | None) -> str | None:
    """The folder packages are staged under: `gs://BUCKET/JOB/`, else `JOB_DIR/packages/`, else None.

    Both given: the bucket wins, as in gcloud (jobs_prep.GetStagingLocation).
    """
    if staging_bucket:
        bucket, name = split_gcs_uri(staging_bucket)
        if name.strip("/"):
            raise UsageError(
                f"--staging-bucket {staging_bucket}: give a bucket only (gs://{bucket}); "
                "to stage under a folder, use --job-dir instead"
            )
        return f"{GCS_SCHEME}{bucket}/{job_id}/"
    if job_dir:
        bucket, name = split_gcs_uri(job_dir)
        folder = name.strip("/")
        return f"{GCS_SCHEME}{bucket}/{folder + '/' if folder else ''}packages/"
    return None


def is_gcs(package: str | Path) -> bool:
    """Whether a --packages entry is already in Cloud Storage."""
    return isinstance(package, str) and package.startswith(GCS_SCHEME)


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


def _module(name: str) -> Any:
    """Import a heavy Google module on first use; typed Any because its annotations are incomplete."""
    return importlib.import_module(name)


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode("ascii")


def _crc32c_of(path: Path) -> str:
    """Base64 big-endian CRC32C of a file, the form Cloud Storage reports in `crc32c`."""
    checksum = _module("google_crc32c").Checksum()  # comes with google-cloud-storage; C-accelerated
    with open(path, "rb") as handle:
        while chunk := handle.read(_READ_BUFFER):
            checksum.update(chunk)
    return _b64(checksum.digest())


def _md5_of(path: Path) -> str:
    digest = hashlib.md5(usedforsecurity=False)
    with open(path, "rb") as handle:
        while chunk := handle.read(_READ_BUFFER):
            digest.update(chunk)
    return _b64(digest.digest())


def already_uploaded(existing: Any, path: Path, size: int) -> bool:
    """Whether the object `existing` (a Blob or None) holds exactly the bytes of `path`.

    Compares crc32c (cheap), or md5 when the object has no crc32c.
    """
    if existing is None or existing.size != size:
        return False
    if existing.crc32c:
        return bool(existing.crc32c == _crc32c_of(path))
    if existing.md5_hash:
        return bool(existing.md5_hash == _md5_of(path))
    return False


class _CountingReader:
    """A read/seek/tell view of a file that reports progress and counts the bytes handed to the client."""

    def __init__(self, handle: IO[bytes], uri: str, total: int, progress: ProgressCallback | None) -> None:
        self._handle = handle
        self._uri = uri
        self._total = total
        self._progress = progress
        self.bytes_read = 0  # read for sending; a chunk re-read after a dropped connection counts again

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


def _retry_object(policy: RetryPolicy) -> Any:
    """A google.api_core Retry for `policy`, with the storage library's own idea of what is transient.

    Retrying uploads unconditionally is safe here: object names are content-addressed, so a repeated
    write stores the same bytes under the same name.
    """
    from google.api_core.retry import Retry

    # The storage library's own list of transient failures (408, 429, 5xx, dropped connections).
    from google.cloud.storage.retry import _should_retry

    def log_retry(exc: Exception) -> None:
        log.warning("Cloud Storage: transient error, retrying: %s", _describe(exc))

    return Retry(
        predicate=_should_retry,
        initial=policy.initial,
        maximum=policy.maximum,
        multiplier=policy.multiplier,
        timeout=policy.deadline,
        on_error=log_retry,
    )


def _describe(exc: BaseException) -> str:
    """A one-line description of a storage error, without request headers (they hold the token)."""
    code = getattr(exc, "code", None)
    message = getattr(exc, "message", None) or str(exc) or type(exc).__name__
    first_line = str(message).strip().splitlines()[0] if str(message).strip() else type(exc).__name__
    return f"{int(code)} {first_line}" if code else first_line


def _staging_error(exc: BaseException, local: Path, uri: str) -> StagingError:
    """Turn a storage or transport exception into a StagingError saying what to do next."""
    from google.api_core import exceptions as gexc

    bucket, _ = split_gcs_uri(uri)
    if isinstance(exc, gexc.Forbidden | gexc.Unauthorized):
        return StagingError(
            f"cannot upload {local.name} to {uri}: {_describe(exc)}. The account needs permission "
            f"storage.objects.create on bucket {bucket} (role roles/storage.objectCreator); check the "
            "bucket and your credentials."
        )
    if isinstance(exc, gexc.NotFound):
        return StagingError(
            f"cannot upload {local.name}: bucket {bucket} does not exist ({_describe(exc)}). Create it, "
            "or pass another --staging-bucket or --job-dir."
        )
    if isinstance(exc, gexc.RetryError):
        cause = exc.cause if exc.cause is not None else exc
        return StagingError(
            f"cannot upload {local.name} to {uri}: Cloud Storage kept failing ({_describe(cause)}); "
            "try again later."
        )
    return StagingError(f"cannot upload {local.name} to {uri}: {_describe(exc)}")


def upload(
    plan: Sequence[StagedFile],
    client: Any,
    progress: ProgressCallback | None = None,
    retry: RetryPolicy | None = None,
) -> UploadReport:
    """Upload the local files of `plan` through the google.cloud.storage `client`; return what happened.

    An object that already exists with the same size and checksum is skipped. Files above 8 MiB go up
    resumably in CHUNK_SIZE chunks, streamed from disk; every upload is verified with CRC32C.
    """
    from google.api_core import exceptions as gexc
    from google.auth import exceptions as auth_exc
    from google.cloud.storage.exceptions import DataCorruption

    retry_object = _retry_object(retry or RetryPolicy())
    report = UploadReport(uris=[staged.uri for staged in plan])
    for staged in plan:
        if staged.local is None:
            continue
        local, uri = staged.local, staged.uri
        bucket_name, object_name = split_gcs_uri(uri)
        try:
            size = local.stat().st_size
            bucket = client.bucket(bucket_name)
            existing = bucket.get_blob(object_name, retry=retry_object)
            if already_uploaded(existing, local, size):
                log.info("%s is already staged with the same checksum; not uploading it again", uri)
                report.skipped.append(uri)
                continue
            blob = bucket.blob(object_name, chunk_size=CHUNK_SIZE)
            with open(local, "rb") as handle:
                reader = _CountingReader(handle, uri, size, progress)
                try:
                    blob.upload_from_file(reader, size=size, checksum="crc32c", retry=retry_object)
                finally:
                    report.bytes_sent += reader.bytes_read
            if blob.size is not None and int(blob.size) != size:
                raise StagingError(
                    f"{uri} holds {blob.size} bytes after the upload, but {local} has {size}; submit again"
                )
        except StagingError:
            raise
        except DataCorruption as exc:
            raise StagingError(
                f"{uri}: the uploaded bytes do not match {local} (CRC32C mismatch); submit again"
            ) from exc
        except OSError as exc:
            if exc.filename is not None:
                raise StagingError(f"cannot read {local}: {exc.strerror}") from exc
            raise _staging_error(exc, local, uri) from exc
        except (gexc.GoogleAPIError, ValueError) as exc:
            raise _staging_error(exc, local, uri) from exc
        except auth_exc.GoogleAuthError as exc:
            raise StagingError(
                f"cannot authenticate to Cloud Storage: {exc}. Set CLOUDSDK_AUTH_ACCESS_TOKEN or run "
                "`gcloud auth application-default login`."
            ) from exc
    return report


def make_storage_client(project: str | None, credentials: Any | None = None) -> Any:
    """A google.cloud.storage Client for `project`, with mlsubmit's user agent.

    With STORAGE_EMULATOR_HOST set it talks to the emulator anonymously. Otherwise it uses `credentials`
    if given, else CLOUDSDK_AUTH_ACCESS_TOKEN, else Application Default Credentials.
    """
    from google.cloud import storage

    info = _module("google.api_core.client_info").ClientInfo(user_agent=f"mlsubmit/{__version__}")
    if os.environ.get("STORAGE_EMULATOR_HOST"):
        anonymous = _module("google.auth.credentials").AnonymousCredentials()
        return storage.Client(project=project, credentials=anonymous, client_info=info)
    if credentials is None:
        credentials = _default_credentials()
    return storage.Client(project=project, credentials=credentials, client_info=info)


def _default_credentials() -> Any:
    token = os.environ.get("CLOUDSDK_AUTH_ACCESS_TOKEN")
    if token:
        return _module("google.oauth2.credentials").Credentials(token)
    import google.auth
    from google.auth.exceptions import DefaultCredentialsError

    try:
        credentials, _ = google.auth.default(scopes=["https://www.googleapis.com/auth/devstorage.read_write"])
    except DefaultCredentialsError as exc:
        raise StagingError(
            "no credentials for Cloud Storage: set CLOUDSDK_AUTH_ACCESS_TOKEN, or run "
            f"`gcloud auth application-default login` ({exc})"
        ) from exc
    return credentials
