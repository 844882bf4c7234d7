"""`mlsubmit training` plans once (docs/architecture.md): the body a dry run prints is the body the submit sends,
for ml v1, a Vertex AI CustomJob and a HyperparameterTuningJob; and the job's region, decided by the merge
(``--region``, the config file, then CLOUDSDK_COMPUTE_REGION), is the one both use."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.fakes.api_server import FakeGoogleApis
from tests.fakes.counting import count_vertex_rules
from tests.fakes.lifecycle_support import point_cli_at, run_cli

REPO = Path(__file__).resolve().parents[2]
TUNING = REPO / "examples" / "trainer_tune" / "config.yaml"
IMAGE = "us-docker.pkg.dev/vertex-ai/training/sklearn-cpu.1-0:latest"
FLAGS = ["--packages", "gs://bkt/pkgs/trainer-0.0.0.tar.gz", "--job-dir", "gs://bkt/out"]
VERTEX = ["--target", "vertex", "--executor-image-uri", IMAGE]


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch, fake_apis: FakeGoogleApis) -> None:
    point_cli_at(monkeypatch, fake_apis)


def custom_config(tmp_path: Path) -> Path:
    """The tuning example without its hyperparameters: a plain job."""
    data = yaml.safe_load(TUNING.read_text())
    del data["trainingInput"]["hyperparameters"]
    path = tmp_path / "custom.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def dry_run_then_submit(args: list[str], env: dict[str, str | None] | None = None) -> tuple[Any, Any]:
    """The body ``--dry-run`` printed, and the submit's result."""
    dry = run_cli([*args, "--dry-run", "--format", "json"], env=env)
    assert dry.exit_code == 0, dry.stderr
    return json.loads(dry.stdout), run_cli(args, env=env)


@pytest.mark.parametrize("kind", ["ml", "customjob", "hptuningjob"])
def test_the_dry_run_prints_the_body_the_submit_sends(
    fake_apis: FakeGoogleApis, tmp_path: Path, kind: str
) -> None:
    config = TUNING if kind == "hptuningjob" else custom_config(tmp_path)
    args = ["training", "job_1", "--config", str(config), *FLAGS, *([] if kind == "ml" else VERTEX)]
    printed, submitted = dry_run_then_submit(args)
    assert submitted.exit_code == 0, submitted.stderr
    sent = {
        "ml": fake_apis.job_bodies,
        "customjob": fake_apis.custom_job_bodies,
        "hptuningjob": fake_apis.tuning_job_bodies,
    }[kind]
    assert sent == [printed]


def test_a_bad_region_variable_loses_to_the_files_region_in_the_dry_run_and_the_submit(
    fake_apis: FakeGoogleApis, tmp_path: Path
) -> None:
    """The config file's region wins over CLOUDSDK_COMPUTE_REGION (docs/gcloud.md):
    the variable is not read again, and not refused, once the merge chose the file's region."""
    env: dict[str, str | None] = {"CLOUDSDK_COMPUTE_REGION": "not a region/.."}
    args = ["training", "job_1", "--config", str(custom_config(tmp_path)), *FLAGS, *VERTEX]
    printed, submitted = dry_run_then_submit(args, env)
    assert submitted.exit_code == 0, submitted.stderr
    [create] = fake_apis.requests_matching("POST", r".*/customJobs$")
    assert "/locations/us-central1/" in create.path
    assert fake_apis.custom_job_bodies == [printed]


def test_a_bad_region_variable_the_job_uses_is_refused_by_both(tmp_path: Path) -> None:
    config = custom_config(tmp_path)
    data = yaml.safe_load(config.read_text())
    del data["trainingInput"]["region"]
    config.write_text(yaml.safe_dump(data))
    env: dict[str, str | None] = {"CLOUDSDK_COMPUTE_REGION": "not a region/.."}
    args = ["training", "job_1", "--config", str(config), *FLAGS, *VERTEX]
    for argv in (args, [*args, "--dry-run"]):
        refused = run_cli(argv, env=env)
        assert refused.exit_code == 2 and "CLOUDSDK_COMPUTE_REGION" in refused.stderr


@pytest.mark.parametrize("config", ["custom", "tuning"])
def test_vertex_rules_run_once_per_submit(
    fake_apis: FakeGoogleApis, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, config: str
) -> None:
    calls = count_vertex_rules(monkeypatch)
    path = TUNING if config == "tuning" else custom_config(tmp_path)
    submitted = run_cli(["training", "job_1", "--config", str(path), *FLAGS, *VERTEX])
    assert submitted.exit_code == 0, submitted.stderr
    assert len(calls) == 1
