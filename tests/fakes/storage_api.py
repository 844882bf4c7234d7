"""Just enough of the Cloud Storage JSON API for uploads: multipart, media and resumable inserts, object reads.

gcloud 528 stages packages with apitools: ``POST /upload/storage/v1/b/B/o?uploadType=multipart&name=N`` (a
``multipart/related`` body whose boundary is quoted with single quotes), resumable above 5 MiB; it checks only
the answered ``size``. Every finished upload is kept in :attr:`StorageObjects.uploads`.
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import itertools
import json
import re
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import google_crc32c

from tests.fakes.wire import ApiError, RecordedRequest, Response, int_param, page, rfc3339

_RANGE = re.compile(r"^bytes (?:(\d+)-(\d+)|\*)/(\d+|\*)$")


def md5_b64(data: bytes | bytearray) -> str:
    """Base64 of the MD5 digest, as Cloud Storage reports ``md5Hash``."""
    return base64.b64encode(hashlib.md5(data).digest()).decode()


def crc32c_b64(data: bytes | bytearray) -> str:
    """Base64 of the big-endian CRC32C, as Cloud Storage reports ``crc32c``."""
    value = google_crc32c.value(data if isinstance(data, bytes) else bytes(data))  # it takes read-only bytes
    return base64.b64encode(value.to_bytes(4, "big")).decode()


class _StreamDigests:
    """MD5 and CRC32C of an upload's bytes, fed chunk by chunk in a side thread as they arrive (the service
    hashes while it receives), so a finished 500 MB upload is not hashed again from the start."""

    def __init__(self) -> None:
        self._md5 = hashlib.md5()
        self._crc = 0
        self._pending: list[Future[None]] = []
        self.base = 0  # a fork: the upload offset it starts at

    def __deepcopy__(self, memo: dict[int, Any]) -> _StreamDigests:
        return self  # recorded requests are copied for tests; the hash state is the fake's own

    def fork(self, base: int) -> _StreamDigests:
        """A copy that goes on from here (for a request body seen as it arrives, kept only if it is stored)."""
        self.wait()
        other = _StreamDigests()
        other._md5, other._crc, other.base = self._md5.copy(), self._crc, base
        return other

    def _feed(self, data: bytes | memoryview) -> None:
        self._md5.update(data)  # hashlib and google_crc32c release the GIL on large buffers
        self._crc = google_crc32c.extend(self._crc, data if isinstance(data, bytes) else bytes(data))

    def add(self, data: bytes | memoryview) -> None:
        """Queue ``data`` (the one hashing thread takes the chunks in order); answers without waiting."""
        self._pending = [f for f in self._pending if not f.done() or f.exception()]
        self._pending.append(_HASHING.submit(self._feed, data))

    __call__ = add

    def wait(self) -> None:
        pending, self._pending = self._pending, []
        for future in pending:
            future.result()  # a hashing error surfaces here

    def values(self) -> tuple[str, str]:
        """(md5Hash, crc32c) in base64, as the service reports them."""
        self.wait()
        crc = base64.b64encode(int(self._crc).to_bytes(4, "big")).decode()
        return base64.b64encode(self._md5.digest()).decode(), crc


_HASHING = ThreadPoolExecutor(max_workers=1, thread_name_prefix="fake-gcs-hash")  # one: chunks stay in order


@dataclass
class StoredObject:
    """An object in a bucket of the fake."""

    bucket: str
    name: str
    data: bytes | bytearray  # a finished resumable upload is kept as received
    generation: int
    content_type: str = "application/octet-stream"
    metadata: dict[str, str] = field(default_factory=dict)
    created: str = ""
    digests: tuple[str, str] | None = None  # (md5Hash, crc32c), computed once
    forgotten_size: int | None = None  # set by StorageObjects.forget_contents

    @property
    def size(self) -> int:
        """Length in bytes."""
        return len(self.data) if self.forgotten_size is None else self.forgotten_size

    def hashes(self) -> tuple[str, str]:
        """(md5Hash, crc32c) of the bytes, base64."""
        if self.digests is None:
            self.digests = (md5_b64(self.data), crc32c_b64(self.data))
        return self.digests


@dataclass
class Upload:
    """One finished upload: where it went, how it was sent and the bytes."""

    bucket: str
    name: str
    data: bytes | bytearray
    upload_type: str
    content_type: str
    user_agent: str = ""

    @property
    def size(self) -> int:
        """Length in bytes."""
        return len(self.data)

    @property
    def md5_hash(self) -> str:
        """Base64 MD5, like the object's ``md5Hash``."""
        return md5_b64(self.data)

    @property
    def uri(self) -> str:
        """``gs://bucket/name``."""
        return f"gs://{self.bucket}/{self.name}"


