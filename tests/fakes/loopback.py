"""A threaded loopback HTTP server that records every request and can answer with injected faults.

:class:`LoopbackServer` is the transport under :class:`tests.fakes.api_server.FakeGoogleApis`: subclasses
register ``(method, path regex, handler)`` routes; handlers get the :class:`RecordedRequest` and the regex groups
(percent-decoded) and return a :class:`Response` or raise :class:`ApiError`. One lock serialises handlers and
the public helpers, so state is always consistent.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import re
import socket
import sys
import threading
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, TypeVar
from urllib.parse import parse_qs, unquote, urlsplit

from tests.fakes.wire import ApiError, RecordedRequest, Response, default_error_body, google_error, snapshot

_STREAM_MIN = 8 * 1024 * 1024  # bodies from this size on may be seen as they arrive (body_sink)
_STREAM_BLOCK = 4 * 1024 * 1024
FaultBody = dict[str, Any] | Callable[[RecordedRequest], dict[str, Any]] | None
Handler = Callable[..., Response]
S = TypeVar("S", bound="LoopbackServer")


@dataclass
class Fault:
    """An injected answer: ``status`` (None drops the connection), before or ``after`` processing."""

    method: str
    pattern: re.Pattern[str]
    status: int | None
    times: int | None  # None: every matching request
    after: bool
    body: FaultBody
    headers: dict[str, str]
    match: Callable[[RecordedRequest], bool] | None = None  # further narrows which requests it hits
    fired: int = 0

    def describe(self) -> str:
        """A short description for the request record."""
        what = "drop" if self.status is None else str(self.status)
        return f"{what} {'after' if self.after else 'before'} processing"


def _safe_match(predicate: Callable[[RecordedRequest], bool], request: RecordedRequest) -> bool:
    """A predicate that raises (say, on a request without a JSON body) does not match."""
    try:
        return bool(predicate(request))
    except Exception:
        return False


class _HttpServer(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    owner: LoopbackServer
    connections: set[socket.socket]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out in two writes; avoid 40 ms delayed-ACK stalls
    server: _HttpServer

    def setup(self) -> None:
        super().setup()
        self.server.connections.add(self.connection)

    def finish(self) -> None:
        self.server.connections.discard(self.connection)
        super().finish()

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the fake records requests instead of logging them."""

    def _read_body(self) -> bytes | bytearray:
        body: bytes | bytearray
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            body = bytearray()
            while size := int(self.rfile.readline().split(b";")[0].strip() or b"0", 16):
                body += self.rfile.read(size)
                self.rfile.readline()
            while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                pass
        else:
            length = int(self.headers.get("Content-Length") or 0)
            sink = self.server.owner.body_sink(self) if length >= _STREAM_MIN else None
            if sink is None:
                body = self.rfile.read(length)  # one read, no copies
            else:  # a large upload: its bytes go to the sink as they arrive (a service hashes while it receives)
                room = bytearray(length)
                view, got = memoryview(room), 0
                while got < length:
                    n = self.rfile.readinto(view[got : got + _STREAM_BLOCK])
                    if not n:
                        break
                    sink(view[got : got + n].toreadonly())
                    got += n
                self.streamed = sink
                return room if got == length else room[:got]
        if self.headers.get("Content-Encoding", "").lower() == "gzip":
            return gzip.decompress(body)
        return bytes(body)

    streamed: Any = None  # the body sink that saw this request's body, if any

    def _handle(self) -> None:
        self.server.owner._dispatch(self, self._read_body())

    do_GET = do_HEAD = do_POST = do_PUT = do_PATCH = do_DELETE = _handle


