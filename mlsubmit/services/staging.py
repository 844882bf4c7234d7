"""Where each package goes, decided before any network call (docs/training.md, ``--staging-layout``): ``shared``
``gs://BUCKET/mlsubmit/packages/<digest>/<name>``, or ``gcloud``'s per-job ``PREFIX/<sha256>/<name>``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from mlsubmit.errors import UsageError
from mlsubmit.job.vocab import GCS_SCHEME, is_gcs, split_gcs_uri

if TYPE_CHECKING:
    from mlsubmit.sdist.digest import Digests, Local, Stamp

#: A file up to this size goes up in one multipart request (held in memory), a larger one resumably, streamed
#: from disk in one PUT (services.storage.upload). MLSUBMIT_UPLOAD_CHUNK_MIB sets both the multipart bound and
#: a PUT size for chunked uploads (proxies that cap a request's size or time). A multiple of 256 KiB (the
#: service's rule); docs/training.md.
CHUNK_SIZE = 100 * 1024 * 1024
CHUNK_ENV = "MLSUBMIT_UPLOAD_CHUNK_MIB"
_CHUNK_UNIT = 256 * 1024
#: The layouts of --staging-layout; the first is the default.
LAYOUTS = ("shared", "gcloud")
#: Where the shared layout keeps packages inside the bucket.
SHARED_FOLDER = "mlsubmit/packages"


class StagedFile(NamedTuple):
    """A package to stage (``local`` None: a gs:// one passed through), its digests and their cache stamp."""

    local: Local | None
    uri: str
    digests: Digests | None = None
    stamp: Stamp | None = None


def chunk_size_from(env: Mapping[str, str]) -> int | None:
    """MLSUBMIT_UPLOAD_CHUNK_MIB (whole MiB, 1-1024) in bytes; None when unset (storage.upload decides)."""
    if not (value := (env.get(CHUNK_ENV) or "").strip()):
        return None
    if not value.isdigit() or not 1 <= int(value) <= 1024:
        raise UsageError(
            f"{CHUNK_ENV}={value[:20]!r}: give a whole number of MiB from 1 to 1024 (e.g. 100), or unset it"
        )
    return int(value) * 1024 * 1024


def _read_digests(path: Local, also: Any = None, cache_dir: Path | None = None) -> Digests:
    from mlsubmit.sdist.digest import CACHE_MIN_SIZE, digests_of  # only with a local file to stage

    try:
        # A large file's MD5 is computed from the bytes the upload reads anyway (or when an object is found).
        md5 = not isinstance(path, Path) or path.stat().st_size < CACHE_MIN_SIZE
        return digests_of(path, also=also, cache_dir=cache_dir, md5=md5)
    except OSError as exc:
        raise UsageError(f"{path}: cannot be read ({exc.strerror})") from exc


def plan_staging(
    packages: Sequence[str | Local],
    prefix: str | None,
    layout: str = "shared",
    digest_cache: Path | None = None,
) -> list[StagedFile]:
    """Where each package goes (module docstring): gs:// ones, then local files (each read at most once)."""
    if layout not in LAYOUTS:
        raise UsageError(f"--staging-layout {layout}: use one of {', '.join(LAYOUTS)}")
    remote = [StagedFile(None, p) for p in packages if isinstance(p, str) and is_gcs(p)]
    local = [Path(p) if isinstance(p, str) else p for p in packages if not (isinstance(p, str) and is_gcs(p))]
    if not local:
        return remote
    if prefix is None:
        raise UsageError(
            "local packages must be uploaded, but there is no staging location: "
            "pass --staging-bucket gs://BUCKET or --job-dir gs://BUCKET/PATH"
        )
    by_name: dict[str, list[Local]] = {}
    for path in local:
        by_name.setdefault(path.name, []).append(path)
    if clashes := [paths for paths in by_name.values() if len(paths) > 1]:
        listed = "; ".join(" and ".join(str(p) for p in paths) for paths in clashes)
        raise UsageError(
            "two packages have the same file name and would overwrite each other in Cloud Storage: "
            f"{listed}. Rename one of them."
        )
    if layout == "gcloud":
        import hashlib

        together = hashlib.sha256()  # gcloud's rule: one digest over the files' bytes, in order
        digests = [_read_digests(path, also=together) for path in local]
        folder = f"{prefix.rstrip('/')}/{together.hexdigest()}/"
        return remote + [
            StagedFile(path, folder + path.name, d) for path, d in zip(local, digests, strict=True)
        ]
    from mlsubmit.sdist.digest import Held, stamp

    bucket, _ = split_gcs_uri(prefix)
    staged = []
    for path in local:
        taken = stamp(path, digest_cache)
        if isinstance(path, Held):  # its address is known; its digests are taken when the upload needs them
            d, content = None, path.content
        else:
            d = _read_digests(path, cache_dir=digest_cache)
            content = d.content
        uri = f"{GCS_SCHEME}{bucket}/{SHARED_FOLDER}/{content}/{path.name}"
        staged.append(StagedFile(path, uri, d, taken))
    return remote + staged
