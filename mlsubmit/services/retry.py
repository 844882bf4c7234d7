"""One retry engine for every Google API call (docs/ci.md): bounded exponential backoff on 408, 429, 5xx and
dropped connections (never a TLS or local file error), ``Retry-After`` (RFC 9110 section 10.2.3) capped, every
retry reported. A create is sent again only by an explicit retry here."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import TypeVar

from mlsubmit import console
from mlsubmit.errors import ApiError, EndpointRefusedError, HostNotFoundError, UsageError

log = logging.getLogger(__name__)

T = TypeVar("T")

#: HTTP answers worth another try (google-api-core's and google-cloud-storage's list, plus 408).
TRANSIENT_STATUS = frozenset({408, 429, 500, 502, 503, 504})
#: The longest wait any MLSUBMIT_* seconds setting may ask for: an hour (a bigger number is a typo, and ``inf`` or
#: ``1e308`` would overflow a timer or a socket timeout).
MAX_ENV_SECONDS = 3600.0


def seconds_from_env(
    env: Mapping[str, str], name: str, *, above_zero: bool = False, maximum: float = MAX_ENV_SECONDS
) -> float | None:
    """The seconds in variable ``name`` (None when unset); a UsageError unless from 0 to ``maximum``."""
    if not (raw := env.get(name)):
        return None
    shown = raw[:40]
    try:
        seconds = float(raw)
    except ValueError:
        raise UsageError(f"{name}={shown!r}: expected a number of seconds.") from None
    low = "above 0" if above_zero else "from 0"
    if not (seconds > 0 if above_zero else seconds >= 0) or not seconds <= maximum:  # also catches nan
        raise UsageError(f"{name}={shown!r}: must be a number of seconds {low} to {maximum:g}.")
    return seconds


#: Backoff grows for this many steps at most: past it every wait is the cap (an unbounded count of tries,
#: or a poll of a job that runs for days, would otherwise overflow the float).
MAX_STEPS = 64


@dataclass(frozen=True)
class RetryPolicy:
    """Backoff within ``attempts`` tries (the first included) and ``deadline`` seconds (None: no bound)."""

    attempts: int | None = 5
    initial: float = 1.0
    factor: float = 2.0
    cap: float = 30.0
    deadline: float | None = None

    def wait(self, attempt: int, after: float | None = None) -> float:
        """The wait after failed try ``attempt`` (1: the first): the server's ``Retry-After``, else the backoff."""
        backoff = self.initial * self.factor ** min(max(0, attempt - 1), MAX_STEPS)
        return float(min(self.cap, backoff if after is None else after))

    def capped(self, seconds: float) -> RetryPolicy:
        """The same policy with no wait longer than ``seconds`` (a retry while polling)."""
        return replace(self, initial=min(self.initial, seconds), cap=min(self.cap, max(seconds, 0.0)))

    @classmethod
    def from_env(cls, env: Mapping[str, str], base: RetryPolicy | None = None) -> RetryPolicy:
        """``base`` (default: the API policy) with ``MLSUBMIT_RETRY_INITIAL_DELAY`` applied when it is set."""
        policy = base or cls()
        seconds = seconds_from_env(env, "MLSUBMIT_RETRY_INITIAL_DELAY")
        return policy if seconds is None else replace(policy, initial=seconds, cap=max(seconds, policy.cap))


#: API calls (ml, Vertex AI, Cloud Logging): five tries, 1 s doubling up to 30 s.
API_POLICY = RetryPolicy()
#: Cloud Storage requests and resumable chunks: as many tries as fit in five minutes (google-cloud-storage's).
STORAGE_POLICY = RetryPolicy(attempts=None, deadline=300.0)


def status_of(exc: BaseException) -> int | None:
    """The HTTP status of a googleapiclient HttpError (or anything with ``resp.status``), else None."""
    status = getattr(getattr(exc, "resp", None), "status", None)
    try:
        return int(status) if status is not None else None
    except (TypeError, ValueError):
        return None


def is_transient(exc: BaseException) -> bool:
    """Whether ``exc`` is a failure worth another try (module docstring)."""
    import http.client
    import ssl

    if isinstance(exc, EndpointRefusedError | HostNotFoundError) or unresolved(exc):
        return False  # nothing listens there / the name does not resolve: not worth seconds of retries
    if isinstance(exc, ApiError):  # an answer already explained: its status, or None when unreachable
        return exc.status is None or exc.status in TRANSIENT_STATUS
    status = status_of(exc)
    if status is not None or hasattr(exc, "resp"):  # an HTTP answer (without a usable status: not transient)
        return status in TRANSIENT_STATUS
    if isinstance(exc, ssl.SSLCertVerificationError | ssl.CertificateError):
        return False
    if isinstance(exc, OSError):  # ConnectionError, TimeoutError, socket and TLS errors; not a local file
        return exc.filename is None
    return isinstance(exc, http.client.HTTPException)


