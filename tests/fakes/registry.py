"""A scripted Docker registry for the registry client's edge cases: each ``HEAD`` path gets a set answer.

The real registry (``docker-registry``, tests/fakes/containers.py) covers the ordinary answers; this one serves
what a real registry rarely does on demand (a redirect, a 401, a digest that is not one) and records every
request's headers, so a test can see that no token went where it must not.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class ScriptedRegistry:
    """Answers by path: ``answers[path] = (status, headers)``; anything else is a 404."""

    host: str = ""
    answers: dict[str, tuple[int, dict[str, str]]] = field(default_factory=dict)
    seen: list[tuple[str, str, dict[str, str]]] = field(default_factory=list)  # (method, path, headers)


@contextmanager
def scripted_registry() -> Iterator[ScriptedRegistry]:
    """A :class:`ScriptedRegistry` served on 127.0.0.1 for the block."""
    registry = ScriptedRegistry()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: object) -> None:
            """Quiet: requests are recorded instead."""

        def do_HEAD(self) -> None:
            registry.seen.append(("HEAD", self.path, {k.lower(): v for k, v in self.headers.items()}))
            status, headers = registry.answers.get(self.path, (404, {}))
            self.send_response(status)
            for key, value in headers.items():
                self.send_header(key, value)
            self.send_header("Content-Length", "0")
            self.end_headers()

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    registry.host = f"127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield registry
    finally:
        server.shutdown()
        server.server_close()
