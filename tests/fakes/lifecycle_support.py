"""Helpers for the `jobs` acceptance tests: run the real CLI in-process against ``fake_apis``.

``point_cli_at(monkeypatch, server)`` sets the environment every jobs test uses (fake token, project
``p``, ml and logging endpoints on the loopback server, a tiny poll interval so nothing really waits);
``run_cli(args)`` (re-exported from tests/fakes/cli.py) runs the real CLI in process.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from click.testing import Result

from tests.fakes.api_server import FakeGoogleApis
from tests.fakes.cli import run_cli as run_cli  # re-exported: the jobs tests import it from here

PROJECT = "p"
POLL_INTERVAL = "0.01"  # seconds: the loops run for real, only faster
LOG_LAG = (
    "0.05"  # seconds Cloud Logging is given to ingest the last entries of an ended job (5 in production)
)


def preflight_env(server: FakeGoogleApis) -> dict[str, str]:
    """The endpoint variables of the preflight's reads, all on ``server``."""
    return {
        "CLOUDSDK_API_ENDPOINT_OVERRIDES_SERVICEUSAGE": server.url,
        "CLOUDSDK_API_ENDPOINT_OVERRIDES_IAM": server.url,
        "CLOUDSDK_API_ENDPOINT_OVERRIDES_CLOUDKMS": server.url,
        "CLOUDSDK_API_ENDPOINT_OVERRIDES_STORAGE": server.url,
    }


def cli_env(server: FakeGoogleApis) -> dict[str, str]:
    """The variables that point mlsubmit at ``server``."""
    return {
        "CLOUDSDK_AUTH_ACCESS_TOKEN": "fake",
        "CLOUDSDK_CORE_PROJECT": PROJECT,
        "CLOUDSDK_API_ENDPOINT_OVERRIDES_ML": server.url,
        "CLOUDSDK_API_ENDPOINT_OVERRIDES_LOGGING": server.url,
        "CLOUDSDK_API_ENDPOINT_OVERRIDES_AIPLATFORM": server.url,
        # the preflight of a Vertex AI submit reads these too (docs/getting-jobs-to-start.md)
        **preflight_env(server),
        "MLSUBMIT_POLL_INTERVAL": POLL_INTERVAL,
        "MLSUBMIT_LOG_LAG": LOG_LAG,
    }


def point_cli_at(monkeypatch: pytest.MonkeyPatch, server: FakeGoogleApis) -> None:
    """Set :func:`cli_env` for the test (restored afterwards by monkeypatch)."""
    for name, value in cli_env(server).items():
        monkeypatch.setenv(name, value)


def parse_json(result: Result) -> Any:
    """stdout as JSON; fails the test with the output when it is not."""
    try:
        return json.loads(result.stdout)
    except ValueError:
        pytest.fail(f"stdout is not JSON:\n{result.stdout}\nstderr:\n{result.stderr}")


def seed_job(
    server: FakeGoogleApis, job_id: str, states: list[str], error_message: str | None = None
) -> None:
    """An existing ml job in project ``p`` that goes through ``states``, one per read."""
    server.script_job(job_id, states, error_message=error_message)
    server.add_job({"jobId": job_id, "trainingInput": {"region": "us-central1"}}, project=PROJECT)


def message_column(result_text: str) -> list[str]:
    """The message column of printed log lines (gcloud's LOG_FORMAT: the 5th tab-separated field)."""
    return [line.split("\t", 4)[4] for line in result_text.splitlines() if line.count("\t") >= 4]
