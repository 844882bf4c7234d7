"""Cloud Storage uploads through ``services.rest``: one multipart objects.insert up to the chunk size, else the
resumable protocol (https://cloud.google.com/storage/docs/performing-resumable-uploads), streamed from the file;
a session URI on another host is refused, and a service that stops taking bytes ends the upload."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote, urlencode

from mlsubmit.errors import StagingError
from mlsubmit.services.answers import read_json
from mlsubmit.services.rest import Client, Request, Resource, http_error
from mlsubmit.services.wire import origin_of

#: The slowest upload a call allows for before its deadline: 256 KiB/s on top of the per-call deadline.
MIN_BYTES_PER_S = 256 * 1024
MIME = "application/octet-stream"


def _upload_url(rest: Client, bucket: str, kind: str, fields: str) -> str:
    query = urlencode({"uploadType": kind, "fields": fields, "alt": "json"})
    return f"{rest.root_url}upload/{rest.service_path}b/{quote(bucket, safe='')}/o?{query}"


def multipart_insert(
    client: Resource, bucket: str, metadata: Mapping[str, Any], data: bytes, *, fields: str
) -> Any:
    """objects.insert of ``data`` with ``metadata`` in one ``multipart/related`` request; the object's ``fields``."""
    rest = client._client
    boundary = "===============" + os.urandom(16).hex() + "=="
    head = (
        f"--{boundary}\r\nContent-Type: application/json; charset=UTF-8\r\n\r\n"
        f"{json.dumps(dict(metadata))}\r\n"
        f"--{boundary}\r\nContent-Type: {MIME}\r\nContent-Transfer-Encoding: binary\r\n\r\n"
    ).encode()
    body = head + data + f"\r\n--{boundary}--".encode()
    request = Request(rest, "POST", _upload_url(rest, bucket, "multipart", fields), body)
    deadline = rest.wire.deadline + len(data) / MIN_BYTES_PER_S
    headers = {"content-type": f'multipart/related; boundary="{boundary}"'}
    return rest.execute(request, headers=headers, deadline=deadline)


class _Stretch:
    """One PUT's body: ``length`` bytes of ``reader`` from ``start``; a file that ends early is an error."""

    def __init__(self, reader: Any, start: int, length: int) -> None:
        self._reader = reader
        self._at = start
        self._left = length
        reader.seek(start)

    def read(self, size: int = -1) -> bytes:
        want = self._left if size < 0 else min(size, self._left)
        if want <= 0:
            return b""
        data: bytes = self._reader.read(want)
        if len(data) < want:
            raise StagingError(
                f"the file changed while it was uploaded (it ends at byte {self._at + len(data)}); submit again"
            )
        self._at += len(data)
        self._left -= len(data)
        return data


_RANGE_END = re.compile(r"^bytes=0-(\d+)$")
_MAX_STALLS = 3
#: A service that takes a few bytes per round (or forgets what it held) would have the file sent again and
#: again: the bytes one upload sends are bounded by this multiple of the file.
MAX_SEND_FACTOR = 3