class LoopbackServer:
    """Serve registered routes on 127.0.0.1:<free port>; record requests; inject faults."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._requests: list[RecordedRequest] = []
        self._faults: list[Fault] = []
        self._gates: list[tuple[str, re.Pattern[str], threading.Barrier]] = []
        self._routes: list[tuple[str, re.Pattern[str], Handler]] = []
        self._httpd: _HttpServer | None = None
        self._thread: threading.Thread | None = None

    def body_sink(self, handler: BaseHTTPRequestHandler) -> Callable[[memoryview], None] | None:
        """A callable to see a large request body block by block as it arrives (None: read it whole). The sink
        reaches the route handler as ``request.streamed``; subclasses decide."""
        return None

    def add_route(self, method: str, path_regex: str, handler: Handler) -> None:
        """Answer ``method`` requests whose whole path matches ``path_regex`` with ``handler``."""
        self._routes.append((method.upper(), re.compile(path_regex), handler))

    # -- lifecycle ---------------------------------------------------------------------------------------
    def start(self: S) -> S:
        """Bind 127.0.0.1 on a free port and serve in a background thread."""
        if self._httpd is not None:
            return self
        httpd = _HttpServer(("127.0.0.1", 0), _Handler)
        httpd.owner = self
        httpd.connections = set()
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": 0.02}, name=type(self).__name__, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close every open connection."""
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        httpd.shutdown()
        for conn in list(httpd.connections):
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        httpd.server_close()
        if self._thread is not None:
            self._thread.join()

    def __enter__(self: S) -> S:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        """The bound port (the server must be started)."""
        if self._httpd is None:
            raise RuntimeError(f"{type(self).__name__} is not started")
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        """Base URL with a trailing slash, e.g. ``http://127.0.0.1:PORT/``."""
        return f"http://127.0.0.1:{self.port}/"

    # -- recording ---------------------------------------------------------------------------------------
    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request so far, in arrival order (copies)."""
        with self._lock:
            return snapshot(self._requests)

    def requests_matching(
        self, method: str | None = None, path_regex: str | None = None
    ) -> list[RecordedRequest]:
        """Recorded requests with ``method`` (any if None) whose path matches ``path_regex`` (re.search)."""
        pattern = re.compile(path_regex) if path_regex else None
        return [
            r
            for r in self.requests
            if (method is None or r.method == method.upper()) and (pattern is None or pattern.search(r.path))
        ]

    def clear_requests(self) -> None:
        """Forget the recorded requests (state and faults stay)."""
        with self._lock:
            self._requests.clear()

    # -- faults ------------------------------------------------------------------------------------------
    def hold(self, method: str, path_regex: str, parties: int, timeout: float = 20.0) -> None:
        """Hold matching requests (before they are processed, outside the lock) until ``parties`` of them have
        arrived, then let them all through: a race made certain (e.g. two creates after two free-id checks).
        After ``timeout`` seconds the held requests go on anyway."""
        barrier = threading.Barrier(parties, timeout=timeout)
        with self._lock:
            self._gates.append((method, re.compile(path_regex), barrier))

    def _wait_at_gates(self, request: RecordedRequest) -> None:
        with self._lock:
            gates = [b for m, p, b in self._gates if m == request.method and p.search(request.path)]
        for barrier in gates:
            with contextlib.suppress(threading.BrokenBarrierError):
                barrier.wait()

    def inject(
        self,
        method: str,
        path_regex: str,
        status: int,
        times: int | None = 1,
        after: bool = False,
        body: FaultBody = None,
        headers: dict[str, str] | None = None,
        match: Callable[[RecordedRequest], bool] | None = None,
    ) -> Fault:
        """Answer the next ``times`` matching requests with ``status`` (``times=None``: all of them).

        ``after=False`` answers without processing; ``after=True`` processes the request (the job IS created)
        and then answers ``status`` instead — a lost answer. ``body`` defaults to Google's error format; it may
        be a function of the request. ``method`` ``"*"`` matches any; the regex is searched in the path;
        ``match`` (e.g. ``lambda r: r.json["jobId"] == "j1"``) narrows it further, for parallel runs.
        """
        fault = Fault(
            method.upper(), re.compile(path_regex), status, times, after, body, dict(headers or {}), match
        )
        with self._lock:
            self._faults.append(fault)
        return fault

    def inject_drop(
        self,
        method: str,
        path_regex: str,
        times: int | None = 1,
        after: bool = False,
        match: Callable[[RecordedRequest], bool] | None = None,
    ) -> Fault:
        """Close the connection without any answer (before or ``after`` processing the request)."""
        fault = Fault(method.upper(), re.compile(path_regex), None, times, after, None, {}, match)
        with self._lock:
            self._faults.append(fault)
        return fault

    def pending_faults(self) -> list[Fault]:
        """Faults that have not used up their ``times`` yet."""
        with self._lock:
            return [f for f in self._faults if f.times is None or f.fired < f.times]

    def _take_fault(self, request: RecordedRequest) -> Fault | None:
        for fault in self._faults:
            if fault.times is not None and fault.fired >= fault.times:
                continue
            if fault.method not in ("*", request.method) or not fault.pattern.search(request.path):
                continue
            if fault.match is None or _safe_match(fault.match, request):
                fault.fired += 1
                return fault
        return None

    # -- request handling --------------------------------------------------------------------------------
    def _route(self, request: RecordedRequest) -> Response:
        known_path = False
        for method, pattern, handler in self._routes:
            match = pattern.match(request.path)
            if match is None:
                continue
            known_path = True
            if method == request.method:
                return handler(request, *(unquote(g) for g in match.groups()))
        if known_path:
            raise ApiError(405, f"Method {request.method} not allowed on {request.path}.", "UNIMPLEMENTED")
        raise ApiError(404, f"The fake has no route for {request.method} {request.path}.", "NOT_FOUND")

    def _dispatch(self, handler: _Handler, body: bytes | bytearray) -> None:
        split = urlsplit(handler.path)
        headers = {k.lower(): v for k, v in handler.headers.items()}
        request = RecordedRequest(handler.command, split.path, parse_qs(split.query), headers, body)
        request.streamed = handler.streamed
        bad_json = False
        if body and "json" in headers.get("content-type", ""):
            try:
                request.json = json.loads(body)
            except ValueError:
                bad_json = True
        with self._lock:
            self._requests.append(request)
            fault = self._take_fault(request)
        if fault is not None and not fault.after:
            self._answer_fault(handler, request, fault)
            return
        self._wait_at_gates(request)
        with self._lock:
            try:
                if bad_json:
                    raise ApiError(400, "Invalid JSON payload received. Unexpected token.")
                response = self._route(request)
            except ApiError as exc:
                response = Response(exc.code, exc.body)
            except Exception as exc:  # a bug in the fake: answer 500 and show it
                traceback.print_exc(file=sys.stderr)
                response = Response(500, google_error(500, f"Fake server bug: {exc!r}"))
        if fault is not None:
            self._answer_fault(handler, request, fault)
        else:
            request.status = response.status
            self._write(handler, response)

    def _answer_fault(self, handler: _Handler, request: RecordedRequest, fault: Fault) -> None:
        request.fault = fault.describe()
        if fault.status is None:
            handler.close_connection = True
            return
        request.status = fault.status
        body = fault.body(request) if callable(fault.body) else fault.body
        self._write(
            handler, Response(fault.status, body or default_error_body(fault.status), headers=fault.headers)
        )

    @staticmethod
    def _write(handler: _Handler, response: Response) -> None:
        if response.raw is not None:
            payload = response.raw
        else:
            payload = json.dumps(response.json if response.json is not None else {}).encode()
        handler.send_response(response.status)
        handler.send_header("Content-Type", response.content_type)
        handler.send_header("Content-Length", str(len(payload)))
        for name, value in response.headers.items():
            handler.send_header(name, value)
        handler.end_headers()
        if handler.command != "HEAD":
            handler.wfile.write(payload)
