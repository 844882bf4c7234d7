"""Work started before the first test (tests/fakes/early.py): it runs in a process of its own beside the tests,
out of reach of a test that kills what the test process started, sees the isolated environment rather than the
caller's, and starts only for a selected module, never to collect only."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

CONFTEST = "from tests.conftest import pytest_collection_finish, pytest_sessionfinish  # noqa: F401\n"

BESIDE = """
import os, subprocess, sys, time
from pathlib import Path
from tests.fakes.early import early

FIRST_TEST_RAN = Path({ran!r})

@early
def work(start):
    ends = time.monotonic() + 60
    while not FIRST_TEST_RAN.exists() and time.monotonic() < ends:  # runs while the tests run
        time.sleep(0.01)
    # a command that outlives the first test, as a gcloud run does
    done = subprocess.run([sys.executable, "-c", "import time; time.sleep(1)"], env=start.env)
    return os.getpid(), done.returncode, start.env["HOME"], start.env.get("CLOUDSDK_AUTH_ACCESS_TOKEN")

def test_first():
    from mlsubmit.proc.processes import reaping

    with reaping():  # as `local train` run in process does: at its end, kill what was started since it began
        FIRST_TEST_RAN.write_text("")
        time.sleep(0.5)

def test_second(tmp_path_factory):
    pid, code, home, token = work.result(tmp_path_factory)
    assert (code, pid != os.getpid()) == (0, True)  # not killed, and in another process
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
    pytester.makepyfile(
        test_beside=BESIDE.format(ran=str(tmp_path / "first-test-ran")),
        test_not_selected=NOT_SELECTED.format(mark=str(mark)),
    )

    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "test_beside.py")
    result.assert_outcomes(passed=2)
    assert not mark.exists()

    listed = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--collect-only", "-q")
    listed.stdout.fnmatch_lines(["*3 tests collected*"])
    assert not mark.exists()
    ran = pytester.runpytest_subprocess("-p", "no:cacheprovider", "test_not_selected.py")
    ran.assert_outcomes(passed=1)
    assert mark.read_text() == "started"  # the same module, selected: it does start
