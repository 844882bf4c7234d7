"""Cloud Storage uploads through ``services.rest``: one multipart request per package.

A package up to the upload chunk size goes up as one ``multipart/related`` request (metadata JSON, then the
bytes), https://cloud.google.com/storage/docs/uploading-objects#uploading-an-object and
https://cloud.google.com/storage/docs/json_api/v1/objects/insert. Larger ones use googleapiclient's resumable
upload, built only then (``StorageClient.resumable``), so a small submit loads none of googleapiclient's
discovery, httplib2 or google-auth.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import quote, urlencode

from mlsubmit.services.rest import Request, Resource

#: The slowest upload a call allows for before its deadline: 256 KiB/s on top of the per-call deadline.
MIN_BYTES_PER_S = 256 * 1024


class StorageClient:
    """The storage v1 service of a command: reads and multipart inserts through ``services.rest``
    (``objects()``), resumable uploads through googleapiclient made on first need (``resumable()``)."""

    def __init__(self, lean: Resource, make_resumable: Callable[[], Any]) -> None:
        self.lean = lean
        self._make_resumable = make_resumable
        self._resumable: Any = None

    def objects(self) -> Any:
        """The lean ``objects`` collection (``get``)."""
        return self.lean.objects()

    def resumable(self) -> Any:
        """googleapiclient's storage v1 service, for chunked resumable uploads."""
        if self._resumable is None:
            self._resumable = self._make_resumable()
        return self._resumable


def multipart_body(metadata: Mapping[str, Any], data: bytes, mime_type: str) -> tuple[bytes, str]:
    """(body, content type) of a ``multipart/related`` upload: the metadata part, then the media part."""
    boundary = "===============" + os.urandom(16).hex() + "=="
    head = (
        f"--{boundary}\r\nContent-Type: application/json; charset=UTF-8\r\n\r\n"
        f"{json.dumps(dict(metadata))}\r\n"
        f"--{boundary}\r\nContent-Type: {mime_type}\r\nContent-Transfer-Encoding: binary\r\n\r\n"
    ).encode()
    return head + data + f"\r\n--{boundary}--".encode(), f'multipart/related; boundary="{boundary}"'


def multipart_insert(
    client: StorageClient,
    bucket: str,
    metadata: Mapping[str, Any],
    data: bytes,
    *,
    fields: str,
    mime_type: str = "application/octet-stream",
) -> Any:
    """objects.insert of ``data`` with ``metadata`` in one request; the stored object's ``fields``."""
    rest_client = client.lean._client
    url = f"{rest_client.root_url}upload/{rest_client.service_path}b/{quote(bucket, safe='')}/o?" + urlencode(
        {"uploadType": "multipart", "fields": fields, "alt": "json"}
    )
    body, content_type = multipart_body(metadata, data, mime_type)
    request = Request(rest_client, "POST", url, body)
    deadline = rest_client.wire.deadline + len(data) / MIN_BYTES_PER_S
    return rest_client.execute(request, headers={"content-type": content_type}, deadline=deadline)
