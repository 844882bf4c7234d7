"""The checkup's one pass over a module's AST (mlsubmit/migrate/scan.py): its cost on every submit."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from mlsubmit.migrate.scan import scan_source

# A generated-looking module: thousands of AST nodes, as a real trainer's data tables or layer lists make.
BIG_MODULE = "import tensorflow as tf\n" + "".join(f"WIDTH_{i} = tf.constant({i})\n" for i in range(3000))


@pytest.fixture
def collections() -> Iterator[list[int]]:
    """The generations the cyclic garbage collector collects while the test runs."""
    seen: list[int] = []

    def record(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            seen.append(info["generation"])

    gc.callbacks.append(record)
    try:
        yield seen
    finally:
        gc.callbacks.remove(record)


def test_a_large_module_is_scanned_without_the_collector_rescanning_what_is_loaded(
    collections: list[int],
) -> None:
    """An AST holds no reference cycles: the collector, which the parse's allocations would trigger again and
    again (each time walking every object mlsubmit loaded), is paused for the scan and running again after."""
    assert gc.isenabled()
    uses = scan_source(BIG_MODULE.encode(), "trainer/tables.py")
    assert collections == []
    assert gc.isenabled()
    assert uses.names["tensorflow.constant"] == list(range(2, 3002))
    assert "WIDTH_0" not in uses.constants  # not a string constant


def test_a_disabled_collector_stays_disabled(collections: list[int]) -> None:
    gc.disable()
    try:
        scan_source(b"x = 1\n", "trainer/task.py")
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_what_the_scan_finds_is_the_same_for_a_module_that_does_not_parse() -> None:
    uses = scan_source(b"print 'hello'\n", "trainer/task.py")
    assert uses.syntax_error is not None and uses.syntax_error[0] == 1
    assert gc.isenabled()