@dataclass
class _Session:
    bucket: str
    name: str
    metadata: dict[str, Any]
    total: int | None
    data: bytearray = field(default_factory=bytearray)
    digests: _StreamDigests = field(default_factory=_StreamDigests)

    def append(self, chunk: bytes | bytearray | memoryview, streamed: Any = None) -> None:
        """Add received bytes; ``streamed`` (a fork of the digests that saw exactly them arrive) replaces the
        digests instead of hashing the bytes again."""
        if isinstance(streamed, _StreamDigests) and streamed.base == len(self.data):
            self.digests = streamed
        else:
            self.digests.add(bytes(chunk) if not isinstance(chunk, bytes) else chunk)
        if not self.data and isinstance(chunk, bytearray) and len(chunk) == self.total:
            self.data = chunk  # a whole upload in one request: kept as received (it grows no more)
        else:
            self.data += chunk


def _parse_multipart(
    content_type: str, body: bytes | bytearray
) -> tuple[dict[str, Any], bytes | bytearray, str]:
    """Split a ``multipart/related`` body into (metadata JSON, media bytes, media content type)."""
    match = re.search(r"boundary=(\"[^\"]*\"|'[^']*'|[^;\s]+)", content_type)
    if not match:
        raise ApiError(400, "Missing multipart boundary.")
    boundary = match.group(1).strip("\"'").encode()
    parts = []
    for chunk in body.split(b"--" + boundary)[1:]:
        if chunk.startswith(b"--"):
            break
        chunk = chunk[2:] if chunk.startswith(b"\r\n") else chunk[1:] if chunk.startswith(b"\n") else chunk
        head, sep, content = chunk.partition(b"\r\n\r\n")
        if not sep or b"\n\n" in head:
            head, sep, content = chunk.partition(b"\n\n")
        content = (
            content[:-2]
            if content.endswith(b"\r\n")
            else content[:-1]
            if content.endswith(b"\n")
            else content
        )
        headers = dict(
            (k.strip().lower(), v.strip())
            for k, _, v in (
                line.partition(":") for line in head.decode("latin-1").splitlines() if ":" in line
            )
        )
        parts.append((headers, content))
    if len(parts) != 2:
        raise ApiError(400, f"Multipart upload must have 2 parts, got {len(parts)}.")
    try:
        metadata = json.loads(parts[0][1] or b"{}")
    except ValueError as exc:
        raise ApiError(400, "Invalid JSON in the metadata part of the multipart upload.") from exc
    return metadata, parts[1][1], parts[1][0].get("content-type", "application/octet-stream")


