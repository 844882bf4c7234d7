"""Upload through googleapiclient's storage v1 service, driven by a scripted http: what goes on the wire.

No server: `ScriptedHttp` answers each request from a script and records it, so these tests pin the calls
(objects.get with fields, multipart vs resumable, the CRC32C sent along, the status query after a failed
chunk), the skip and verification rules, retries and error messages. The same behaviour against
gcp-storage-emulator is in tests/acceptance/test_staging_emulator.py.
"""

from __future__ import annotations

import http.client
import json
import logging
import ssl
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import httplib2
import pytest
from google.oauth2.credentials import Credentials
from googleapiclient.errors import HttpError

from mlsubmit.errors import StagingError, UsageError
from mlsubmit.services import connection as transport
from mlsubmit.services import storage as staging
from mlsubmit.services.connection import make_storage_service, storage_document, storage_root_url
from mlsubmit.services.retry import RetryPolicy
from mlsubmit.services.storage import plan_staging, upload
from tests.fakes.storage_api import crc32c_b64, md5_b64

FAST = RetryPolicy(attempts=None, initial=0.001, cap=0.002, factor=2.0, deadline=5.0)
CONTENT = b"hello world"
CRC32C = "yZRlqg=="  # base64 of the big-endian CRC32C of CONTENT
ROOT = "http://127.0.0.1:9/"  # never connected to: the scripted http answers


@dataclass
class Sent:
    method: str
    uri: str
    headers: dict[str, str]
    body: bytes

    @property
    def path(self) -> str:
        return unquote(urlsplit(self.uri).path)

    @property
    def query(self) -> dict[str, list[str]]:
        return parse_qs(urlsplit(self.uri).query)


Answer = tuple[int, Any, dict[str, str]] | BaseException


@dataclass
class ScriptedHttp:
    """An httplib2.Http stand-in: answers requests from `script` in order and records them."""

    script: list[Answer]
    sent: list[Sent] = field(default_factory=list)
    redirect_codes: frozenset[int] = httplib2.REDIRECT_CODES

    def request(
        self, uri: str, method: str = "GET", body: Any = None, headers: Any = None, **_: Any
    ) -> tuple[httplib2.Response, bytes]:
        raw = body.encode() if isinstance(body, str) else bytes(body or b"")
        self.sent.append(Sent(method, uri, dict(headers or {}), raw))
        answer = self.script.pop(0)
        if isinstance(answer, BaseException):
            raise answer
        status, payload, headers_out = answer
        content = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        return httplib2.Response({"status": str(status), **headers_out}), content


def ok(payload: Any, **headers: str) -> Answer:
    return (200, payload, headers)


def error(status: int, message: str = "from the script") -> Answer:
    return (status, {"error": {"code": status, "message": message}}, {"content-type": "application/json"})


def service_for(script: list[Answer], root: str = ROOT) -> tuple[Any, ScriptedHttp]:
    fake = ScriptedHttp(script)
    service = make_storage_service({"CLOUDSDK_API_ENDPOINT_OVERRIDES_STORAGE": root}, http=fake)
    return service, fake


def package(tmp_path: Path, data: bytes = CONTENT, name: str = "trainer-0.0.0.tar.gz") -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def stored(data: bytes = CONTENT, crc32c: str | None = None, md5: str | None = None) -> Answer:
    """The object resource the service answers for `data` (checksums may be overridden)."""
    return ok({"size": str(len(data)), "crc32c": crc32c or crc32c_b64(data), "md5Hash": md5 or md5_b64(data)})


# -- the calls ---------------------------------------------------------------------------------------------


def test_an_object_with_the_same_checksum_is_one_get_and_no_upload(tmp_path: Path) -> None:
    service, fake = service_for([stored()])
    plan = plan_staging([package(tmp_path)], "gs://bkt/job/", "gcloud")

    report = upload(plan, service, retry=FAST)

    assert report.skipped == [plan[0].uri] and report.bytes_sent == 0
    [get] = fake.sent
    assert get.method == "GET"
    assert get.path == f"/storage/v1/b/bkt/o/{plan[0].uri.removeprefix('gs://bkt/')}"
    assert "%2F" in get.uri  # the object name is one path segment
    assert get.query["fields"] == ["size,md5Hash,crc32c"]


