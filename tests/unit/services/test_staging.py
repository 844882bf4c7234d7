"""Staging plan (pure): prefix rules, both layouts, duplicates, pass-through, the skip rule; no network."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest

from mlsubmit.errors import ExitStatus, UsageError
from mlsubmit.job.vocab import split_gcs_uri, staging_prefix
from mlsubmit.sdist.digest import digests_of
from mlsubmit.services.staging import StagedFile, chunk_size_from, plan_staging
from mlsubmit.services.storage import already_uploaded


@pytest.mark.parametrize(
    ("bucket", "job_dir", "expected"),
    [
        ("gs://stage", None, "gs://stage/job_1/"),
        ("gs://stage/", None, "gs://stage/job_1/"),
        (None, "gs://out/runs/7", "gs://out/runs/7/packages/"),
        (None, "gs://out/runs/7/", "gs://out/runs/7/packages/"),
        (None, "gs://out", "gs://out/packages/"),
        (None, "gs://out/", "gs://out/packages/"),
        ("gs://stage", "gs://out/runs", "gs://stage/job_1/"),  # both: the bucket wins
        (None, None, None),
    ],
)
def test_staging_prefix(bucket: str | None, job_dir: str | None, expected: str | None) -> None:
    assert staging_prefix(bucket, "job_1", job_dir) == expected


@pytest.mark.parametrize(
    ("bucket", "job_dir", "message"),
    [
        ("stage", None, "not a Cloud Storage URL"),
        ("gs://stage/sub", None, "bucket only"),
        ("gs://Bad_Bucket", None, "not a valid bucket name"),
        (None, "/local/dir", "not a Cloud Storage URL"),
    ],
)
def test_staging_prefix_refuses_bad_locations(bucket: str | None, job_dir: str | None, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        staging_prefix(bucket, "job_1", job_dir)


def test_split_gcs_uri() -> None:
    assert split_gcs_uri("gs://b-1/a/b/c.tar.gz") == ("b-1", "a/b/c.tar.gz")
    assert split_gcs_uri("gs://b-1") == ("b-1", "")


def write(path: Path, data: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def test_gcloud_layout_puts_local_files_in_one_folder_named_by_the_sha256_of_them_all(tmp_path: Path) -> None:
    first = write(tmp_path / "a" / "extra-1.0.tar.gz", b"extra")
    second = write(tmp_path / "b" / "trainer-0.0.0.tar.gz", b"trainer")
    digest = hashlib.sha256(b"extra" + b"trainer").hexdigest()  # one digest over all files, as gcloud

    plan = plan_staging([first, second], "gs://stage/job_1/", "gcloud")

    assert [(s.local, s.uri) for s in plan] == [
        (first, f"gs://stage/job_1/{digest}/extra-1.0.tar.gz"),
        (second, f"gs://stage/job_1/{digest}/trainer-0.0.0.tar.gz"),
    ]
    assert [s.digests for s in plan] == [digests_of(first), digests_of(second)]


@pytest.mark.parametrize(
    "prefix",
    ["gs://stage/job_1/", "gs://stage/job_2/", "gs://stage/runs/7/packages/", "gs://stage/packages/"],
)
def test_shared_layout_names_each_file_by_its_own_digest_whatever_the_job(
    tmp_path: Path, prefix: str
) -> None:
    first = write(tmp_path / "a" / "extra-1.0.tar.gz", b"extra")
    second = write(tmp_path / "b" / "trainer-0.0.0.tar.gz", b"trainer")

    plan = plan_staging([first, second], prefix)  # the default layout

    assert [s.uri for s in plan] == [
        f"gs://stage/mlsubmit/packages/{hashlib.sha256(b'extra').hexdigest()}/extra-1.0.tar.gz",
        f"gs://stage/mlsubmit/packages/{hashlib.sha256(b'trainer').hexdigest()}/trainer-0.0.0.tar.gz",
    ]


def test_an_unknown_layout_is_refused(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="--staging-layout flat: use one of shared, gcloud"):
        plan_staging([write(tmp_path / "t.tar.gz", b"t")], "gs://stage/j/", "flat")


@pytest.mark.parametrize(
    ("value", "expected"),
    [(None, None), ("", None), ("8", 8 << 20), (" 256 ", 256 << 20), ("1024", 1024 << 20)],
)
def test_chunk_size_from_the_environment(value: str | None, expected: int) -> None:
    env = {} if value is None else {"MLSUBMIT_UPLOAD_CHUNK_MIB": value}
    assert chunk_size_from(env) == expected


@pytest.mark.parametrize("value", ["0", "1025", "1.5", "-1", "16MB", "x" * 100])
def test_a_bad_chunk_size_is_refused_with_its_name(value: str) -> None:
    with pytest.raises(UsageError, match="MLSUBMIT_UPLOAD_CHUNK_MIB") as raised:
        chunk_size_from({"MLSUBMIT_UPLOAD_CHUNK_MIB": value})
    assert len(str(raised.value)) < 200


def test_plan_passes_gcs_packages_through_first_in_order(tmp_path: Path) -> None:
    local = write(tmp_path / "trainer-0.0.0.tar.gz", b"t")

    plan = plan_staging(["gs://x/z.whl", str(local), "gs://x/a.tar.gz"], "gs://stage/j/")

    assert [s.uri for s in plan][:2] == ["gs://x/z.whl", "gs://x/a.tar.gz"]
    assert [s.local for s in plan] == [None, None, local]
    assert plan[2].uri.endswith("/trainer-0.0.0.tar.gz")


def test_plan_hash_changes_with_content(tmp_path: Path) -> None:
    package = write(tmp_path / "t.tar.gz", b"one")
    before = plan_staging([package], "gs://stage/j/")
    package.write_bytes(b"two")

    assert plan_staging([package], "gs://stage/j/") != before


def test_plan_with_only_gcs_packages_needs_no_staging_location() -> None:
    assert plan_staging(["gs://x/a.tar.gz"], None) == [StagedFile(None, "gs://x/a.tar.gz")]


def test_plan_refuses_local_files_without_a_staging_location(tmp_path: Path) -> None:
    package = write(tmp_path / "t.tar.gz", b"t")

    with pytest.raises(UsageError, match=r"--staging-bucket.*--job-dir") as raised:
        plan_staging([package], None)
    assert raised.value.exit_status == ExitStatus.USAGE


def test_plan_refuses_two_local_files_with_one_name_naming_both(tmp_path: Path) -> None:
    first = write(tmp_path / "a" / "trainer.tar.gz", b"1")
    second = write(tmp_path / "b" / "trainer.tar.gz", b"2")

    with pytest.raises(UsageError) as raised:
        plan_staging([first, second], "gs://stage/j/")
    assert str(first) in str(raised.value)
    assert str(second) in str(raised.value)


CONTENT = b"hello world"
CRC32C = "yZRlqg=="  # base64 of the big-endian CRC32C of CONTENT
MD5 = "XrY7u+Ae7tCTyyK7j1rNww=="


def resource(size: int, crc32c: str | None = None, md5: str | None = None) -> dict[str, Any]:
    """An objects.get answer with fields=size,md5Hash,crc32c (size is a string in the JSON API)."""
    found: dict[str, Any] = {"size": str(size)}
    if crc32c:
        found["crc32c"] = crc32c
    if md5:
        found["md5Hash"] = md5
    return found


@pytest.mark.parametrize(
    ("existing", "same"),
    [
        (None, False),
        (resource(len(CONTENT), md5=MD5), True),
        (resource(len(CONTENT), crc32c=CRC32C, md5=MD5), True),
        # A CRC32C is forgeable for other content of the same size: never enough on its own.
        (resource(len(CONTENT), crc32c=CRC32C), False),
        (resource(len(CONTENT), crc32c=CRC32C, md5="AAAAAAAAAAAAAAAAAAAAAA=="), False),
        (resource(len(CONTENT), md5="AAAAAAAAAAAAAAAAAAAAAA=="), False),
        (resource(len(CONTENT) + 1, md5=MD5), False),
        (resource(len(CONTENT)), False),  # no checksum to compare: upload again
        ({"md5Hash": MD5}, False),  # no size
    ],
)
def test_already_uploaded_needs_the_same_size_and_the_services_md5(
    tmp_path: Path, existing: dict[str, Any] | None, same: bool
) -> None:
    digests = digests_of(write(tmp_path / "f", CONTENT))
    assert (digests.md5, digests.crc32c) == (MD5, CRC32C)

    assert already_uploaded(existing, digests) is same
