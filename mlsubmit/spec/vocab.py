"""The one copy of the words several domains share: Cloud Storage URLs, the project lookup, the job-id label.

Pure: no I/O, no imports beyond the standard library and ``errors``.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from pathlib import Path

from mlsubmit.errors import UsageError

GCS_SCHEME = "gs://"
# Bucket names: https://cloud.google.com/storage/docs/buckets#naming (dots allowed, 3-222 chars).
_BUCKET = re.compile(r"[a-z0-9][a-z0-9._-]{1,220}[a-z0-9]")


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


def project_from_flags(flag: str | None, env: Mapping[str, str]) -> str | None:
    """--project, else CLOUDSDK_CORE_PROJECT, else GOOGLE_CLOUD_PROJECT; None when none is set (ADC is asked later)."""
    return flag or env.get("CLOUDSDK_CORE_PROJECT") or env.get("GOOGLE_CLOUD_PROJECT") or None


JOB_ID_LABEL = "mlsubmit_job_id"  # underscore, not '-': list filters parse `labels.mlsubmit_job_id` plainly


def job_id_label(job_id: str) -> str:
    """The label value naming a job id: lowercased (Vertex labels are lowercase), at most 63 characters.

    Long ids keep a hash of the exact id so two ids sharing a 54-character prefix still differ. Lowercasing can
    make two ids share a label; lookups therefore also compare ``displayName`` (see vertex_api).
    """
    value = job_id.lower()
    if len(value) <= 63:
        return value
    return f"{value[:54]}-{hashlib.sha256(job_id.encode()).hexdigest()[:8]}"
