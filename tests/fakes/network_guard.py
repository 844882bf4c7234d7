"""No test reaches the network: connections from the test process go to loopback or unix sockets only.

:func:`guard_connections` wraps ``socket.socket.connect``/``connect_ex`` and ``socket.create_connection``; a
connection anywhere else raises :class:`OutsideLoopbackError` *before* anything is resolved or sent, and is
recorded so the autouse fixture in tests/conftest.py fails the test even when the code under test swallowed the
error. Host names other than ``localhost`` are refused too: resolving them would already ask a DNS server.
Child processes are not covered (they see the sandbox's own network rules).
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable
from typing import Any

import pytest

# The real functions, taken once at import: nested guards (a test of the guard) still end at the real socket.
_REAL_CONNECT = socket.socket.connect
_REAL_CONNECT_EX = socket.socket.connect_ex
_REAL_CREATE_CONNECTION = socket.create_connection

LOCAL_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback"})


class OutsideLoopbackError(AssertionError):
    """A test tried to connect beyond loopback (an AssertionError, so retry loops do not take it as transient)."""


def is_loopback_host(host: object) -> bool:
    """True for loopback addresses (127.0.0.0/8, ::1, IPv4-mapped loopback), ``localhost`` and the unspecified
    address (which Linux connects to the local host)."""
    if isinstance(host, bytes):
        host = host.decode("ascii", "replace")
    if not isinstance(host, str):
        return False
    if host == "" or host.lower().rstrip(".") in LOCAL_NAMES:
        return True
    try:
        address = ipaddress.ip_address(host.split("%", 1)[0])  # drop an IPv6 zone ("fe80::1%eth0")
    except ValueError:
        return False  # a name: resolving it would already leave the machine
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_loopback or address.is_unspecified


def is_allowed(family: int, address: Any) -> bool:
    """May a socket of ``family`` connect to ``address``? Unix and other non-IP sockets always may."""
    if family not in (socket.AF_INET, socket.AF_INET6):
        return True
    return isinstance(address, tuple) and bool(address) and is_loopback_host(address[0])


class NetworkGuard:
    """Records every refused connection; installed with :func:`guard_connections`."""

    def __init__(self) -> None:
        self.refused: list[str] = []

    def check(self, family: int, address: Any) -> None:
        if is_allowed(family, address):
            return
        what = f"connection to {address!r} refused: tests may only reach loopback (127.0.0.0/8, ::1) or unix sockets"
        self.refused.append(what)
        raise OutsideLoopbackError(what)

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        guard = self

        def connect(sock: socket.socket, address: Any) -> None:
            guard.check(sock.family, address)
            _REAL_CONNECT(sock, address)

        def connect_ex(sock: socket.socket, address: Any) -> int:
            guard.check(sock.family, address)
            return _REAL_CONNECT_EX(sock, address)

        def create_connection(address: tuple[str, int], *args: Any, **kwargs: Any) -> socket.socket:
            guard.check(socket.AF_INET, address)  # before getaddrinfo: no DNS query for a foreign name
            return _REAL_CREATE_CONNECTION(address, *args, **kwargs)

        wrappers: dict[str, Callable[..., Any]] = {"connect": connect, "connect_ex": connect_ex}
        for name, wrapper in wrappers.items():
            monkeypatch.setattr(socket.socket, name, wrapper)
        monkeypatch.setattr(socket, "create_connection", create_connection)


def guard_connections(monkeypatch: pytest.MonkeyPatch) -> NetworkGuard:
    """Install a guard for one test (undone by ``monkeypatch``); check ``guard.refused`` at teardown."""
    guard = NetworkGuard()
    guard.install(monkeypatch)
    return guard
