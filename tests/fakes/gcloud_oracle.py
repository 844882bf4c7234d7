"""Run the real gcloud against :class:`FakeGoogleApis` and return what it sent (the "live oracle").

Each run gets a fresh ``CLOUDSDK_CONFIG``, a fake access token and endpoint overrides pointing every API at the
fake, so nothing leaves loopback. Every request of a run carries a unique tag in its user agent
(``environment/<tag>`` via ``CLOUDSDK_METRICS_ENVIRONMENT``), so runs can share one server and run in parallel::

    run = run_gcloud(["ai-platform", "jobs", "submit", "training", "j1", "--region", "us-central1",
                      "--packages", "gs://bkt/p.tar.gz", "--module-name", "trainer.task"], fake_apis, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    body = run.job_bodies[0]
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.api_server import ML_CREATE, VERTEX_CREATE, VERTEX_TUNING_CREATE, FakeGoogleApis
from tests.fakes.storage_api import Upload
from tests.fakes.wire import RecordedRequest

GCLOUD_TIMEOUT_S = 120


def gcloud_executable() -> str | None:
    """Path of the gcloud CLI, or None."""
    return shutil.which("gcloud")


def gcloud_available() -> bool:
    """Whether the real gcloud CLI is installed."""
    return gcloud_executable() is not None


requires_gcloud = pytest.mark.skipif(not gcloud_available(), reason="needs the gcloud CLI (parity oracle)")


@dataclass
class GcloudRun:
    """The outcome of one gcloud run and the requests it made to the fake."""

    args: list[str]
    returncode: int
    stdout: str
    stderr: str
    requests: list[RecordedRequest] = field(default_factory=list)
    uploads: list[Upload] = field(default_factory=list)

    @property
    def job_bodies(self) -> list[dict[str, Any]]:
        """Bodies of the ml ``jobs.create`` requests of this run, as sent."""
        return [r.json for r in self.requests if r.method == "POST" and _search(ML_CREATE, r.path)]

    @property
    def custom_job_bodies(self) -> list[dict[str, Any]]:
        """Bodies of the aiplatform ``customJobs.create`` requests of this run, as sent."""
        return [r.json for r in self.requests if r.method == "POST" and _search(VERTEX_CREATE, r.path)]

    @property
    def tuning_job_bodies(self) -> list[dict[str, Any]]:
        """Bodies of the aiplatform ``hyperparameterTuningJobs.create`` requests of this run, as sent."""
        return [r.json for r in self.requests if r.method == "POST" and _search(VERTEX_TUNING_CREATE, r.path)]

    @property
    def job_body(self) -> dict[str, Any]:
        """The single ml job body of this run; fails with gcloud's stderr when there is not exactly one."""
        bodies = self.job_bodies
        assert len(bodies) == 1, (
            f"gcloud sent {len(bodies)} job bodies; exit {self.returncode}: {self.stderr}"
        )
        return bodies[0]


def _search(pattern: str, path: str) -> bool:
    import re

    return re.search(pattern, path) is not None


def oracle_env(
    server: FakeGoogleApis,
    config_dir: Path,
    *,
    tag: str,
    project: str | None = None,
    region: str | None = None,
) -> dict[str, str]:
    """The environment variables that point gcloud at ``server`` with a fake token and a fresh config."""
    env = {
        "CLOUDSDK_CONFIG": str(config_dir),
        "CLOUDSDK_CORE_PROJECT": project or server.project,
        "CLOUDSDK_AUTH_ACCESS_TOKEN": "fake-oracle-token",
        "CLOUDSDK_CORE_DISABLE_PROMPTS": "1",
        "CLOUDSDK_CORE_DISABLE_USAGE_REPORTING": "1",
        "CLOUDSDK_CORE_CHECK_GCE_METADATA": "false",
        "CLOUDSDK_COMPONENT_MANAGER_DISABLE_UPDATE_CHECK": "1",
        "CLOUDSDK_SURVEY_DISABLE_PROMPTS": "1",
        "CLOUDSDK_METRICS_ENVIRONMENT": tag,
        "CLOUDSDK_API_ENDPOINT_OVERRIDES_ML": server.url,
        "CLOUDSDK_API_ENDPOINT_OVERRIDES_AIPLATFORM": server.url,
        "CLOUDSDK_API_ENDPOINT_OVERRIDES_LOGGING": server.url,
        "CLOUDSDK_API_ENDPOINT_OVERRIDES_STORAGE": server.url + "storage/v1/",
        # No real metadata server may be probed from a test.
        "GCE_METADATA_HOST": "127.0.0.1:9",
        "GCE_METADATA_IP": "127.0.0.1:9",
        "NO_PROXY": "127.0.0.1,localhost",
        "no_proxy": "127.0.0.1,localhost",
    }
    if region:
        env["CLOUDSDK_COMPUTE_REGION"] = region
    return env


def run_gcloud(
    args: Sequence[str],
    server: FakeGoogleApis,
    *,
    cwd: Path,
    env: dict[str, str] | None = None,
    region: str | None = None,
    project: str | None = None,
    base_env: Mapping[str, str] | None = None,
) -> GcloudRun:
    """Run ``gcloud ARGS`` in ``cwd`` against ``server``; return its exit code, output and what it sent.

    ``env`` adds or overrides variables after the oracle's own; ``region`` sets ``CLOUDSDK_COMPUTE_REGION``;
    ``base_env`` replaces ``os.environ`` as what they are added to (early work, tests/fakes/early.py).
    """
    gcloud = gcloud_executable()
    if gcloud is None:
        pytest.skip("needs the gcloud CLI (parity oracle)")
    tag = f"mlsubmit-oracle-{uuid.uuid4().hex}"
    with tempfile.TemporaryDirectory(prefix="gcloud-config-") as config_dir:
        full_env = {
            **(os.environ if base_env is None else base_env),
            **oracle_env(server, Path(config_dir), tag=tag, project=project, region=region),
        }
        full_env.update(env or {})
        for proxy in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"):
            full_env.pop(proxy, None)
        done = subprocess.run(
            [gcloud, *args],
            cwd=cwd,
            env=full_env,
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            timeout=GCLOUD_TIMEOUT_S,
            check=False,
        )
    marker = f"environment/{tag}"
    requests = [r for r in server.requests if marker in r.headers.get("user-agent", "")]
    uploads = [u for u in server.uploads if marker in u.user_agent]
    return GcloudRun(list(args), done.returncode, done.stdout, done.stderr, requests, uploads)


def run_gcloud_batch(
    commands: Sequence[Sequence[str]],
    server: FakeGoogleApis,
    *,
    cwd: Path | Sequence[Path],
    env: dict[str, str] | None = None,
    region: str | None = None,
    workers: int = 8,
    base_env: Mapping[str, str] | None = None,
) -> list[GcloudRun]:
    """Run several gcloud command lines in parallel against one server; results in the order given.

    ``cwd`` is one directory for all, or one per command. Job ids must differ between commands.
    """
    dirs = [cwd] * len(commands) if isinstance(cwd, Path) else list(cwd)
    if len(dirs) != len(commands):
        raise ValueError("give one cwd, or one per command")
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        futures = [
            pool.submit(run_gcloud, list(args), server, cwd=where, env=env, region=region, base_env=base_env)
            for args, where in zip(commands, dirs, strict=True)
        ]
        return [f.result() for f in futures]
