"""Uploads through the storage client `mlsubmit training` builds (``Settings.storage()``, the production wire),
against the loopback fake: the calls (objects.get with fields, one multipart request with the CRC32C), the skip
and verification rules, retries and error messages. Large files and the resumable protocol are in
test_media.py; the same behaviour against gcp-storage-emulator in
tests/acceptance/test_training_staging.py.
"""

from __future__ import annotations

import http.client
import json
import logging
import ssl
from pathlib import Path
from typing import Any

import pytest

from mlsubmit.errors import StagingError, UsageError
from mlsubmit.services.retry import RetryPolicy, is_transient
from mlsubmit.services.settings import Settings
from mlsubmit.services.staging import plan_staging
from mlsubmit.services.storage import upload
from mlsubmit.services.wire import Response
from tests.fakes.api_server import FakeGoogleApis
from tests.fakes.storage_api import crc32c_b64, md5_b64

FAST = RetryPolicy(attempts=None, initial=0.001, cap=0.002, factor=2.0, deadline=5.0)
CONTENT = b"hello world"
CRC32C = "yZRlqg=="  # base64 of the big-endian CRC32C of CONTENT
OBJECTS = r"^/storage/v1/b/bkt/o/"
UPLOADS = r"^/upload/storage/v1/b/bkt/o$"


def storage(fake: FakeGoogleApis, token: str = "tok-1") -> Any:
    """The storage client of a command whose storage endpoint is the fake, signed with ``token``."""
    env = {"CLOUDSDK_API_ENDPOINT_OVERRIDES_STORAGE": fake.url, "CLOUDSDK_AUTH_ACCESS_TOKEN": token}
    return Settings.from_flags(env).storage()


def package(tmp_path: Path, data: bytes = CONTENT, name: str = "trainer-0.0.0.tar.gz") -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def stored(data: bytes = CONTENT, crc32c: str | None = None, md5: str | None = None) -> dict[str, Any]:
    """The object resource the service answers for `data` (checksums may be overridden)."""
    return {"size": str(len(data)), "crc32c": crc32c or crc32c_b64(data), "md5Hash": md5 or md5_b64(data)}


def methods(fake: FakeGoogleApis) -> list[str]:
    return [r.method for r in fake.requests]


# -- the calls ---------------------------------------------------------------------------------------------


def test_an_object_with_the_same_checksum_is_one_get_and_no_upload(
    fake_apis: FakeGoogleApis, tmp_path: Path
) -> None:
    plan = plan_staging([package(tmp_path)], "gs://bkt/job/", "gcloud")
    fake_apis.put_object(plan[0].uri, CONTENT)

    report = upload(plan, storage(fake_apis), retry=FAST)

    assert report.skipped == [plan[0].uri] and report.bytes_sent == 0
    [get] = fake_apis.requests
    assert get.method == "GET"
    name = plan[0].uri.removeprefix("gs://bkt/")
    assert get.path == f"/storage/v1/b/bkt/o/{name.replace('/', '%2F')}"  # the object name is one segment
    assert get.param("fields") == "size,md5Hash,crc32c"
    assert get.headers["authorization"] == "Bearer tok-1"


def test_an_object_with_our_size_and_crc32c_but_another_md5_is_replaced(
    fake_apis: FakeGoogleApis, tmp_path: Path
) -> None:
    """A CRC32C is forgeable for other content of the same size: only the service's MD5 counts."""
    plan = plan_staging([package(tmp_path)], "gs://bkt/job/")
    fake_apis.inject("GET", OBJECTS, 200, body=stored(md5=md5_b64(b"hello WORLD")))

    report = upload(plan, storage(fake_apis), retry=FAST)

    assert report.skipped == [] and report.bytes_sent == len(CONTENT)
    assert methods(fake_apis) == ["GET", "POST"]
    assert bytes(fake_apis.objects[plan[0].uri].data) == CONTENT


def test_a_small_file_goes_up_in_one_multipart_request_with_its_crc32c(
    fake_apis: FakeGoogleApis, tmp_path: Path
) -> None:
    plan = plan_staging([package(tmp_path)], "gs://bkt/job/", "gcloud")
    seen: list[tuple[str, int, int]] = []

    report = upload(plan, storage(fake_apis), progress=lambda *a: seen.append(a), retry=FAST)

    assert report.bytes_sent == len(CONTENT) and report.skipped == []
    [insert] = fake_apis.requests_matching("POST", UPLOADS)
    assert insert.param("uploadType") == "multipart"
    name = plan[0].uri.removeprefix("gs://bkt/")
    metadata = {"name": name, "crc32c": CRC32C, "md5Hash": md5_b64(CONTENT)}
    assert json.dumps(metadata).encode() in insert.body  # the service checks both
    assert CONTENT in insert.body
    assert seen[-1] == (plan[0].uri, len(CONTENT), len(CONTENT))
    assert bytes(fake_apis.objects[plan[0].uri].data) == CONTENT


# -- verification ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        (stored(crc32c="AAAAAA=="), "do not match"),
        (stored(md5="AAAAAAAAAAAAAAAAAAAAAA=="), "do not match"),
        (stored(data=CONTENT + b"!"), "holds 12 bytes after the upload"),
        ({"size": str(len(CONTENT))}, "do not match"),  # no checksum reported: not verified, not trusted
    ],
)
def test_what_the_service_stored_is_checked_against_the_file(
    fake_apis: FakeGoogleApis, tmp_path: Path, answer: dict[str, Any], message: str
) -> None:
    fake_apis.inject("POST", UPLOADS, 200, body=answer)

    with pytest.raises(StagingError, match=message):
        upload(plan_staging([package(tmp_path)], "gs://bkt/job/", "gcloud"), storage(fake_apis), retry=FAST)


