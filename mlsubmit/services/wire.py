"""The HTTP transport of every API call (docs/security.md): the token only to its origin, no 3xx followed, a
deadline per call (``MLSUBMIT_HTTP_TIMEOUT``), bounded answers, verified TLS, and a create (a POST to a collection,
https://google.aip.dev/133) on the wire at most once per call."""

from __future__ import annotations

import contextlib
import http.client
import socket
import ssl
import threading
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from mlsubmit import __version__
from mlsubmit.errors import ApiError, EndpointRefusedError, UsageError
from mlsubmit.services.retry import seconds_from_env

if TYPE_CHECKING:
    from _typeshed import SupportsRead  # a body sent as it is read (its Content-Length in the headers)

USER_AGENT = f"mlsubmit/{__version__}"
DEFAULT_DEADLINE_S = 60.0
DEADLINE_ENV = "MLSUBMIT_HTTP_TIMEOUT"
MAX_ANSWER_BYTES = 32 * 1024 * 1024
MAX_ERROR_BYTES = 64 * 1024
NOT_RESENT = frozenset({"POST", "PATCH"})
# A connection refused outright means nothing listens there (a wrong endpoint, a service down): after this many
# refusals in a row, or this many seconds of them, the command gives up instead of retrying for minutes.
# gcloud gives up on a refused connection within about 30 s.
REFUSED_TRIES = 5
REFUSED_SECONDS = 30.0
_STALE = (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError, ConnectionAbortedError)

Origin = tuple[str, str, int]
#: http.client's read size for a streamed body (its default, 8 KiB, costs a Python call per 8 KiB sent).
SEND_BLOCK = 1024 * 1024


TokenSource = Callable[[], str]


def deadline_from_env(env: Mapping[str, str]) -> float:
    """The per-call deadline: ``MLSUBMIT_HTTP_TIMEOUT`` seconds when set, else 60."""
    return seconds_from_env(env, DEADLINE_ENV, above_zero=True) or DEFAULT_DEADLINE_S  # never 0: above zero


