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
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("CLOUDSDK_CONFIG", str(home / "gcloud"))
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(Path(home) / "no-such-credentials.json"))
    monkeypatch.setenv("NO_GCE_CHECK", "True")  # google-auth must never probe the metadata server
    # the staging tests count package bytes: the run ledger's manifest copy in Cloud Storage (docs/cost.md) is
    # off but where a test turns it on (tests/acceptance/test_jobs_ledger.py)
    monkeypatch.setenv("MLSUBMIT_NO_GCS_MANIFEST", "1")
    # The suite speaks ml v1 as gcloud did, by choice: no shut-down notice (tests/acceptance/test_default_target.py
    # asserts it without this variable).
    monkeypatch.setenv("MLSUBMIT_TARGET", "ml")
    for var in (
        "CLOUDSDK_CORE_PROJECT",
        "CLOUDSDK_COMPUTE_REGION",
        "CLOUDSDK_AUTH_ACCESS_TOKEN",
        "CLOUDSDK_API_ENDPOINT_OVERRIDES_ML",
        "CLOUDSDK_API_ENDPOINT_OVERRIDES_AIPLATFORM",
        "CLOUDSDK_API_ENDPOINT_OVERRIDES_LOGGING",
        "CLOUDSDK_API_ENDPOINT_OVERRIDES_STORAGE",
        "CLOUDSDK_API_ENDPOINT_OVERRIDES_SERVICEUSAGE",
        "CLOUDSDK_API_ENDPOINT_OVERRIDES_IAM",
        "CLOUDSDK_API_ENDPOINT_OVERRIDES_CLOUDKMS",
        "GOOGLE_CLOUD_PROJECT",
        "STORAGE_EMULATOR_HOST",
        "MLSUBMIT_LOCAL_PYTHON",
        "MLSUBMIT_DEBUG",
    ):
        monkeypatch.delenv(var, raising=False)
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