# -- retries and errors ------------------------------------------------------------------------------------


def test_a_dropped_connection_and_a_408_are_retried_and_logged(
    fake_apis: FakeGoogleApis, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    fake_apis.inject_drop("GET", OBJECTS)
    fake_apis.inject("POST", UPLOADS, 408)
    fake_apis.inject_drop("POST", UPLOADS, after=True)  # stored, but the answer is lost: sent again

    with caplog.at_level(logging.WARNING, logger="mlsubmit.services.storage"):
        report = upload(
            plan_staging([package(tmp_path)], "gs://bkt/job/", "gcloud"), storage(fake_apis), retry=FAST
        )

    assert report.bytes_sent == 3 * len(CONTENT)  # read for each of the three insert attempts
    assert methods(fake_apis) == ["GET", "GET", "POST", "POST", "POST"]
    retries = [r.getMessage() for r in caplog.records if "retrying" in r.getMessage()]
    assert len(retries) == 3
    assert "HTTP 408" in retries[1]
    assert len(fake_apis.objects) == 1


def test_no_permission_to_look_is_not_a_reason_to_stop(fake_apis: FakeGoogleApis, tmp_path: Path) -> None:
    """roles/storage.objectCreator may create objects but not get them: stage anyway."""
    fake_apis.inject("GET", OBJECTS, 403)

    report = upload(
        plan_staging([package(tmp_path)], "gs://bkt/job/", "gcloud"), storage(fake_apis), retry=FAST
    )

    assert report.bytes_sent == len(CONTENT)
    assert methods(fake_apis) == ["GET", "POST"]


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        (403, ["HTTP 403 denied", "storage.objects.create", "bucket bkt", "trainer-0.0.0.tar.gz"]),
        (401, ["HTTP 401", "access token is missing, invalid or expired"]),
        (404, ["bucket bkt does not exist", "--staging-bucket"]),
        (400, ["cannot upload trainer-0.0.0.tar.gz to gs://bkt/job/", "HTTP 400 denied"]),
    ],
)
def test_refusals_are_not_retried_and_say_what_to_do(
    fake_apis: FakeGoogleApis, tmp_path: Path, status: int, expected: list[str]
) -> None:
    fake_apis.inject("POST", UPLOADS, status, body={"error": {"code": status, "message": "denied"}})

    with pytest.raises(StagingError) as raised:
        upload(plan_staging([package(tmp_path)], "gs://bkt/job/", "gcloud"), storage(fake_apis), retry=FAST)

    for text in expected:
        assert text in str(raised.value)
    assert methods(fake_apis) == ["GET", "POST"]


def test_persistent_failures_end_with_the_last_one(fake_apis: FakeGoogleApis, tmp_path: Path) -> None:
    fake_apis.inject("POST", UPLOADS, 503, times=None, body={"error": {"code": 503, "message": "busy"}})
    give_up_soon = RetryPolicy(attempts=None, initial=0.001, cap=0.001, factor=1.0, deadline=0.05)

    with pytest.raises(StagingError, match=r"kept failing \(HTTP 503 busy\); try again later"):
        upload(
            plan_staging([package(tmp_path)], "gs://bkt/job/", "gcloud"),
            storage(fake_apis),
            retry=give_up_soon,
        )


def test_an_unreadable_package_is_named(fake_apis: FakeGoogleApis, tmp_path: Path) -> None:
    plan = plan_staging([package(tmp_path)], "gs://bkt/job/", "gcloud")
    assert plan[0].local is not None
    plan[0].local.unlink()

    with pytest.raises(StagingError, match=r"cannot read .*trainer-0\.0\.0\.tar\.gz"):
        upload(plan, storage(fake_apis), retry=FAST)
    assert fake_apis.requests == []


def http_error(status: int) -> Exception:
    """The error ``services.rest`` raises for an answer of ``status``."""
    from mlsubmit.services.rest import http_error as make

    return make(Response(status, "", {}), b"", "https://storage.googleapis.com/x")


@pytest.mark.parametrize(
    ("exc", "transient"),
    [
        (ConnectionResetError(), True),
        (TimeoutError(), True),
        (http.client.RemoteDisconnected("closed"), True),
        (http.client.IncompleteRead(b""), True),
        (FileNotFoundError(2, "No such file", "/x"), False),  # a local file, not the network
        (ssl.SSLCertVerificationError("self-signed certificate"), False),
        (http_error(503), True),
        (http_error(429), True),
        (http_error(408), True),
        (http_error(409), False),
        (http_error(403), False),
        (ValueError("bug"), False),
    ],
)
def test_what_an_upload_retries(exc: BaseException, transient: bool) -> None:
    assert is_transient(exc) is transient


# -- wiring ------------------------------------------------------------------------------------------------


def test_the_emulator_is_anonymous_even_with_a_token_at_hand(
    fake_apis: FakeGoogleApis, tmp_path: Path
) -> None:
    env = {"STORAGE_EMULATOR_HOST": fake_apis.url, "CLOUDSDK_AUTH_ACCESS_TOKEN": "tok-1"}

    upload(plan_staging([package(tmp_path)], "gs://bkt/job/"), Settings.from_flags(env).storage(), retry=FAST)

    assert methods(fake_apis) == ["GET", "POST"]
    assert all("authorization" not in r.headers for r in fake_apis.requests)


def test_without_the_emulator_or_credentials_it_says_how_to_get_them() -> None:
    with pytest.raises(UsageError, match="CLOUDSDK_AUTH_ACCESS_TOKEN"):
        Settings.from_flags({}).storage()
