"""Test-wide safety and the shared CLI runner.

No test may reach real credentials, the real gcloud config, the user's home or any host but loopback; the
``run_cli`` fixture runs the real CLI in process (tests/fakes/cli.py).
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from datetime import date
from pathlib import Path

import pytest

from tests.fakes.cli import RunCli
from tests.fakes.cli import run_cli as _run_cli
from tests.fakes.early import start_early, stop_early
from tests.fakes.isolation import UNSET, isolated_variables
from tests.fakes.network_guard import NetworkGuard, guard_connections

# Fixture modules contributed by the fakes (loopback servers, storage emulator, gcloud recorder).
pytest_plugins: list[str] = ["tests.fakes.gcs", "tests.fakes.fixtures", "tests.fakes.containers", "pytester"]


@pytest.fixture(scope="session")
def homes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder of every test's home. Not ``tmp_path_factory.mktemp`` per test: that lists the whole base temp
    folder to number the new one, which over the suite's thousands of tests costs seconds, growing as N²."""
    return tmp_path_factory.mktemp("homes", numbered=False)


@pytest.fixture(autouse=True)
def isolated_environment(homes: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Point HOME, gcloud's config and ADC at empty places so touching real credentials fails loudly."""
    home = Path(tempfile.mkdtemp(prefix="home", dir=homes))
    for key, value in isolated_variables(home).items():
        monkeypatch.setenv(key, value)
    for key in UNSET:
        monkeypatch.delenv(key, raising=False)
    yield


@pytest.fixture(autouse=True)
def loopback_only(monkeypatch: pytest.MonkeyPatch) -> Iterator[NetworkGuard]:
    """Fail the test if it connected (or tried to) anywhere but loopback or a unix socket, even when the code
    under test caught the error. A test that provokes a refusal on purpose clears ``loopback_only.refused``."""
    guard = guard_connections(monkeypatch)
    yield guard
    if guard.refused:
        pytest.fail("\n".join(guard.refused), pytrace=False)


@pytest.fixture(name="run_cli")
def run_cli_fixture() -> RunCli:
    """``run_cli(args, env=..., input=...)``: the real CLI in process; see tests/fakes/cli.py."""
    return _run_cli


# A day on which the TensorFlow 2.x prebuilt training images were all still served (docs/vertex.md:
# executor images), so translations do not depend on the real date; tests of the end-of-availability check
# set their own day (tests/unit/targets/test_vertex_images.py, tests/acceptance/test_training_vertex_settings.py).
SERVED_DAY = date(2024, 6, 1)


@pytest.fixture(autouse=True)
def fixed_vertex_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    from mlsubmit.targets import vertex_images

    monkeypatch.setattr(vertex_images, "CLOCK", lambda: SERVED_DAY)


def pytest_collection_finish(session: pytest.Session) -> None:
    start_early(session)  # tests/fakes/early.py


def pytest_sessionfinish(session: pytest.Session) -> None:
    stop_early()
