"""Work started before the first test (tests/fakes/early.py): it runs in its own thread beside the tests, sees the
isolated environment rather than the caller's, and starts only for a selected module, never to collect only."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

CONFTEST = "from tests.conftest import pytest_collection_finish, pytest_sessionfinish  # noqa: F401\n"

BESIDE = """
import os, threading
from tests.fakes.early import early

FIRST_TEST_RAN = threading.Event()

@early
def work(start):
    assert FIRST_TEST_RAN.wait(60)  # runs while the tests run
    return threading.current_thread().name, start.env["HOME"], start.env.get("CLOUDSDK_AUTH_ACCESS_TOKEN")

def test_first():
    FIRST_TEST_RAN.set()

def test_second(tmp_path_factory):
    thread, home, token = work.result(tmp_path_factory)
    assert thread.startswith("early"), thread
    assert token is None and home != os.environ["HOME"] and not os.listdir(home)
"""

NOT_SELECTED = """
from pathlib import Path
from tests.fakes.early import early

@early
def work(start):
    Path({mark!r}).write_text("started")

def test_other():
    pass
"""


def test_early_work_runs_beside_the_tests_only_for_a_selected_module(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    monkeypatch.setenv("CLOUDSDK_AUTH_ACCESS_TOKEN", "the-callers-token")
    mark = tmp_path / "started"
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_beside=BESIDE, test_not_selected=NOT_SELECTED.format(mark=str(mark)))

    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "test_beside.py")
    result.assert_outcomes(passed=2)
    assert not mark.exists()

    listed = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--collect-only", "-q")
    listed.stdout.fnmatch_lines(["*3 tests collected*"])
    assert not mark.exists()
    ran = pytester.runpytest_subprocess("-p", "no:cacheprovider", "test_not_selected.py")
    ran.assert_outcomes(passed=1)
    assert mark.read_text() == "started"  # the same module, selected: it does start