class ResumableUpload:
    """One resumable objects.insert: call :meth:`step` (under a retry policy) until it returns the object."""

    def __init__(
        self,
        client: Resource,
        bucket: str,
        metadata: Mapping[str, Any],
        reader: Any,
        size: int,
        chunk_size: int,
        *,
        fields: str,
    ) -> None:
        self._rest: Client = client._client
        self._url = _upload_url(self._rest, bucket, "resumable", fields)
        self._metadata = dict(metadata)
        self._uri = f"gs://{bucket}/{metadata.get('name')}"
        self._reader = reader
        self._size = size
        self._chunk = chunk_size
        self.session: str | None = None  # the session URI, once opened
        self._offset = 0  # bytes the service holds, as far as we know
        self._unsure = False  # a step failed: ask before sending
        self._stalls = 0  # answers in a row that did not move the upload on
        self._sent = 0  # bytes sent in every PUT so far
        self._reached = 0  # the end of the furthest chunk sent: the service cannot hold more than this

    def _send(
        self, method: str, url: str, body: bytes | _Stretch, headers: Mapping[str, str]
    ) -> tuple[Any, bytes]:
        rest = self._rest
        size = int(headers.get("content-length") or 0) if isinstance(body, _Stretch) else len(body)
        deadline = rest.wire.deadline + size / MIN_BYTES_PER_S
        response, content = rest.wire.send(
            method, url, body=body, headers=headers, origin=rest.origin, token=rest.token, deadline=deadline
        )
        if response.status != 308 and not 200 <= response.status < 300:
            raise http_error(response, content, url)
        return response, content

    def _open(self) -> str:
        rest = self._rest
        headers = {
            "content-type": "application/json; charset=UTF-8",
            "x-upload-content-type": MIME,
            "x-upload-content-length": str(self._size),
        }
        response, _content = self._send("POST", self._url, json.dumps(self._metadata).encode(), headers)
        location: str = response.get("location", "")
        try:
            # Visible ASCII only: the URI goes on a request line as it is (http.client refuses anything else).
            same_host = all("\x21" <= c <= "\x7e" for c in location) and origin_of(location) == rest.origin
        except Exception:
            same_host = False
        if not same_host:
            raise StagingError(
                f"Cloud Storage answered the upload of {self._uri} with a session URI that is not on "
                f"{rest.root_url} ({location[:80]!r}); nothing was sent there."
            )
        return location

    def _answer(self, response: Any, content: bytes, sent: bool) -> Any:
        """The object when the service has every byte; else None, and where to go on from."""
        if response.status != 308:
            return read_json(content, f"the upload of {self._uri}")
        match = _RANGE_END.match(response.get("range", "").strip())
        held = int(match.group(1)) + 1 if match else 0
        if held < self._offset and sent:
            raise StagingError(
                f"Cloud Storage said it held {self._offset} bytes of the upload, then only {held}: its progress went "
                "backwards; submit again later."
            )
        if held > self._reached:  # a Range over bytes never sent: going on would leave a hole in the object
            raise StagingError(
                f"Cloud Storage says it holds {held} bytes of the upload of {self._uri}, but only {self._reached} "
                "were sent; nothing more is sent to a session that claims bytes it never got. Submit again."
            )
        if held >= self._size:  # every byte, yet not finished; or more bytes than the file has
            raise StagingError(
                f"Cloud Storage says it holds {held} bytes of a {self._size}-byte upload but did not finish it; "
                "submit again."
            )
        # bytes went out and were answered: a service that keeps none of them, round after round, stalls
        if sent:
            self._stalls = 0 if held > self._offset else self._stalls + 1
        if self._stalls > _MAX_STALLS:
            raise StagingError(
                f"Cloud Storage kept no more of the upload after {self._stalls} rounds (it holds {held} of "
                f"{self._size} bytes); submit again later."
            )
        self._offset = held
        return None

    def step(self) -> Any:
        """Open the session, or ask where it stands after a failure, or send the next chunk (see the class)."""
        if self.session is None:
            self.session = self._open()
        if self._unsure:
            response, content = self._send(
                "PUT", self.session, b"", {"content-range": f"bytes */{self._size}"}
            )
            self._unsure = False
            done = self._answer(response, content, sent=False)
            if done is not None:
                return done
        start = self._offset
        length = min(self._chunk, self._size - start)
        if self._sent + length > MAX_SEND_FACTOR * self._size:
            raise StagingError(
                f"Cloud Storage holds only {start} of {self._size} bytes after {self._sent} were sent (its "
                f"progress crawls); stopped at {MAX_SEND_FACTOR} times the file. Submit again later."
            )
        self._sent += length
        self._reached = max(self._reached, start + length)
        body = _Stretch(self._reader, start, length)
        headers = {
            "content-type": MIME,
            "content-range": f"bytes {start}-{start + length - 1}/{self._size}",
            "content-length": str(length),
        }
        self._unsure = True
        response, content = self._send("PUT", self.session, body, headers)
        self._unsure = False
        return self._answer(response, content, sent=True)
