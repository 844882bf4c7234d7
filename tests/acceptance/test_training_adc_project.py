"""A project from Application Default Credentials alone (no --project, no CLOUDSDK_CORE_PROJECT): the plan names
the image's repository with it, as Settings sends the job under it (one resolver, docs/containers.md). The ADC
file is a service account key whose token endpoint is the loopback fake."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.acceptance.test_training_build_image import images_of
from tests.fakes.cli import run_cli
from tests.fakes.cloudbuild_api import FakeCloudBuild, build_env
from tests.fakes.wire import RecordedRequest, Response

ADC_PROJECT = "adc-proj"


def service_account_key(token_uri: str) -> dict[str, Any]:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    return {
        "type": "service_account",
        "project_id": ADC_PROJECT,
        "private_key_id": "k1",
        "private_key": pem,
        "client_email": f"trainer@{ADC_PROJECT}.iam.gserviceaccount.com",
        "client_id": "1",
        "token_uri": token_uri,
    }


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[FakeCloudBuild]:
    with FakeCloudBuild(project=ADC_PROJECT) as fake:
        for name, value in build_env(fake).items():
            monkeypatch.setenv(name, value)
        for name in ("CLOUDSDK_CORE_PROJECT", "CLOUDSDK_AUTH_ACCESS_TOKEN"):
            monkeypatch.delenv(name)

        def token(_request: RecordedRequest) -> Response:
            return Response(json={"access_token": "adc-token", "expires_in": 3600, "token_type": "Bearer"})

        fake.add_route("POST", r"^/token$", token)
        adc = tmp_path / "adc.json"
        adc.write_text(json.dumps(service_account_key(f"{fake.url}token")))
        monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(adc))
        yield fake


ARGS = ["training", "j1", "--config", "legacy.yaml", "--package-path", "trainer", "--staging-bucket",
        "gs://stage", "--target", "vertex", "--region", "us-central1", "--build-image"]  # fmt: skip


def test_a_dry_run_names_the_image_with_the_adc_project(server: FakeCloudBuild, legacy_project: Path) -> None:
    result = run_cli([*ARGS, "--dry-run", "--format", "json"])
    assert result.exit_code == 0, result.stderr
    plan = json.loads(result.stdout)
    assert plan["image"]["image"].startswith(
        f"us-central1-docker.pkg.dev/{ADC_PROJECT}/mlsubmit/trainer:ctx-"
    )
    assert images_of(plan["job"]) == {plan["image"]["image"]}
    assert server.requests_matching(None, r"^/v1/") == []  # nothing sent but (at most) the token exchange


def test_a_submit_runs_under_the_adc_project(server: FakeCloudBuild, legacy_project: Path) -> None:
    result = run_cli(
        [*ARGS, "--builder", "cloud-build", "--output-image-uri", f"127.0.0.1:{server.port}/p/trainer"]
    )
    assert result.exit_code == 0, result.stderr
    (create,) = server.requests_matching("POST", r"/customJobs$")
    assert create.path.startswith(f"/v1/projects/{ADC_PROJECT}/locations/us-central1/")
    assert create.headers.get("authorization") == "Bearer adc-token"
    assert len(server.build_bodies) == 1