def test_an_object_with_our_size_and_crc32c_but_another_md5_is_replaced(tmp_path: Path) -> None:
    """A CRC32C is forgeable for other content of the same size: only the service's MD5 counts."""
    service, fake = service_for([stored(md5=md5_b64(b"hello WORLD")), stored()])
    plan = plan_staging([package(tmp_path)], "gs://bkt/job/")

    report = upload(plan, service, retry=FAST)

    assert report.skipped == [] and report.bytes_sent == len(CONTENT)
    assert [s.method for s in fake.sent] == ["GET", "POST"]


def test_a_small_file_goes_up_in_one_multipart_request_with_its_crc32c(tmp_path: Path) -> None:
    service, fake = service_for([error(404), stored()])
    plan = plan_staging([package(tmp_path)], "gs://bkt/job/", "gcloud")
    seen: list[tuple[str, int, int]] = []

    report = upload(plan, service, progress=lambda *a: seen.append(a), retry=FAST)

    assert report.bytes_sent == len(CONTENT) and report.skipped == []
    insert = fake.sent[1]
    assert (insert.method, insert.path) == ("POST", "/upload/storage/v1/b/bkt/o")
    assert insert.uri.startswith(ROOT)  # http, as the root says (googleapiclient alone would use https)
    assert insert.query["uploadType"] == ["multipart"]
    name = plan[0].uri.removeprefix("gs://bkt/")
    metadata = {"name": name, "crc32c": CRC32C, "md5Hash": md5_b64(CONTENT)}
    assert json.dumps(metadata).encode() in insert.body  # the service checks both
    assert CONTENT in insert.body
    assert seen[-1] == (plan[0].uri, len(CONTENT), len(CONTENT))


def test_a_large_file_goes_up_resumably_and_a_failed_chunk_resumes_where_the_service_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    chunk = 256 * 1024
    monkeypatch.setattr(staging, "CHUNK_SIZE", chunk)
    data = bytes(range(256)) * (chunk * 3 // 256 - 100)  # 3 chunks, the last one short
    session = f"{ROOT}upload/storage/v1/b/bkt/o?uploadType=resumable&upload_id=s1"
    service, fake = service_for(
        [
            error(404),
            ok({}, location=session),
            (308, b"", {"range": f"bytes=0-{chunk - 1}"}),
            error(503),  # the second chunk fails ...
            (308, b"", {"range": f"bytes=0-{chunk - 1}"}),  # ... the status query says it never arrived
            (308, b"", {"range": f"bytes=0-{2 * chunk - 1}"}),
            stored(data),
        ]
    )
    plan = plan_staging([package(tmp_path, data)], "gs://bkt/job/", "gcloud")

    with caplog.at_level(logging.WARNING, logger="mlsubmit.services.storage"):
        report = upload(plan, service, retry=FAST)

    start = fake.sent[1]
    assert start.method == "POST" and start.query["uploadType"] == ["resumable"]
    assert start.headers["X-Upload-Content-Length"] == str(len(data))
    assert json.loads(start.body)["crc32c"] == crc32c_b64(data)
    assert json.loads(start.body)["md5Hash"] == md5_b64(data)
    puts = [(s.headers.get("Content-Range"), len(s.body)) for s in fake.sent[2:]]
    total = len(data)
    assert puts == [
        (f"bytes 0-{chunk - 1}/{total}", chunk),
        (f"bytes {chunk}-{2 * chunk - 1}/{total}", chunk),
        (f"bytes */{total}", 0),  # where are we?
        (f"bytes {chunk}-{2 * chunk - 1}/{total}", chunk),
        (f"bytes {2 * chunk}-{total - 1}/{total}", total - 2 * chunk),
    ]
    assert all(s.uri == session for s in fake.sent[2:])
    assert report.bytes_sent == total + chunk  # the re-sent chunk counts
    assert [r.getMessage() for r in caplog.records if "retrying" in r.getMessage()] != []


# -- verification ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        (stored(crc32c="AAAAAA=="), "do not match"),
        (stored(md5="AAAAAAAAAAAAAAAAAAAAAA=="), "do not match"),
        (stored(data=CONTENT + b"!"), "holds 12 bytes after the upload"),
        (ok({"size": str(len(CONTENT))}), "do not match"),  # no checksum reported: not verified, not trusted
    ],
)
def test_what_the_service_stored_is_checked_against_the_file(
    tmp_path: Path, answer: Answer, message: str
) -> None:
    service, _fake = service_for([error(404), answer])

    with pytest.raises(StagingError, match=message):
        upload(plan_staging([package(tmp_path)], "gs://bkt/job/", "gcloud"), service, retry=FAST)