class StorageObjects:
    """Buckets (all exist unless listed in ``missing_buckets``), objects, uploads. Serialised by the server."""

    def __init__(self, base_url: Callable[[], str], clock: Callable[[], dt.datetime]):
        self.base_url = base_url
        self.clock = clock
        self.objects: dict[tuple[str, str], StoredObject] = {}
        self.uploads: list[Upload] = []
        self.missing_buckets: set[str] = set()
        # bucket -> fields its buckets.get answer carries (location, locationType, ...); default: in us-central1
        self.bucket_fields: dict[str, dict[str, Any]] = {}
        self.sessions: dict[str, _Session] = {}
        self._generations = itertools.count(1700000000000001)
        self._session_ids = itertools.count(1)

    # -- helpers ---------------------------------------------------------------------------------------
    def _bucket(self, bucket: str) -> None:
        if bucket in self.missing_buckets:
            raise ApiError(404, "The specified bucket does not exist.", "NOT_FOUND")

    def _object(self, bucket: str, name: str) -> StoredObject:
        self._bucket(bucket)
        obj = self.objects.get((bucket, name))
        if obj is None:
            raise ApiError(404, f"No such object: {bucket}/{name}", "NOT_FOUND")
        return obj

    def resource(self, obj: StoredObject) -> dict[str, Any]:
        """The JSON object resource for ``obj``."""
        quoted = quote(obj.name, safe="")
        base = self.base_url()
        return {
            "kind": "storage#object",
            "id": f"{obj.bucket}/{obj.name}/{obj.generation}",
            "selfLink": f"{base}storage/v1/b/{obj.bucket}/o/{quoted}",
            "mediaLink": f"{base}download/storage/v1/b/{obj.bucket}/o/{quoted}?generation={obj.generation}&alt=media",
            "name": obj.name,
            "bucket": obj.bucket,
            "generation": str(obj.generation),
            "metageneration": "1",
            "contentType": obj.content_type,
            "storageClass": "STANDARD",
            "size": str(obj.size),
            "md5Hash": obj.hashes()[0],
            "crc32c": obj.hashes()[1],
            "etag": base64.b64encode(str(obj.generation).encode()).decode(),
            "timeCreated": obj.created,
            "updated": obj.created,
            **({"metadata": obj.metadata} if obj.metadata else {}),
        }

    def put(
        self,
        bucket: str,
        name: str,
        data: bytes | bytearray,
        content_type: str = "application/octet-stream",
        digests: tuple[str, str] | None = None,
    ) -> StoredObject:
        """Store an object directly (seeding; not recorded as an upload)."""
        obj = StoredObject(
            bucket, name, data, next(self._generations), content_type, created=rfc3339(self.clock())
        )
        obj.digests = digests
        self.objects[(bucket, name)] = obj
        return obj

    def _finish(
        self,
        request: RecordedRequest,
        bucket: str,
        metadata: dict[str, Any],
        data: bytes | bytearray,
        kind: str,
        digests: tuple[str, str] | None = None,
    ) -> Response:
        name = metadata.get("name") or request.param("name")
        if not name:
            raise ApiError(400, "Required parameter: name", "INVALID_ARGUMENT")
        if_match = request.param("ifGenerationMatch")
        if if_match is not None:
            current = self.objects.get((bucket, name))
            if str(current.generation if current else 0) != if_match:
                raise ApiError(
                    412,
                    "At least one of the pre-conditions you specified did not hold.",
                    "FAILED_PRECONDITION",
                )
        digests = digests or (md5_b64(data), crc32c_b64(data))
        for key, actual in zip(("md5Hash", "crc32c"), digests, strict=True):
            if metadata.get(key) and metadata[key] != actual:
                raise ApiError(
                    400, f'Provided {key} "{metadata[key]}" doesn\'t match calculated {key} "{actual}".'
                )
        content_type = (
            metadata.get("contentType")
            or request.headers.get("x-upload-content-type")
            or ("application/octet-stream")
        )
        obj = self.put(bucket, name, data, content_type, digests)
        obj.metadata = dict(metadata.get("metadata") or {})
        agent = request.headers.get("user-agent", "")
        self.uploads.append(Upload(bucket, name, obj.data, kind, content_type, agent))
        return Response(200, self.resource(obj))

    def body_sink(self, method: str, path: str, query: dict[str, list[str]], header: str) -> Any:
        """For a PUT to a resumable session that goes on exactly where it stands: digests that see the body as it
        arrives (``request.streamed``; ``resume`` keeps them only if it stores those bytes)."""
        session = self.sessions.get((query.get("upload_id") or [""])[0])
        match = _RANGE.match(header.strip()) if header else None
        if method != "PUT" or session is None or not match or match.group(1) is None:
            return None
        start = int(match.group(1))
        return session.digests.fork(start) if start == len(session.data) else None

    def forget_contents(self) -> None:
        """Drop the bytes of every object and upload, keeping each object's size and checksums (benchmarks
        that upload many 500 MB packages and read none back; a fake holding gigabytes slows every run)."""
        for obj in self.objects.values():
            if obj.forgotten_size is None:
                obj.hashes()
                obj.forgotten_size, obj.data = len(obj.data), b""
        self.uploads.clear()

    # -- REST handlers -----------------------------------------------------------------------------------
    def insert(self, request: RecordedRequest, bucket: str) -> Response:
        """``POST /upload/storage/v1/b/{bucket}/o?uploadType=multipart|media|resumable``."""
        self._bucket(bucket)
        kind = request.param("uploadType") or "media"
        content_type = request.headers.get("content-type", "")
        if kind == "multipart":
            metadata, data, media_type = _parse_multipart(content_type, request.body)
            metadata.setdefault("contentType", media_type)
            return self._finish(request, bucket, metadata, data, kind)
        if kind == "media":
            return self._finish(request, bucket, {"contentType": content_type or None}, request.body, kind)
        if kind == "resumable":
            metadata = request.json if isinstance(request.json, dict) else {}
            name = metadata.get("name") or request.param("name")
            if not name:
                raise ApiError(400, "Required parameter: name")
            total = request.headers.get("x-upload-content-length")
            session_id = f"session{next(self._session_ids)}"
            self.sessions[session_id] = _Session(
                bucket, name, {**metadata, "name": name}, int(total) if total else None
            )
            prefix = request.path.lstrip("/")
            location = f"{self.base_url()}{prefix}?uploadType=resumable&upload_id={session_id}"
            return Response(200, {}, headers={"Location": location})
        raise ApiError(400, f"Invalid upload type: {kind}")

    def resume(self, request: RecordedRequest, bucket: str) -> Response:
        """``PUT`` to a resumable session URI: append a chunk (308 + Range) or finish (200 + object)."""
        session = self.sessions.get(request.param("upload_id") or "")
        if session is None or session.bucket != bucket:
            raise ApiError(404, "No such upload session.")
        header = request.headers.get("content-range")
        match = _RANGE.match(header.strip()) if header else None
        if header and not match:
            raise ApiError(400, f"Invalid Content-Range: {header}")
        start = int(match.group(1)) if match and match.group(1) else None
        if match and match.group(3) != "*":
            session.total = int(match.group(3))
        if start is not None:
            if start > len(session.data):
                raise ApiError(
                    400, f"Chunk starts at {start}, but only {len(session.data)} bytes were received."
                )
            skip = len(session.data) - start
            if skip:
                session.append(memoryview(request.body)[skip:])
            else:
                session.append(request.body, request.streamed)
        elif not header:
            session.append(request.body)
            session.total = len(session.data)
        if session.total is not None and len(session.data) >= session.total:
            del self.sessions[request.param("upload_id") or ""]
            data, session.data = session.data, bytearray()  # kept as received: no copy of 500 MB
            return self._finish(
                request, bucket, session.metadata, data, "resumable", session.digests.values()
            )
        headers = {"Range": f"bytes=0-{len(session.data) - 1}"} if session.data else {}
        return Response(308, raw=b"", headers=headers)

    def get_bucket(self, request: RecordedRequest, bucket: str) -> Response:
        """``GET /storage/v1/b/{bucket}``."""
        self._bucket(bucket)
        fields = self.bucket_fields.get(bucket, {"location": "US-CENTRAL1", "locationType": "region"})
        return Response(200, {"kind": "storage#bucket", "id": bucket, "name": bucket, **fields})

    def get_object(self, request: RecordedRequest, bucket: str, name: str) -> Response:
        """``GET /storage/v1/b/{bucket}/o/{name}`` (metadata, or bytes with ``alt=media``)."""
        obj = self._object(bucket, name)
        if request.param("alt") == "media":
            return Response(200, raw=bytes(obj.data), content_type=obj.content_type)
        return Response(200, self.resource(obj))

    def delete_object(self, request: RecordedRequest, bucket: str, name: str) -> Response:
        """``DELETE /storage/v1/b/{bucket}/o/{name}``."""
        self._object(bucket, name)
        del self.objects[(bucket, name)]
        return Response(204, raw=b"")

    def list_objects(self, request: RecordedRequest, bucket: str) -> Response:
        """``GET /storage/v1/b/{bucket}/o`` with ``prefix``, ``maxResults``, ``pageToken``."""
        self._bucket(bucket)
        prefix = request.param("prefix") or ""
        found = [
            self.resource(o)
            for (b, n), o in sorted(self.objects.items())
            if b == bucket and n.startswith(prefix)
        ]
        size = int_param(request.param("maxResults"), "max_results")
        items, token = page(found, size, request.param("pageToken"), 1000, 1000)
        answer: dict[str, Any] = {"kind": "storage#objects", "items": items}
        if token:
            answer["nextPageToken"] = token
        return Response(200, answer)
