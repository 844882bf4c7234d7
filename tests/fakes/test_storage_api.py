"""The fake Cloud Storage JSON API takes multipart, media and resumable uploads and serves objects back."""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Any

import pytest
from google.api_core import exceptions as gexc
from google.auth.credentials import AnonymousCredentials
from google.cloud import storage
from googleapiclient.discovery import build_from_document
from googleapiclient.errors import HttpError
from googleapiclient.http import MediaInMemoryUpload, build_http

from tests.fakes.api_server import FakeGoogleApis
from tests.fakes.schema_check import discovery_json
from tests.fakes.storage_api import crc32c_b64

PAYLOAD = bytes(range(256)) * 4 + b"\r\n--boundary-lookalike\r\n\n"


def objects_api(server: FakeGoogleApis) -> Any:
    # Not client_options api_endpoint: googleapiclient would send uploads to https://127.0.0.1 (see discovery_json).
    client = build_from_document(discovery_json("storage.v1", root_url=server.url), http=build_http())
    return client.objects()


def gcs_client(server: FakeGoogleApis) -> storage.Client:
    return storage.Client(
        project="myproj",
        credentials=AnonymousCredentials(),  # type: ignore[no-untyped-call]
        client_options={"api_endpoint": server.url.rstrip("/")},
    )


def test_multipart_upload_keeps_the_exact_bytes(fake_apis: FakeGoogleApis) -> None:
    media = MediaInMemoryUpload(PAYLOAD, mimetype="application/gzip", resumable=False)
    answer = (
        objects_api(fake_apis).insert(bucket="bkt", body={"name": "a/p.tar.gz"}, media_body=media).execute()
    )
    assert answer["size"] == str(len(PAYLOAD))
    assert answer["md5Hash"] == base64.b64encode(hashlib.md5(PAYLOAD).digest()).decode()
    assert answer["crc32c"] == crc32c_b64(PAYLOAD)
    assert (answer["name"], answer["bucket"], answer["contentType"]) == (
        "a/p.tar.gz",
        "bkt",
        "application/gzip",
    )
    assert int(answer["generation"]) > 0
    (upload,) = fake_apis.uploads
    assert (upload.uri, upload.data, upload.upload_type) == ("gs://bkt/a/p.tar.gz", PAYLOAD, "multipart")
    assert fake_apis.objects["gs://bkt/a/p.tar.gz"].data == PAYLOAD


def test_resumable_upload_in_chunks(fake_apis: FakeGoogleApis) -> None:
    data = bytes(range(256)) * 2500  # 640,000 bytes: three 256 KiB chunks
    media = MediaInMemoryUpload(data, mimetype="application/gzip", chunksize=256 * 1024, resumable=True)
    request = objects_api(fake_apis).insert(bucket="bkt", body={"name": "big.tar.gz"}, media_body=media)
    answer = None
    chunks = 0
    while answer is None:
        _, answer = request.next_chunk()
        chunks += 1
    assert chunks == 3
    assert answer["size"] == str(len(data))
    assert fake_apis.uploads[0].data == data and fake_apis.uploads[0].upload_type == "resumable"
    puts = fake_apis.requests_matching("PUT", r"/upload/")
    assert [r.status for r in puts] == [308, 308, 200]
    assert fake_apis.uploaded_bytes == len(data) + len(fake_apis.requests[0].body)


def test_google_cloud_storage_client_round_trip(fake_apis: FakeGoogleApis) -> None:
    bucket = gcs_client(fake_apis).bucket("bkt")
    blob = bucket.blob("staging/x/p.tar.gz")
    assert not blob.exists()
    blob.upload_from_string(PAYLOAD, content_type="application/gzip")
    assert fake_apis.uploads[0].data == PAYLOAD
    again = bucket.get_blob("staging/x/p.tar.gz")
    assert again is not None and again.size == len(PAYLOAD) and again.crc32c == crc32c_b64(PAYLOAD)
    assert again.download_as_bytes() == PAYLOAD
    assert [b.name for b in gcs_client(fake_apis).list_blobs("bkt", prefix="staging/")] == [
        "staging/x/p.tar.gz"
    ]
    with pytest.raises(gexc.PreconditionFailed):
        blob.upload_from_string(b"other", if_generation_match=0)
    assert len(fake_apis.uploads) == 1


def test_missing_bucket_and_checksum_mismatch(fake_apis: FakeGoogleApis) -> None:
    fake_apis.remove_bucket("gone")
    api = objects_api(fake_apis)
    with pytest.raises(HttpError) as exc:
        api.insert(bucket="gone", body={"name": "p"}, media_body=MediaInMemoryUpload(b"x")).execute()
    assert exc.value.resp.status == 404
    wrong = base64.b64encode(hashlib.md5(b"something else").digest()).decode()
    with pytest.raises(HttpError) as bad:
        api.insert(
            bucket="bkt", body={"name": "p", "md5Hash": wrong}, media_body=MediaInMemoryUpload(b"x")
        ).execute()
    assert bad.value.resp.status == 400
    assert "md5Hash" in json.loads(bad.value.content)["error"]["message"]
    assert fake_apis.uploads == []


def test_seeded_objects_are_readable_but_not_uploads(fake_apis: FakeGoogleApis) -> None:
    fake_apis.put_object("gs://bkt/pkg/p.tar.gz", b"seed")
    got = objects_api(fake_apis).get(bucket="bkt", object="pkg/p.tar.gz").execute()
    assert got["size"] == "4" and got["name"] == "pkg/p.tar.gz"
    assert fake_apis.uploads == [] and fake_apis.uploaded_bytes == 0


@pytest.mark.parametrize("refused_once", [False, True], ids=["whole", "refused-then-again"])
def test_large_resumable_bodies_are_hashed_as_they_arrive_and_only_what_is_stored_counts(
    fake_apis: FakeGoogleApis, refused_once: bool
) -> None:
    """Bodies of 8 MiB and more reach the fake's digests block by block; a body answered 503 is not kept."""
    data = hashlib.sha256(b"seed").digest() * (300 * 1024 + 7)  # ~9.4 MiB: two 8 MiB chunks, the last short
    if refused_once:
        fake_apis.inject(
            "PUT", r"/upload/", 503, match=lambda r: r.headers.get("content-range", "").startswith("bytes 0-")
        )
    media = MediaInMemoryUpload(data, mimetype="application/gzip", chunksize=8 * 1024 * 1024, resumable=True)
    request = objects_api(fake_apis).insert(
        bucket="bkt",
        body={"name": "big.tar.gz", "md5Hash": base64.b64encode(hashlib.md5(data).digest()).decode()},
        media_body=media,
    )
    answer = None
    while answer is None:
        try:
            _, answer = request.next_chunk()
        except HttpError as exc:
            assert refused_once and exc.resp.status == 503
    assert answer["md5Hash"] == base64.b64encode(hashlib.md5(data).digest()).decode()
    assert answer["crc32c"] == crc32c_b64(data)
    assert bytes(fake_apis.objects["gs://bkt/big.tar.gz"].data) == data
    assert any(r.streamed is not None for r in fake_apis.requests_matching("PUT", r"/upload/"))
