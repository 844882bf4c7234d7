"""services.retry: one policy, one transient classifier, Retry-After, every retry reported."""

from __future__ import annotations

import http.client
import logging
import socket
import ssl
from collections.abc import Callable
from datetime import datetime, timezone
from email.utils import format_datetime
from typing import Any

import httplib2
import pytest
from googleapiclient.errors import HttpError

from mlsubmit.console import Console, using
from mlsubmit.errors import ApiError, HostNotFoundError, UsageError
from mlsubmit.services import retry
from mlsubmit.services.ml import Caller
from mlsubmit.services.retry import PollPolicy, RetryPolicy


def http_error(status: int, **headers: str) -> HttpError:
    return HttpError(httplib2.Response({"status": str(status), **headers}), b"{}")


class Script:
    """A request whose ``execute`` raises the scripted failures in turn, then answers ``result``."""

    def __init__(self, failures: list[BaseException], result: Any = "ok") -> None:
        self.failures = list(failures)
        self.result = result
        self.calls = 0

    def __call__(self) -> Any:
        self.calls += 1
        if self.failures:
            raise self.failures.pop(0)
        return self.result

    def request(self) -> Any:
        script = self

        class Request:
            def execute(self, num_retries: int = 0) -> Any:
                assert num_retries == 0  # googleapiclient's own retries stay off: one engine
                return script()

        return Request()


def run(
    script: Script, policy: RetryPolicy = retry.API_POLICY, **kwargs: Any
) -> tuple[Any, list[float], list[str]]:
    sleeps: list[float] = []
    notes: list[str] = []
    with using(Console(sleep=sleeps.append)):
        result = retry.call(script, "reading job j1", policy, notify=notes.append, **kwargs)
    return result, sleeps, notes


@pytest.mark.parametrize(
    ("exc", "transient"),
    [
        (http_error(408), True),
        (http_error(429), True),
        (http_error(500), True),
        (http_error(502), True),
        (http_error(503), True),
        (http_error(504), True),
        (http_error(400), False),
        (http_error(401), False),
        (http_error(403), False),
        (http_error(404), False),
        (http_error(409), False),
        (http_error(501), False),
        (ConnectionResetError("reset"), True),
        (ConnectionRefusedError("refused"), True),
        (TimeoutError("timed out"), True),
        (http.client.RemoteDisconnected("closed"), True),
        (httplib2.ServerNotFoundError("dns"), False),  # a name that does not resolve: said at once (issue 27)
        (socket.gaierror(socket.EAI_NONAME, "Name or service not known"), False),
        (HostNotFoundError("x.googleapis.com does not resolve"), False),
        (ssl.SSLCertVerificationError("self-signed certificate"), False),
        (ssl.SSLError("EOF occurred in violation of protocol"), True),
        (FileNotFoundError(2, "No such file", "/x"), False),
        (ValueError("a bug"), False),
        (ApiError("refused", status=403), False),
        (ApiError("busy", status=503), True),
        (ApiError("unreachable"), True),
    ],
)
def test_one_classifier_for_every_call(exc: BaseException, transient: bool) -> None:
    assert retry.is_transient(exc) is transient


@pytest.mark.parametrize(
    ("status", "header", "expected"),
    [
        (503, "7", 7.0),
        (429, "120", 30.0),  # capped by the policy
        (503, "Wed, 21 Oct 2015 07:28:10 GMT", 10.0),  # HTTP-date: 10 s after "now"
        (503, "Wed, 21 Oct 2015 07:27:00 GMT", 0.0),  # in the past: go now
        (503, "soon", 1.0),  # unusable: the backoff
    ],
)
def test_retry_after_is_honoured_in_seconds_or_as_a_date(status: int, header: str, expected: float) -> None:
    now = datetime(2015, 10, 21, 7, 28, 0, tzinfo=timezone.utc).timestamp()
    after = retry.retry_after(http_error(status, **{"retry-after": header}), now=lambda: now)
    assert RetryPolicy().wait(1, after) == pytest.approx(expected)


def test_retry_after_replaces_the_backoff_in_call() -> None:
    _result, sleeps, notes = run(Script([http_error(503, **{"retry-after": "4"}), http_error(503)]))
    assert sleeps == [4.0, 2.0]  # the header, then the backoff of attempt 2
    assert notes[0] == "reading job j1: HTTP 503; retrying in 4s (attempt 2 of 5)"


def test_a_408_is_retried_on_api_calls() -> None:
    script = Script([http_error(408), http_error(408)], result={"jobId": "j1"})
    sleeps: list[float] = []
    caller = Caller(policy=RetryPolicy(initial=0.5), sleep=sleeps.append, notify=lambda _m: None)
    assert caller.execute(script.request, "reading job j1") == {"jobId": "j1"}
    assert script.calls == 3 and sleeps == [0.5, 1.0]


def test_a_tls_certificate_error_is_never_retried() -> None:
    script = Script([ssl.SSLCertVerificationError("certificate verify failed")])
    sleeps: list[float] = []
    caller = Caller(sleep=sleeps.append, notify=lambda _m: None)
    with pytest.raises(ApiError, match=r"certificate verify failed.*not retried") as caught:
        caller.execute(script.request, "reading job j1")
    assert script.calls == 1 and sleeps == []
    assert caught.value.status is None


def test_a_connection_that_keeps_failing_becomes_an_api_error() -> None:
    script = Script([ConnectionResetError("reset")] * 3)
    caller = Caller(policy=RetryPolicy(attempts=3), sleep=lambda _s: None, notify=lambda _m: None)
    with pytest.raises(ApiError, match="connection error after 3 attempts"):
        caller.execute(script.request, "reading job j1")
    assert script.calls == 3