# -- retries and errors ------------------------------------------------------------------------------------


def test_a_dropped_connection_and_a_408_are_retried_and_logged(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    service, fake = service_for(
        [
            ConnectionResetError("peer reset"),
            error(404),
            error(408),
            http.client.IncompleteRead(b""),
            stored(),
        ]
    )

    with caplog.at_level(logging.WARNING, logger="mlsubmit.services.storage"):
        report = upload(plan_staging([package(tmp_path)], "gs://bkt/job/", "gcloud"), service, retry=FAST)

    assert report.bytes_sent == 3 * len(CONTENT)  # read for each of the three insert attempts
    assert [s.method for s in fake.sent] == ["GET", "GET", "POST", "POST", "POST"]
    retries = [r.getMessage() for r in caplog.records if "retrying" in r.getMessage()]
    assert len(retries) == 3
    assert "peer reset" in retries[0] and "HTTP 408" in retries[1]


def test_no_permission_to_look_is_not_a_reason_to_stop(tmp_path: Path) -> None:
    """roles/storage.objectCreator may create objects but not get them: stage anyway."""
    service, fake = service_for([error(403, "no storage.objects.get"), stored()])

    report = upload(plan_staging([package(tmp_path)], "gs://bkt/job/", "gcloud"), service, retry=FAST)

    assert report.bytes_sent == len(CONTENT)
    assert [s.method for s in fake.sent] == ["GET", "POST"]


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
    tmp_path: Path, status: int, expected: list[str]
) -> None:
    service, fake = service_for([error(404), error(status, "denied")])

    with pytest.raises(StagingError) as raised:
        upload(plan_staging([package(tmp_path)], "gs://bkt/job/", "gcloud"), service, retry=FAST)

    for text in expected:
        assert text in str(raised.value)
    assert len(fake.sent) == 2


