"""Large packages through the command's own HTTP client (services.media.ResumableUpload), against the loopback
fake's resumable protocol: chunks, the status query after a failure, lost sessions, where chunks may go."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from mlsubmit.errors import StagingError
from mlsubmit.sdist import digest as digest_module
from mlsubmit.services import storage as storage_module
from mlsubmit.services.retry import RetryPolicy
from mlsubmit.services.settings import Settings
from mlsubmit.services.staging import plan_staging
from mlsubmit.services.storage import UploadReport, upload
from tests.fakes.api_server import FakeGoogleApis
from tests.fakes.storage_api import crc32c_b64, md5_b64

FAST = RetryPolicy(attempts=None, initial=0.001, cap=0.002, factor=2.0, deadline=5.0)
CHUNK = 256 * 1024
DATA = os.urandom(3 * CHUNK - 1000)  # three chunks, the last one short
UPLOADS = r"^/upload/storage/v1/b/bkt/o$"


def storage_for(fake: FakeGoogleApis, token: str | None = None) -> object:
    """The storage client `mlsubmit training` builds: the emulator (anonymous), or an endpoint with a token."""
    if token is None:
        return Settings.from_flags({"STORAGE_EMULATOR_HOST": fake.url.rstrip("/")}).storage()
    env = {"CLOUDSDK_API_ENDPOINT_OVERRIDES_STORAGE": fake.url, "CLOUDSDK_AUTH_ACCESS_TOKEN": token}
    return Settings.from_flags(env).storage()


def send(fake: FakeGoogleApis, tmp_path: Path, token: str | None = None, data: bytes = DATA) -> int:
    package = tmp_path / "big-1.0.tar.gz"
    package.write_bytes(data)
    plan = plan_staging([package], "gs://bkt/job/", "gcloud")
    return upload(plan, storage_for(fake, token), retry=FAST, chunk_size=CHUNK).bytes_sent


def puts(fake: FakeGoogleApis) -> list[str | None]:
    return [r.headers.get("content-range") for r in fake.requests_matching("PUT", UPLOADS)]


def stored(fake: FakeGoogleApis) -> bytes:
    [obj] = fake.objects.values()
    return bytes(obj.data)


def test_a_large_file_goes_up_in_chunks_each_signed_and_checked(
    fake_apis: FakeGoogleApis, tmp_path: Path
) -> None:
    sent = send(fake_apis, tmp_path, token="tok-1")

    total = len(DATA)
    assert puts(fake_apis) == [
        f"bytes 0-{CHUNK - 1}/{total}",
        f"bytes {CHUNK}-{2 * CHUNK - 1}/{total}",
        f"bytes {2 * CHUNK}-{total - 1}/{total}",
    ]
    assert stored(fake_apis) == DATA and sent == total
    [start] = fake_apis.requests_matching("POST", UPLOADS)
    assert start.param("uploadType") == "resumable"
    assert start.headers["x-upload-content-length"] == str(total)
    assert {"crc32c", "md5Hash", "name"} <= set(start.json)  # the service checks the bytes it receives
    uploads = fake_apis.requests_matching(None, r"^/upload/")
    assert [r.headers.get("authorization") for r in uploads] == ["Bearer tok-1"] * 4
    [finished] = fake_apis.uploads
    assert finished.upload_type == "resumable" and finished.user_agent.startswith("mlsubmit/")


def test_after_a_failed_chunk_it_asks_where_the_upload_stands_and_goes_on(
    fake_apis: FakeGoogleApis, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    fake_apis.inject(
        "PUT", UPLOADS, 503, match=lambda r: r.headers.get("content-range", "").startswith(f"bytes {CHUNK}-")
    )

    with caplog.at_level(logging.WARNING, logger="mlsubmit.services.storage"):
        sent = send(fake_apis, tmp_path)

    total = len(DATA)
    assert puts(fake_apis) == [
        f"bytes 0-{CHUNK - 1}/{total}",
        f"bytes {CHUNK}-{2 * CHUNK - 1}/{total}",  # answered 503
        f"bytes */{total}",  # where are we?
        f"bytes {CHUNK}-{2 * CHUNK - 1}/{total}",
        f"bytes {2 * CHUNK}-{total - 1}/{total}",
    ]
    assert stored(fake_apis) == DATA
    assert sent == total + CHUNK  # the re-sent chunk counts
    assert any("retrying" in r.getMessage() and "503" in r.getMessage() for r in caplog.records)


def test_a_chunk_whose_answer_was_lost_leaves_the_object_intact(
    fake_apis: FakeGoogleApis, tmp_path: Path
) -> None:
    """The service kept the chunk but the connection dropped before its 308: the status query says so."""
    fake_apis.inject_drop(
        "PUT", UPLOADS, after=True, match=lambda r: r.headers.get("content-range", "").startswith("bytes 0-")
    )

    send(fake_apis, tmp_path)

    total = len(DATA)
    assert puts(fake_apis) == [
        f"bytes 0-{CHUNK - 1}/{total}",  # kept, answer lost
        f"bytes */{total}",  # where are we? past the first chunk
        f"bytes {CHUNK}-{2 * CHUNK - 1}/{total}",
        f"bytes {2 * CHUNK}-{total - 1}/{total}",
    ]
    assert stored(fake_apis) == DATA and len(fake_apis.uploads) == 1


def test_a_lost_session_says_submit_again(fake_apis: FakeGoogleApis, tmp_path: Path) -> None:
    fake_apis.inject("PUT", UPLOADS, 410, body={"error": {"code": 410, "message": "session expired"}})

    with pytest.raises(
        StagingError, match=r"the resumable upload session is gone \(HTTP 410 session expired\); submit again"
    ):
        send(fake_apis, tmp_path)
    assert fake_apis.objects == {}


def test_a_session_on_another_host_gets_no_bytes(fake_apis: FakeGoogleApis, tmp_path: Path) -> None:
    elsewhere = "http://127.0.0.9:1/upload/storage/v1/b/bkt/o?upload_id=x"
    fake_apis.inject("POST", UPLOADS, 200, body={}, headers={"Location": elsewhere})

    with pytest.raises(
        StagingError, match=r"a session URI that is not on http://127\.0\.0\.1:\d+/ .*nothing was sent there"
    ):
        send(fake_apis, tmp_path, token="tok-1")
    assert puts(fake_apis) == []


def test_a_file_that_shrinks_during_the_upload_is_named(
    fake_apis: FakeGoogleApis, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = tmp_path / "big-1.0.tar.gz"
    package.write_bytes(DATA)
    plan = plan_staging([package], "gs://bkt/job/", "gcloud")
    fake_apis.inject("PUT", UPLOADS, 503, match=lambda r: package.write_bytes(DATA[: CHUNK + 10]) is None)  # type: ignore[func-returns-value]

    with pytest.raises(StagingError, match="changed while it was uploaded"):
        upload(plan, storage_for(fake_apis), retry=FAST, chunk_size=CHUNK)
    assert fake_apis.objects == {}


# -- a large package's MD5 comes from its upload -----------------------------------------------------------


@pytest.fixture
def large_from_1kib(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Files from 1 KiB on count as large (their digests are cached); returns the sizes the planner hashes."""
    monkeypatch.setattr(digest_module, "CACHE_MIN_SIZE", 1024)
    hashed: list[int] = []

    class Counting(digest_module.Hasher):
        def update(self, data: bytes) -> None:
            hashed.append(len(data))
            super().update(data)

    monkeypatch.setattr(digest_module, "Hasher", Counting)
    return hashed