def test_every_retry_is_logged_when_no_one_is_notified(caplog: pytest.LogCaptureFixture) -> None:
    script = Script([http_error(503), ConnectionResetError("reset"), http_error(429)])
    with caplog.at_level(logging.WARNING, logger="mlsubmit.services.retry"):
        assert retry.call(script, "listing jobs", RetryPolicy(initial=0.0)) == "ok"  # initial 0: no wait
    assert [r.getMessage() for r in caplog.records] == [
        "listing jobs: HTTP 503; retrying in 0s (attempt 2 of 5)",
        "listing jobs: connection error (ConnectionResetError); retrying in 0s (attempt 3 of 5)",
        "listing jobs: HTTP 429; retrying in 0s (attempt 4 of 5)",
    ]


def test_attempts_bound_the_tries_and_the_last_failure_is_raised() -> None:
    script = Script([http_error(503)] * 5)
    with pytest.raises(HttpError):
        run(script, RetryPolicy(attempts=2))
    assert script.calls == 2


def test_a_deadline_bounds_unlimited_attempts() -> None:
    now = {"t": 0.0}

    def sleep(seconds: float) -> None:
        now["t"] += seconds

    script = Script([http_error(503)] * 100)
    policy = RetryPolicy(attempts=None, initial=1.0, factor=2.0, cap=4.0, deadline=10.0)
    with pytest.raises(HttpError), using(Console(sleep=sleep, clock=lambda: now["t"])):
        retry.call(script, "uploading", policy, notify=lambda _m: None)
    assert now["t"] <= 10.0 and script.calls == 4  # waits 1 + 2 + 4; another 4 would pass the deadline


def test_refusals_are_raised_at_once_and_on_error_sees_them_first() -> None:
    seen: list[int] = []

    def on_error(exc: BaseException, attempt: int) -> Any:
        seen.append(attempt)
        return "resolved" if retry.status_of(exc) == 409 else None

    result, sleeps, _notes = run(Script([http_error(503), http_error(409)]), on_error=on_error)
    assert result == "resolved" and seen == [1, 2] and sleeps == [1.0]
    with pytest.raises(HttpError):
        run(Script([http_error(403)]))


@pytest.mark.parametrize(
    ("env", "initial", "cap"),
    [({}, 1.0, 30.0), ({"MLSUBMIT_RETRY_INITIAL_DELAY": "0.01"}, 0.01, 30.0)],
)
def test_one_variable_tunes_the_policy(env: dict[str, str], initial: float, cap: float) -> None:
    policy = RetryPolicy.from_env(env)
    assert (policy.initial, policy.cap, policy.attempts) == (initial, cap, 5)
    storage = RetryPolicy.from_env(env, retry.STORAGE_POLICY)
    assert storage.initial == initial and storage.deadline == 300.0 and storage.attempts is None


@pytest.mark.parametrize("raw", ["fast", "-1"])
def test_a_bad_retry_variable_is_a_usage_error(raw: str) -> None:
    with pytest.raises(UsageError, match="MLSUBMIT_RETRY_INITIAL_DELAY"):
        RetryPolicy.from_env({"MLSUBMIT_RETRY_INITIAL_DELAY": raw})


def test_retries_while_polling_never_wait_longer_than_the_poll_interval() -> None:
    capped = RetryPolicy().capped(PollPolicy.fixed(0.05).cap)
    assert [capped.wait(n) for n in (1, 2, 5)] == [0.05, 0.05, 0.05]
    assert RetryPolicy().capped(PollPolicy().cap) == RetryPolicy()


def _date(seconds_from_epoch: float) -> str:
    return format_datetime(datetime.fromtimestamp(seconds_from_epoch, timezone.utc), usegmt=True)


def test_retry_after_date_uses_the_wall_clock() -> None:
    clock: Callable[[], float] = lambda: 1_000_000.0  # noqa: E731
    exc = http_error(503, **{"retry-after": _date(1_000_005.0)})
    assert retry.retry_after(exc, now=clock) == pytest.approx(5.0)
    assert retry.retry_after(http_error(503)) is None


@pytest.mark.parametrize(
    ("raw", "above_zero", "expected"),
    [
        (None, False, None),
        ("", False, None),
        ("2.5", False, 2.5),
        ("0", False, 0.0),
        ("abc", False, "expected a number of seconds"),
        ("-1", False, "from 0 to 3600"),
        ("nan", False, "from 0 to 3600"),
        ("inf", False, "from 0 to 3600"),
        ("1e308", True, "above 0 to 3600"),
        ("3600.5", False, "from 0 to 3600"),
        ("3600", False, 3600.0),
        ("0", True, "above 0"),
        ("7", True, 7.0),
    ],
)
def test_seconds_from_env(raw: str | None, above_zero: bool, expected: float | str | None) -> None:
    from mlsubmit.errors import UsageError
    from mlsubmit.services.retry import seconds_from_env

    env = {} if raw is None else {"MLSUBMIT_X": raw}
    if isinstance(expected, str):
        with pytest.raises(UsageError, match=expected) as caught:
            seconds_from_env(env, "MLSUBMIT_X", above_zero=above_zero)
        assert "MLSUBMIT_X=" in str(caught.value)
    else:
        assert seconds_from_env(env, "MLSUBMIT_X", above_zero=above_zero) == expected


def test_backoff_stays_at_its_cap_however_many_tries_or_quiet_polls() -> None:
    # Cloud Storage tries for as long as its deadline allows, and `Retry-After: 0` makes tries cheap: the
    # 1,025th try's backoff once overflowed the float (exit 3); so did the 1,752nd quiet poll of a long job.
    storage = retry.STORAGE_POLICY
    assert storage.wait(5000, 0.0) == 0.0
    assert storage.wait(5000) == storage.cap
    assert PollPolicy().delay(10**6) == PollPolicy().cap
