"""Wire-level pieces shared by the fake Google APIs: responses, Google's error format, paging, timestamps."""

from __future__ import annotations

import copy
import datetime as dt
from dataclasses import dataclass, field
from typing import Any, TypeVar

T = TypeVar("T")

# google.rpc.Code names for the HTTP statuses the fakes answer with.
STATUS_NAMES: dict[int, str] = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    409: "ALREADY_EXISTS",
    412: "FAILED_PRECONDITION",
    429: "RESOURCE_EXHAUSTED",
    499: "CANCELLED",
    500: "INTERNAL",
    501: "NOT_IMPLEMENTED",
    502: "UNAVAILABLE",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}

DEFAULT_MESSAGES: dict[int, str] = {
    429: "Quota exceeded for quota metric 'Requests' of service.",
    500: "Internal error encountered.",
    502: "Bad gateway.",
    503: "The service is currently unavailable.",
    504: "The request timed out.",
}


def google_error(
    code: int, message: str, status: str | None = None, details: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """Return an error body in Google's JSON format: ``{"error": {"code", "message", "status"}}``."""
    error: dict[str, Any] = {
        "code": code,
        "message": message,
        "status": status or STATUS_NAMES.get(code, "UNKNOWN"),
    }
    if details:
        error["details"] = details
    return {"error": error}


def default_error_body(code: int) -> dict[str, Any]:
    """A plausible Google error body for an injected status that came without one."""
    return google_error(code, DEFAULT_MESSAGES.get(code, f"Injected error {code}."))


def permission_denied_body(permission: str, resource: str) -> dict[str, Any]:
    """The 403 body the service sends when the caller lacks ``permission`` on ``resource``."""
    message = f"Permission '{permission}' denied on resource '{resource}' (or it may not exist)."
    detail = {
        "@type": "type.googleapis.com/google.rpc.ErrorInfo",
        "reason": "IAM_PERMISSION_DENIED",
        "domain": "googleapis.com",
        "metadata": {"permission": permission, "resource": resource},
    }
    return google_error(403, message, "PERMISSION_DENIED", [detail])


class ApiError(Exception):
    """Raised by a handler to answer with Google's error JSON."""

    def __init__(self, code: int, message: str, status: str | None = None, details: list[Any] | None = None):
        super().__init__(message)
        self.code = code
        self.body = google_error(code, message, status, details)


@dataclass
class RecordedRequest:
    """One request as the server saw it. ``headers`` keys are lower case; ``json`` is the parsed body or None."""

    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: bytes | bytearray  # a large upload body stays the bytearray it was received into
    json: Any = None
    status: int | None = None  # what was answered; None while pending or when the connection was dropped
    fault: str | None = None  # the injected fault that fired on this request, if any
    streamed: Any = None  # what saw the body as it arrived (LoopbackServer.body_sink), if anything

    def param(self, name: str) -> str | None:
        """The first value of query parameter ``name``, or None."""
        values = self.query.get(name)
        return values[0] if values else None


@dataclass
class Response:
    """What a handler answers: a status, a JSON document or raw bytes, extra headers."""

    status: int = 200
    json: Any = None
    raw: bytes | None = None
    headers: dict[str, str] = field(default_factory=dict)
    content_type: str = "application/json; charset=UTF-8"


def page(
    items: list[Any], page_size: int | None, page_token: str | None, default_size: int, max_size: int
) -> tuple[list[Any], str | None]:
    """Slice ``items`` into one page; tokens are opaque offsets. Returns ``(items, next_token or None)``."""
    size = default_size if not page_size or page_size <= 0 else min(page_size, max_size)
    try:
        start = int(page_token) if page_token else 0
    except ValueError as exc:
        raise ApiError(400, f"Invalid page token: {page_token!r}.") from exc
    if start < 0:
        raise ApiError(400, f"Invalid page token: {page_token!r}.")
    end = start + size
    return items[start:end], (str(end) if end < len(items) else None)


def int_param(value: Any, name: str) -> int | None:
    """Parse an integer query/body parameter the way the services do (string or number); 400 otherwise."""
    if value is None or value == "":
        return None
    try:
        return int(value)
    except (TypeError, ValueError) as exc:
        raise ApiError(400, f"Invalid value at '{name}' (TYPE_INT32), \"{value}\"") from exc


def rfc3339(moment: dt.datetime) -> str:
    """Format a datetime like Google's APIs do: UTC, microseconds, trailing Z."""
    return moment.astimezone(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_rfc3339(text: str) -> dt.datetime | None:
    """Parse an RFC 3339 timestamp with any number of fractional digits; None when it is not one."""
    value = text.strip()
    if value.endswith(("Z", "z")):
        value = value[:-1] + "+00:00"
    if "." in value:
        head, _, rest = value.partition(".")
        digits = len(rest) - len(rest.lstrip("0123456789"))
        fraction, tail = rest[:digits], rest[digits:]
        value = f"{head}.{(fraction + '000000')[:6]}{tail}"
    try:
        moment = dt.datetime.fromisoformat(value)
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=dt.timezone.utc)


def snapshot(value: T) -> T:
    """A deep copy, so callers never share mutable state with the server."""
    return copy.deepcopy(value)
