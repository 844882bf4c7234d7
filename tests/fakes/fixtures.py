"""Pytest fixtures for the fakes: ``fake_apis`` (a started FakeGoogleApis) and ``gcloud_oracle``.

Registered through ``pytest_plugins`` in tests/conftest.py.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from tests.fakes.api_server import FakeGoogleApis
from tests.fakes.gcloud_oracle import GcloudRun, gcloud_available, run_gcloud, run_gcloud_batch


class GcloudOracle:
    """``run_gcloud`` bound to one server and a default working directory."""

    def __init__(self, server: FakeGoogleApis, cwd: Path):
        self.server = server
        self.cwd = cwd

    def __call__(
        self,
        args: Sequence[str],
        *,
        cwd: Path | None = None,
        env: dict[str, str] | None = None,
        region: str | None = None,
    ) -> GcloudRun:
        """Run ``gcloud ARGS`` against the server (see :func:`run_gcloud`)."""
        return run_gcloud(list(args), self.server, cwd=cwd or self.cwd, env=env, region=region)

    def batch(
        self,
        commands: Sequence[Sequence[str]],
        *,
        cwd: Path | Sequence[Path] | None = None,
        env: dict[str, str] | None = None,
        region: str | None = None,
    ) -> list[GcloudRun]:
        """Run several command lines in parallel (see :func:`run_gcloud_batch`)."""
        return run_gcloud_batch(commands, self.server, cwd=cwd or self.cwd, env=env, region=region)


@pytest.fixture
def fake_apis() -> Iterator[FakeGoogleApis]:
    """A started :class:`FakeGoogleApis` on 127.0.0.1, stopped after the test."""
    with FakeGoogleApis() as server:
        yield server


@pytest.fixture(scope="module")
def fake_apis_module() -> Iterator[FakeGoogleApis]:
    """One :class:`FakeGoogleApis` shared by a module (for batched parity suites; use distinct job ids)."""
    with FakeGoogleApis() as server:
        yield server


@pytest.fixture
def gcloud_oracle(fake_apis: FakeGoogleApis, tmp_path: Path) -> GcloudOracle:
    """Run the real gcloud against ``fake_apis`` in ``tmp_path``; skips the test when gcloud is absent."""
    if not gcloud_available():
        pytest.skip("needs the gcloud CLI (parity oracle)")
    return GcloudOracle(fake_apis, tmp_path)
