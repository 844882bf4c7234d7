"""The loopback-only guard (tests/fakes/network_guard.py, autouse in tests/conftest.py): foreign addresses are
refused before anything is resolved or sent, and a test that tried fails even if it swallowed the error."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable
from typing import Any

import pytest

from tests.fakes.network_guard import NetworkGuard, OutsideLoopbackError, is_allowed, is_loopback_host

TEST_NET = "192.0.2.1"  # TEST-NET-1 (RFC 5737): documentation only, never routed


@pytest.mark.parametrize(
    ("host", "allowed"),
    [
        ("127.0.0.1", True),
        ("127.5.6.7", True),
        ("::1", True),
        ("::ffff:127.0.0.1", True),
        ("localhost", True),
        ("0.0.0.0", True),
        ("", True),
        (TEST_NET, False),
        ("10.0.0.1", False),
        ("8.8.8.8", False),
        ("2001:db8::1", False),
        ("::ffff:192.0.2.1", False),
        ("storage.googleapis.com", False),
        ("localhost.example.com", False),
    ],
)
def test_loopback_hosts(host: str, allowed: bool) -> None:
    assert is_loopback_host(host) is allowed


def test_unix_and_non_ip_families_are_allowed() -> None:
    assert is_allowed(socket.AF_UNIX, "/tmp/some.sock")
    assert not is_allowed(socket.AF_INET, (TEST_NET, 80))
    assert not is_allowed(socket.AF_INET6, ("2001:db8::1", 80, 0, 0))


CONNECTS: dict[str, Callable[[], Any]] = {
    "connect": lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM).connect((TEST_NET, 9)),
    "connect_ex": lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM).connect_ex((TEST_NET, 9)),
    "create_connection": lambda: socket.create_connection((TEST_NET, 9), timeout=0.5),
    "name": lambda: socket.create_connection(("example.com", 80), timeout=0.5),
}


@pytest.mark.parametrize("attempt", CONNECTS.values(), ids=list(CONNECTS))
def test_foreign_connection_is_refused_before_it_starts(
    attempt: Callable[[], Any], loopback_only: NetworkGuard
) -> None:
    with pytest.raises(OutsideLoopbackError, match="tests may only reach loopback"):
        attempt()
    assert len(loopback_only.refused) == 1
    loopback_only.refused.clear()  # refused on purpose: this test must not fail at teardown


def test_loopback_connection_works() -> None:
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    accepted: list[socket.socket] = []
    thread = threading.Thread(target=lambda: accepted.append(server.accept()[0]))
    thread.start()
    with socket.create_connection(server.getsockname(), timeout=5) as client:
        client.sendall(b"x")
    thread.join(5)
    assert accepted[0].recv(1) == b"x"
    accepted[0].close()
    server.close()


def test_a_test_that_swallows_the_refusal_still_fails(pytester: pytest.Pytester) -> None:
    pytester.makeconftest("from tests.conftest import loopback_only  # noqa: F401\n")
    pytester.makepyfile(
        """
import socket

def test_sneaky():
    try:
        socket.socket().connect(("192.0.2.1", 443))
    except Exception:
        pass  # code under test that hides errors

def test_loopback_is_fine():
    with socket.socket() as s:
        s.connect_ex(("127.0.0.1", 9))  # refused by the OS (nothing listens), allowed by the guard
"""
    )
    # the inner run needs no asyncio plugin (unconfigured there, it only warns)
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-p", "no:asyncio")
    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines(["*connection to ('192.0.2.1', 443) refused*"])
