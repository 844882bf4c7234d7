"""Loopback ports for the tests' local clusters, chosen where no other test's connection can take them."""

from __future__ import annotations

from mlsubmit.errors import UsageError
from mlsubmit.local.cluster import check_ports_free


def free_block(count: int) -> int:
    """A start port with ``count`` free ports after it, below the kernel's ephemeral range (from 32768): there no
    client connection of another test takes one as its source port, nor leaves it in TIME_WAIT, between the probe
    and the use."""
    for start in range(21000, 32000, 97):
        try:
            check_ports_free(range(start, start + count))
        except UsageError:
            continue
        return start
    raise AssertionError("no free block of ports below the ephemeral range")
