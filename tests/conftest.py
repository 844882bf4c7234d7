"""Test-wide safety: no test may reach real credentials, the real gcloud config or the user's home."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date
from pathlib import Path

import pytest

# Fixture modules contributed by the fakes (loopback servers, storage emulator, gcloud recorder).
pytest_plugins: list[str] = ["tests.fakes.gcs", "tests.fakes.fixtures"]


@pytest.fixture(autouse=True)
def isolated_environment(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Iterator[None]:
    """Point HOME, gcloud's config and ADC at empty places so touching real credentials fails loudly."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("CLOUDSDK_CONFIG", str(home / "gcloud"))
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(Path(home) / "no-such-credentials.json"))
    monkeypatch.setenv("NO_GCE_CHECK", "True")  # google-auth must never probe the metadata server
    for var in (
        "CLOUDSDK_CORE_PROJECT",
        "CLOUDSDK_COMPUTE_REGION",
        "CLOUDSDK_AUTH_ACCESS_TOKEN",
        "CLOUDSDK_API_ENDPOINT_OVERRIDES_ML",
        "CLOUDSDK_API_ENDPOINT_OVERRIDES_AIPLATFORM",
        "CLOUDSDK_API_ENDPOINT_OVERRIDES_LOGGING",
        "GOOGLE_CLOUD_PROJECT",
        "STORAGE_EMULATOR_HOST",
        "MLSUBMIT_LOCAL_PYTHON",
        "MLSUBMIT_DEBUG",
    ):
        monkeypatch.delenv(var, raising=False)
    yield


# A day on which the TensorFlow 2.x prebuilt training images were all still served (README "Moving to Vertex
# AI": executor images), so translations do not depend on the real date; tests of the end-of-availability check
# set their own day (tests/unit/targets/test_vertex_images.py, tests/acceptance/test_training_vertex_images.py).
SERVED_DAY = date(2024, 6, 1)


@pytest.fixture(autouse=True)
def fixed_vertex_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    from mlsubmit.targets import vertex_images

    monkeypatch.setattr(vertex_images, "CLOCK", lambda: SERVED_DAY)