def stage(fake: FakeGoogleApis, package: Path, cache: Path) -> tuple[str, UploadReport]:
    [staged] = plan_staging([package], "gs://bkt/job/", digest_cache=cache)
    return staged.uri, upload([staged], storage_for(fake), retry=FAST, chunk_size=CHUNK)


def test_an_unchanged_large_package_is_read_once_in_all(
    fake_apis: FakeGoogleApis, tmp_path: Path, large_from_1kib: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(digest_module, "RACY_NS", 0)  # cache the digests of a file just written
    package = tmp_path / "big-1.0.tar.gz"
    package.write_bytes(DATA)

    uri, first = stage(fake_apis, package, tmp_path / "cache")
    assert sum(large_from_1kib) == len(DATA)  # planning read it once; the upload read it once more
    assert first.bytes_sent == len(DATA) and fake_apis.objects[uri].hashes() == (
        md5_b64(DATA),
        crc32c_b64(DATA),
    )

    large_from_1kib.clear()
    again, second = stage(fake_apis, package, tmp_path / "cache")

    assert again == uri and second.skipped == [uri] and second.bytes_sent == 0
    assert large_from_1kib == []  # every digest, the MD5 included, came from the cache


@pytest.mark.parametrize("same_bytes", [True, False], ids=["ours", "same-size-other-bytes"])
def test_a_large_package_already_at_its_name_counts_only_with_our_md5(
    fake_apis: FakeGoogleApis, tmp_path: Path, large_from_1kib: list[int], same_bytes: bool
) -> None:
    package = tmp_path / "big-1.0.tar.gz"
    package.write_bytes(DATA)
    [staged] = plan_staging([package], "gs://bkt/job/", digest_cache=tmp_path / "cache")
    there = (
        DATA if same_bytes else bytes(reversed(DATA))
    )  # another machine staged it, or someone else's bytes
    fake_apis.put_object(staged.uri, there)

    report = upload([staged], storage_for(fake_apis), retry=FAST, chunk_size=CHUNK)

    assert report.skipped == ([staged.uri] if same_bytes else [])
    assert bytes(fake_apis.objects[staged.uri].data) == DATA


def test_by_default_a_large_file_streams_in_one_put_and_resumes_after_a_failure(
    fake_apis: FakeGoogleApis, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        storage_module, "CHUNK_SIZE", CHUNK
    )  # DATA is above the one-request (multipart) bound
    fake_apis.inject("PUT", UPLOADS, 503)
    package = tmp_path / "big-1.0.tar.gz"
    package.write_bytes(DATA)

    upload(plan_staging([package], "gs://bkt/job/", "gcloud"), storage_for(fake_apis), retry=FAST)

    total = len(DATA)
    assert puts(fake_apis) == [
        f"bytes 0-{total - 1}/{total}",
        f"bytes */{total}",
        f"bytes 0-{total - 1}/{total}",
    ]
    assert stored(fake_apis) == DATA


def test_a_service_that_keeps_none_of_the_bytes_ends_the_upload(
    fake_apis: FakeGoogleApis, tmp_path: Path
) -> None:
    fake_apis.inject("PUT", UPLOADS, 308, times=None, body={}, headers={"Range": f"bytes=0-{CHUNK - 1}"})

    with pytest.raises(StagingError, match=r"kept no more of the upload after 4 rounds \(it holds 262144 of"):
        send(fake_apis, tmp_path)
    assert len(puts(fake_apis)) == 5  # the first chunk, then four answers that moved nothing


def test_a_service_that_claims_every_byte_without_finishing_is_not_believed(
    fake_apis: FakeGoogleApis, tmp_path: Path
) -> None:
    fake_apis.inject("PUT", UPLOADS, 308, body={}, headers={"Range": f"bytes=0-{len(DATA) - 1}"})

    # Claimed after the first chunk: more than was sent, which is refused before "every byte" is considered.
    with pytest.raises(
        StagingError, match=r"holds 785432 bytes of the upload of .*, but only 262144 were sent"
    ):
        send(fake_apis, tmp_path)
