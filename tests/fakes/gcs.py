"""A loopback Cloud Storage: `gcp-storage-emulator` in this process, counting the bytes it receives.

The fixture `gcs_emulator` starts it on a free 127.0.0.1 port, points STORAGE_EMULATOR_HOST at it and
creates the bucket `BUCKET`. Counting happens at the emulator's socket (request bodies it read), so a test
can tell "nothing was uploaded" without trusting mlsubmit's own report. It can also answer the next
matching requests with an error, to exercise retries.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from http import server
from typing import IO, Any

import pytest
from gcp_storage_emulator.handlers import buckets
from gcp_storage_emulator.handlers import objects as object_handlers
from gcp_storage_emulator.server import RequestHandler
from gcp_storage_emulator.storage import Storage

BUCKET = "mlsubmit-test-bucket"


def _resumable_incomplete(response: Any, storage: Storage, upload_id: str, fallback_end: int = 0) -> None:
    """The emulator's "308 Resume Incomplete", without its `Range: bytes=0-0` when nothing has arrived.

    Cloud Storage sends no Range header then; `bytes=0-0` means one byte, so a client that asks where to
    resume after a failed first chunk (googleapiclient's status query) would skip the first byte.
    """
    response.status = object_handlers.GoogleHTTPStatus.RESUME_INCOMPLETE
    received = storage.get_resumable_byte_count(upload_id)
    if received > 0:
        response["Range"] = f"bytes=0-{received - 1}"


object_handlers._resumable_incomplete = _resumable_incomplete


@dataclass(frozen=True)
class Recorded:
    """One request the emulator received: method, path (with query), body bytes read, injected status."""

    method: str
    path: str
    body_bytes: int
    injected_status: int | None = None
    headers: dict[str, str] = field(default_factory=dict)

    @property
    def is_upload(self) -> bool:
        return self.path.startswith("/upload/")


@dataclass
class Fault:
    """Answer the next `count` requests for which `match(method, path)` holds with `status`."""

    count: int
    status: int
    match: Callable[[str, str], bool]


class _CountingReader:
    """Wraps the handler's rfile and counts every byte read from the socket."""

    def __init__(self, raw: IO[bytes]) -> None:
        self._raw = raw
        self.count = 0

    def read(self, size: int = -1) -> bytes:
        data = self._raw.read(size)
        self.count += len(data)
        return data

    def readline(self, size: int = -1) -> bytes:
        data = self._raw.readline(size)
        self.count += len(data)
        return data

    def __getattr__(self, name: str) -> Any:
        return getattr(self._raw, name)


@dataclass
class GcsEmulator:
    """Handle on a running emulator: its URL, what it received, its objects."""

    host: str
    storage: Storage
    requests: list[Recorded] = field(default_factory=list)
    faults: list[Fault] = field(default_factory=list)
    _httpd: server.HTTPServer | None = None
    _thread: threading.Thread | None = None

    def bytes_received(self) -> int:
        """Request-body bytes received by upload endpoints, incl. those answered with an injected error."""
        return sum(r.body_bytes for r in self.requests if r.is_upload)

    def uploads(self) -> list[Recorded]:
        """Upload requests received so far."""
        return [r for r in self.requests if r.is_upload]

    def reset_counters(self) -> None:
        """Forget the requests seen so far (objects stay)."""
        self.requests.clear()

    def objects(self, bucket: str = BUCKET) -> dict[str, bytes]:
        """Every object in `bucket`, name -> contents."""
        return {name: self.storage.get_file(bucket, name) for name in self.storage.objects.get(bucket, {})}

    def create_bucket(self, name: str) -> None:
        """Create a bucket (no-op if it exists)."""
        buckets.create_bucket(name, self.storage)

    def fail_next(
        self, count: int, status: int = 503, match: Callable[[str, str], bool] = lambda method, path: True
    ) -> None:
        """Answer the next `count` matching requests with `status` instead of serving them."""
        self.faults.append(Fault(count, status, match))

    def _take_fault(self, method: str, path: str) -> int | None:
        for fault in self.faults:
            if fault.count > 0 and fault.match(method, path):
                fault.count -= 1
                return fault.status
        return None

    def stop(self) -> None:
        """Shut the server down and wait for its thread."""
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=10)


class _Handler(RequestHandler):  # type: ignore[misc]
    """The emulator's handler, plus byte counting and fault injection."""

    emulator: GcsEmulator
    rfile: Any
    _pending: tuple[str, int, int | None]

    def setup(self) -> None:
        super().setup()
        self.rfile = _CountingReader(self.rfile)

    def _serve(self, method: str, serve: Callable[[], None]) -> None:
        self._pending = (method, self.rfile.count, None)
        status = self.emulator._take_fault(method, self.path)
        if status is None:
            serve()
            return
        self._pending = (method, self.rfile.count, status)
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        body = json.dumps({"error": {"code": status, "message": "injected by the test"}}).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def end_headers(self) -> None:
        # Record before the response leaves: once the client has its answer, the test may look.
        method, before, status = getattr(self, "_pending", (self.command or "?", self.rfile.count, None))
        body_bytes = self.rfile.count - before
        self.emulator.requests.append(
            Recorded(method, self.path, body_bytes, status, dict(self.headers.items()))
        )
        super().end_headers()

    def do_GET(self) -> None:
        self._serve("GET", super().do_GET)

    def do_POST(self) -> None:
        self._serve("POST", super().do_POST)

    def do_PUT(self) -> None:
        self._serve("PUT", super().do_PUT)

    def do_DELETE(self) -> None:
        self._serve("DELETE", super().do_DELETE)

    def do_PATCH(self) -> None:
        self._serve("PATCH", super().do_PATCH)

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep test output clean


def start_emulator(host: str = "127.0.0.1", port: int = 0) -> GcsEmulator:
    """Start an in-memory emulator on `host:port` (0 = a free port) in a background thread."""
    storage = Storage(use_memory_fs=True)
    # A subclass per server, so two emulators in one process never share counters.
    handler_class: Any = type("BoundHandler", (_Handler,), {})
    httpd = server.HTTPServer((host, port), partial(handler_class, storage))
    emulator = GcsEmulator(host=f"http://{host}:{httpd.server_address[1]}", storage=storage, _httpd=httpd)
    handler_class.emulator = emulator
    emulator._thread = threading.Thread(
        target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="gcs-emulator", daemon=True
    )
    emulator._thread.start()
    return emulator


@pytest.fixture
def gcs_emulator(monkeypatch: pytest.MonkeyPatch) -> Iterator[GcsEmulator]:
    """A fresh emulator with bucket BUCKET; STORAGE_EMULATOR_HOST points at it for the test's duration."""
    emulator = start_emulator()
    emulator.create_bucket(BUCKET)
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", emulator.host)
    try:
        yield emulator
    finally:
        emulator.stop()