def test_a_lost_resumable_session_is_not_called_a_missing_bucket(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(staging, "CHUNK_SIZE", 256 * 1024)
    session = f"{ROOT}upload/storage/v1/b/bkt/o?uploadType=resumable&upload_id=s1"
    service, _fake = service_for([error(404), ok({}, location=session), error(410, "gone")])
    big = package(tmp_path, b"x" * (256 * 1024 + 1))

    with pytest.raises(StagingError, match="the resumable upload session is gone") as raised:
        upload(plan_staging([big], "gs://bkt/job/", "gcloud"), service, retry=FAST)
    assert "does not exist" not in str(raised.value)


def test_persistent_failures_end_with_the_last_one(tmp_path: Path) -> None:
    service, _fake = service_for([error(404)] + [error(503, "busy")] * 1000)
    give_up_soon = RetryPolicy(attempts=None, initial=0.001, cap=0.001, factor=1.0, deadline=0.02)

    with pytest.raises(StagingError, match=r"kept failing \(HTTP 503 busy\); try again later"):
        upload(plan_staging([package(tmp_path)], "gs://bkt/job/", "gcloud"), service, retry=give_up_soon)


def test_an_unreadable_package_is_named(tmp_path: Path) -> None:
    service, fake = service_for([])
    plan = plan_staging([package(tmp_path)], "gs://bkt/job/", "gcloud")
    assert plan[0].local is not None
    plan[0].local.unlink()

    with pytest.raises(StagingError, match=r"cannot read .*trainer-0\.0\.0\.tar\.gz"):
        upload(plan, service, retry=FAST)
    assert fake.sent == []


@pytest.mark.parametrize(
    ("exc", "transient"),
    [
        (ConnectionResetError(), True),
        (TimeoutError(), True),
        (http.client.RemoteDisconnected("closed"), True),
        (httplib2.ServerNotFoundError("dns"), True),
        (FileNotFoundError(2, "No such file", "/x"), False),  # a local file, not the network
        (ssl.SSLCertVerificationError("self-signed certificate"), False),
        (httplib2.RedirectMissingLocation("308", httplib2.Response({"status": "308"}), b""), False),
        (HttpError(httplib2.Response({"status": "503"}), b""), True),
        (HttpError(httplib2.Response({"status": "429"}), b""), True),
        (HttpError(httplib2.Response({"status": "408"}), b""), True),
        (HttpError(httplib2.Response({"status": "409"}), b""), False),
        (HttpError(httplib2.Response({"status": "403"}), b""), False),
        (ValueError("bug"), False),
    ],
)
def test_what_counts_as_transient(exc: BaseException, transient: bool) -> None:
    assert staging._is_transient(exc) is transient


# -- wiring ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, ("https://storage.googleapis.com/", False)),
        ({"STORAGE_EMULATOR_HOST": "http://127.0.0.1:9023"}, ("http://127.0.0.1:9023/", True)),
        ({"STORAGE_EMULATOR_HOST": "localhost:9023"}, ("http://localhost:9023/", True)),
        (
            {
                "STORAGE_EMULATOR_HOST": "http://127.0.0.1:1",
                "CLOUDSDK_API_ENDPOINT_OVERRIDES_STORAGE": "https://x/",
            },
            ("http://127.0.0.1:1/", True),
        ),
        (
            {"CLOUDSDK_API_ENDPOINT_OVERRIDES_STORAGE": "https://psc.example/storage/v1/"},
            ("https://psc.example/", False),
        ),
        ({"CLOUDSDK_API_ENDPOINT_OVERRIDES_STORAGE": "http://127.0.0.1:5"}, ("http://127.0.0.1:5/", False)),
        ({"API_ENDPOINT_OVERRIDE": "https://gcs.example"}, ("https://gcs.example/", False)),
    ],
)
def test_storage_root_url(env: dict[str, str], expected: tuple[str, bool]) -> None:
    assert storage_root_url(env) == expected


def test_the_document_is_rooted_where_uploads_must_go() -> None:
    assert storage_document()["rootUrl"] == "https://storage.googleapis.com/"
    doc = storage_document("http://127.0.0.1:9/")

    assert (doc["rootUrl"], doc["mtlsRootUrl"], doc["baseUrl"]) == (
        "http://127.0.0.1:9/",
        "http://127.0.0.1:9/",
        "http://127.0.0.1:9/storage/v1/",
    )
    assert "googleapis.com" not in json.dumps({k: v for k, v in doc.items() if k.endswith("Url")})


def test_without_the_emulator_the_api_http_signs_and_308_is_not_a_redirect() -> None:
    http = transport.authorized_http(Credentials("tok"))  # type: ignore[no-untyped-call]
    assert 308 in http.http.redirect_codes

    service = make_storage_service({}, http=http)

    assert service._http is http  # the same credentials as the ml API, no second lookup
    assert 308 not in http.http.redirect_codes
    assert {301, 302, 303, 307} <= http.http.redirect_codes


def test_the_emulator_is_anonymous_even_when_given_the_api_http() -> None:
    http = transport.authorized_http(Credentials("tok"))  # type: ignore[no-untyped-call]

    service = make_storage_service({"STORAGE_EMULATOR_HOST": "http://127.0.0.1:9"}, http=http)

    assert service._http is not http
    assert isinstance(service._http, httplib2.Http) and 308 not in service._http.redirect_codes


def test_without_the_emulator_or_credentials_it_says_how_to_get_them() -> None:
    with pytest.raises(UsageError, match="CLOUDSDK_AUTH_ACCESS_TOKEN"):
        make_storage_service({})