def unresolved(exc: BaseException) -> bool:
    """Whether ``exc`` says a host name did not resolve (not retried: seconds rarely bring a network back)."""
    import socket
    import sys

    if isinstance(exc, socket.gaierror):
        return True
    httplib2 = sys.modules.get("httplib2")
    return httplib2 is not None and isinstance(exc, httplib2.ServerNotFoundError)


def retry_after(exc: BaseException, now: Callable[[], float] = time.time) -> float | None:
    """Seconds a ``Retry-After`` header on the answer asks us to wait (None: no usable header)."""
    getter = getattr(getattr(exc, "resp", None), "get", None)
    raw = getter("retry-after") if callable(getter) else None
    text = str(raw).strip() if raw is not None else ""
    if not text:
        return None
    if text.isdigit():
        return float(int(text))
    from email.utils import parsedate_to_datetime

    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    return None if when.tzinfo is None else max(0.0, when.timestamp() - now())


def describe(exc: BaseException) -> str:
    """A short reason for a retry message: ``HTTP 503`` or the connection error's type."""
    if (status := status_of(exc)) is not None:
        return f"HTTP {status}"
    if unresolved(exc):
        return "the host name does not resolve (no network or DNS?)"
    return f"connection error ({type(exc).__name__})"


def call(
    fn: Callable[[], T],
    what: str,
    policy: RetryPolicy,
    *,
    sleep: Callable[[float], None] | None = None,
    notify: Callable[[str], None] | None = None,
    on_error: Callable[[BaseException, int], T | None] | None = None,
    reason: Callable[[BaseException], str] | None = None,
) -> T:
    """``fn()``, retried on transient failures as ``policy`` allows; ``on_error`` sees each failure first."""
    report = notify or log.warning
    clock = console.current().now
    wait = sleep or console.current().wait
    word = reason or describe
    deadline = None if policy.deadline is None else clock() + policy.deadline
    attempt = 0
    while True:
        attempt += 1
        try:
            return fn()
        except Exception as exc:
            if on_error is not None and (handled := on_error(exc, attempt)) is not None:
                return handled
            if not is_transient(exc) or (policy.attempts is not None and attempt >= policy.attempts):
                raise
            delay = policy.wait(attempt, retry_after(exc))
            if deadline is not None and clock() + delay > deadline:
                raise
            of = f" of {policy.attempts}" if policy.attempts is not None else ""
            report(f"{what}: {word(exc)}; retrying in {delay:g}s (attempt {attempt + 1}{of})")
            wait(delay)


@dataclass(frozen=True)
class PollPolicy:
    """Poll every ``initial * factor**quiet`` seconds, capped; ``error_budget`` failed polls in a row at most."""

    initial: float = 5.0
    factor: float = 1.5
    cap: float = 60.0
    error_budget: int = 5

    def delay(self, quiet: int) -> float:
        """Seconds to sleep before the next poll after ``quiet`` polls without news."""
        return float(min(self.cap, self.initial * self.factor ** min(max(0, quiet), MAX_STEPS)))

    @classmethod
    def fixed(cls, seconds: float, error_budget: int = 5) -> PollPolicy:
        """Poll every ``seconds`` without backoff (``--polling-interval``, ``MLSUBMIT_POLL_INTERVAL``)."""
        return cls(initial=seconds, factor=1.0, cap=seconds, error_budget=error_budget)

    @classmethod
    def from_env(cls, env: Mapping[str, str], default: PollPolicy | None = None) -> PollPolicy:
        """``MLSUBMIT_POLL_INTERVAL=S`` polls every S seconds without backoff (tests and impatient pipelines)."""
        base = default or cls()
        seconds = seconds_from_env(env, "MLSUBMIT_POLL_INTERVAL")
        return base if seconds is None else cls.fixed(seconds, base.error_budget)


def log_lag_from_env(env: Mapping[str, str]) -> float | None:
    """The seconds ``MLSUBMIT_LOG_LAG`` allows Cloud Logging to ingest entries (0 to 300), or None when unset."""
    return seconds_from_env(env, "MLSUBMIT_LOG_LAG", maximum=300.0)  # more is a typo, not an ingestion delay