def origin_of(url: str) -> Origin:
    """(scheme, host, port) of an http(s) URL; the default port filled in."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https") or not parts.hostname:
        raise UsageError(f"{url}: expected an http:// or https:// URL with a host.")
    try:
        port = parts.port or (443 if scheme == "https" else 80)
    except ValueError:
        raise UsageError(f"{url}: the port is not a number from 0 to 65535.") from None
    return scheme, parts.hostname.lower(), port


def is_create(method: str, url: str) -> bool:
    """A POST to a collection (AIP-133 create), not a custom method such as ``:cancel`` or ``entries:list``."""
    last = urlsplit(url).path.rsplit("/", 1)[-1]
    return method in NOT_RESENT and ":" not in last and "%3a" not in last.lower()


class Response(dict[str, str]):
    """An answer's status and lower-case headers, shaped like httplib2's Response (``status``, ``reason``)."""

    def __init__(self, status: int, reason: str, headers: Mapping[str, str]) -> None:
        super().__init__((k.lower(), v) for k, v in headers.items())
        self.status = status
        self.reason = reason


class _Watchdog:
    """Closes a connection's socket when the call's deadline passes, whatever the call is blocked in."""

    def __init__(self, conn: http.client.HTTPConnection, seconds: float) -> None:
        self.fired = False
        self._conn = conn
        self._timer = threading.Timer(max(seconds, 0.0), self._fire)
        self._timer.daemon = True
        self._timer.start()

    def _fire(self) -> None:
        self.fired = True
        sock = self._conn.sock
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def cancel(self) -> None:
        self._timer.cancel()


class _HTTPSConnection(http.client.HTTPSConnection):
    """HTTPS checking the certificate for ``server_name`` (a kubeconfig's ``tls-server-name``) if given."""

    def __init__(self, *args: Any, server_name: str | None = None, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self._server_name = server_name

    def connect(self) -> None:
        if self._server_name is None:
            super().connect()
            return
        http.client.HTTPConnection.connect(self)
        self.sock = self._context.wrap_socket(self.sock, server_hostname=self._server_name)  # type: ignore[attr-defined]


class Wire:
    """Keep-alive connections by origin for one command; ``tls`` makes a new connection's context (a cluster's)."""

    def __init__(
        self,
        *,
        deadline: float = DEFAULT_DEADLINE_S,
        max_bytes: int = MAX_ANSWER_BYTES,
        tls: Callable[[], ssl.SSLContext] = ssl.create_default_context,
        server_name: str | None = None,
    ) -> None:
        self.deadline = deadline
        self.max_bytes = max_bytes
        self.tls = tls
        self.server_name = server_name
        self.connections: dict[Origin, http.client.HTTPConnection] = {}
        self._refusals: dict[Origin, tuple[float, int]] = {}  # origin -> (first refusal, refusals in a row)

    def close(self) -> None:
        """Close every pooled connection (they are reopened on the next call)."""
        for origin in list(self.connections):
            self._drop(origin)

    def _connection(self, origin: Origin, timeout: float) -> tuple[http.client.HTTPConnection, bool]:
        conn = self.connections.get(origin)
        if conn is not None and conn.sock is not None:
            conn.timeout = timeout
            conn.sock.settimeout(timeout)
            return conn, True
        scheme, host, port = origin
        if scheme == "https":
            conn = _HTTPSConnection(
                host,
                port,
                timeout=timeout,
                context=self.tls(),
                blocksize=SEND_BLOCK,
                server_name=self.server_name,
            )
        else:
            conn = http.client.HTTPConnection(host, port, timeout=timeout, blocksize=SEND_BLOCK)
        self.connections[origin] = conn
        return conn, False

    def _drop(self, origin: Origin) -> None:
        conn = self.connections.pop(origin, None)
        if conn is not None:
            with contextlib.suppress(Exception):
                conn.close()

    def send(
        self,
        method: str,
        url: str,
        *,
        body: bytes | SupportsRead[bytes] | None = None,
        headers: Mapping[str, str] | None = None,
        origin: Origin | None = None,
        token: TokenSource | None = None,
        max_bytes: int | None = None,
        deadline: float | None = None,
    ) -> tuple[Response, bytes]:
        """(response, body) within the deadline, signed only on ``origin``; an error answer is cut at 64 KiB."""
        seconds = self.deadline if deadline is None else deadline
        target = origin_of(url)
        parts = urlsplit(url)
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        sent: dict[str, str] = {"user-agent": USER_AGENT, "accept": "application/json"}
        sent.update({k.lower(): v for k, v in (headers or {}).items()})
        sent.pop("authorization", None)
        if token is not None and origin is not None and target == origin:
            value = token()
            # http.client would echo a bad one in its error
            if not value or not all(" " < c < "\x7f" for c in value):
                raise UsageError(
                    "the access token is not one line of visible ASCII characters; check "
                    "CLOUDSDK_AUTH_ACCESS_TOKEN or --access-token-file (the token is not shown)."
                )
            sent["authorization"] = f"Bearer {value}"
        if body is not None:
            sent.setdefault("content-type", "application/json")
        limit = self.max_bytes if max_bytes is None else max_bytes
        ends = time.monotonic() + seconds
        once = is_create(method, url) or hasattr(body, "read")  # a stream read once cannot go again
        while True:
            remaining = ends - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"{method} {url}: no complete answer within {seconds:g}s")
            conn, reused = self._connection(target, remaining)
            watchdog = _Watchdog(conn, remaining)
            got_answer = False
            try:
                conn.request(method, path, body=body, headers=sent)
                answer = conn.getresponse()
                got_answer = True
                result = self._read(answer, target, method, url, limit)
                if watchdog.fired:  # the socket was shut while the answer was read: it may be cut short
                    raise http.client.IncompleteRead(b"")
                self._refusals.pop(target, None)
                return result
            except BaseException as err:
                self._drop(target)
                if isinstance(err, ConnectionRefusedError):
                    self._refused(target, url)
                if watchdog.fired and isinstance(err, OSError | http.client.HTTPException):
                    raise TimeoutError(f"{method} {url}: no complete answer within {seconds:g}s") from None
                if isinstance(err, _STALE) and not got_answer and once:
                    raise ConnectionResetError(
                        f"the connection dropped before {method} was answered (not sent again)"
                    ) from None
                if isinstance(err, _STALE) and not got_answer and reused:
                    continue  # a keep-alive connection the server had closed: once more, fresh
                raise
            finally:
                watchdog.cancel()

    def _refused(self, target: Origin, url: str) -> None:
        """Count a refused connection; EndpointRefusedError once the budget (REFUSED_TRIES/SECONDS) is spent."""
        now = time.monotonic()
        first, count = self._refusals.get(target, (now, 0))
        count += 1
        self._refusals[target] = (first, count)
        if count >= REFUSED_TRIES or now - first >= REFUSED_SECONDS:
            scheme, host, port = target
            raise EndpointRefusedError(
                f"nothing is listening at {scheme}://{host}:{port} (the connection was refused {count} times "
                f"over {now - first:.0f}s); check the endpoint ({url.split('?')[0][:120]}) and that the service "
                "is up."
            ) from None

    def _read(
        self, answer: http.client.HTTPResponse, origin: Origin, method: str, url: str, limit: int
    ) -> tuple[Response, bytes]:
        response = Response(answer.status, answer.reason or "", dict(answer.getheaders()))
        ok = 200 <= answer.status < 300
        bound = limit if ok else MAX_ERROR_BYTES
        length = answer.getheader("content-length")
        declared = int(length) if length and length.strip().isdigit() else None
        if ok and declared is not None and declared > bound:
            self._drop(origin)
            raise ApiError(
                f"{method} {url}: the answer is {declared} bytes, more than the {bound} this call accepts; "
                "refused without reading it.",
                status=answer.status,
            )
        body = bytearray()
        while len(body) < bound and (chunk := answer.read(65536)):
            body += chunk
        if len(body) >= bound and not answer.isclosed() and answer.read(1):
            self._drop(origin)
            if ok:
                raise ApiError(
                    f"{method} {url}: the answer is larger than the {bound} bytes this call accepts; refused.",
                    status=answer.status,
                )
            return response, bytes(body[:bound])
        if answer.will_close:
            self._drop(origin)
        return response, bytes(body)
