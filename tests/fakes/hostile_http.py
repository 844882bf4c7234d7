"""Tiny misbehaving HTTP servers on loopback: each answers every request with one scripted behaviour.

    with HostileServer(slow_drip(interval=0.3)) as server:
        ... server.url ...  # http://127.0.0.1:PORT/
    server.requests  # the raw request heads received (method, path, headers)
    server.connections  # how many TCP connections were accepted

A behaviour is a function ``(request, sock) -> bool`` that writes whatever it likes to ``sock``; it returns
True to keep the connection open for the next request. ``stop`` ends every behaviour's loop.
"""

from __future__ import annotations

import contextlib
import socket
import socketserver
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from io import BufferedIOBase
from types import TracebackType


@dataclass
class RawRequest:
    method: str
    path: str
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""


Behaviour = Callable[["RawRequest", socket.socket, threading.Event], bool]


def _read_request(reader: BufferedIOBase) -> RawRequest | None:
    line = reader.readline(65537)
    if not line:
        return None
    method, path, _version = line.decode("latin-1").rstrip("\r\n").split(" ", 2)
    headers: dict[str, str] = {}
    while True:
        raw = reader.readline(65537)
        if raw in (b"\r\n", b"\n", b""):
            break
        name, _sep, value = raw.decode("latin-1").partition(":")
        headers[name.strip().lower()] = value.strip()
    length = int(headers.get("content-length", "0") or 0)
    body = reader.read(length) if length else b""
    return RawRequest(method, path, headers, body)


class HostileServer:
    """A threaded TCP server on ``host`` that runs ``behaviour`` for every request (module docstring)."""

    def __init__(self, behaviour: Behaviour, host: str = "127.0.0.1") -> None:
        self.behaviour = behaviour
        self.host = host
        self.requests: list[RawRequest] = []
        self.connections = 0
        self.stop = threading.Event()
        self._lock = threading.Lock()
        outer = self

        class Handler(socketserver.StreamRequestHandler):
            def handle(self) -> None:
                with outer._lock:
                    outer.connections += 1
                while not outer.stop.is_set():
                    try:
                        request = _read_request(self.rfile)
                    except (OSError, ValueError):
                        return
                    if request is None:
                        return
                    with outer._lock:
                        outer.requests.append(request)
                    try:
                        keep = outer.behaviour(request, self.connection, outer.stop)
                    except OSError:
                        return
                    if not keep:
                        return

        class Server(socketserver.ThreadingTCPServer):
            daemon_threads = True
            allow_reuse_address = True

        self._server = Server((host, 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self._server.server_address[1]}/"

    def __enter__(self) -> HostileServer:
        self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, err: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop.set()
        self._server.shutdown()
        self._server.server_close()


def answer(status: int, body: bytes, headers: dict[str, str] | None = None, keep: bool = True) -> Behaviour:
    """A complete answer every time."""

    def behave(request: RawRequest, sock: socket.socket, stop: threading.Event) -> bool:
        head = f"HTTP/1.1 {status} X\r\nContent-Length: {len(body)}\r\n"
        head += "".join(f"{k}: {v}\r\n" for k, v in (headers or {}).items())
        sock.sendall(head.encode() + b"\r\n" + body)
        return keep

    return behave


def slow_drip(interval: float) -> Behaviour:
    """A status line, then one header byte every ``interval`` seconds, forever (until stopped)."""

    def behave(request: RawRequest, sock: socket.socket, stop: threading.Event) -> bool:
        sock.sendall(b"HTTP/1.1 200 OK\r\nX-Drip: ")
        while not stop.wait(interval):
            sock.sendall(b"a")
        return False

    return behave


def huge_length(declared: int, sent: int = 1 << 20) -> Behaviour:
    """Declares ``declared`` bytes of body, sends ``sent`` of them, then holds the connection."""

    def behave(request: RawRequest, sock: socket.socket, stop: threading.Event) -> bool:
        sock.sendall(f"HTTP/1.1 200 OK\r\nContent-Length: {declared}\r\n\r\n".encode())
        with contextlib.suppress(OSError):
            sock.sendall(b"{" + b" " * (sent - 1))
        stop.wait(30)
        return False

    return behave


def endless_chunks(chunk: int = 65536) -> Behaviour:
    """A chunked 200 answer that never ends; counts what it sent in ``behave.sent``."""

    def behave(request: RawRequest, sock: socket.socket, stop: threading.Event) -> bool:
        sock.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
        piece = f"{chunk:x}\r\n".encode() + b" " * chunk + b"\r\n"
        while not stop.is_set():
            sock.sendall(piece)
            behave.sent += chunk  # type: ignore[attr-defined]
        return False

    behave.sent = 0  # type: ignore[attr-defined]
    return behave


def drop_after_request() -> Behaviour:
    """Reads the request and closes the connection without answering."""

    def behave(request: RawRequest, sock: socket.socket, stop: threading.Event) -> bool:
        return False

    return behave
