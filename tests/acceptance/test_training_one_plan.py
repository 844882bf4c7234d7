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
from tests.fakes.trainers import write_package

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


def with_candidates(config: Path, tmp_path: Path, fake: FakeGoogleApis) -> Path:
    """``config`` with two failover candidates in other regions, each with its own bucket and job dir (in its
    region, as the preflight reads it)."""
    for region in CANDIDATE_REGIONS:
        fake.storage.bucket_fields[f"{region}-b"] = {"location": region.upper(), "locationType": "region"}
    data = yaml.safe_load(config.read_text())
    data.setdefault("vertex", {})["failover"] = {
        "candidates": [
            {"region": region, "stagingBucket": f"gs://{region}-b", "jobDir": f"gs://{region}-b/out"}
            for region in CANDIDATE_REGIONS
        ]
    }
    path = tmp_path / f"failover-{config.name}"
    path.write_text(yaml.safe_dump(data))
    return path


CANDIDATE_REGIONS = ("europe-west4", "us-east4")
QUOTA = (
    "The following quota metrics exceed quota limits: aiplatform.googleapis.com/custom_model_training_cpus"
)


@pytest.mark.parametrize("config", ["custom", "tuning", "custom-failover", "tuning-failover"])
def test_vertex_rules_run_once_per_distinct_body(
    fake_apis: FakeGoogleApis, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, config: str
) -> None:
    """Once for the job, once for each failover candidate's body (docs/getting-jobs-to-start.md)."""
    path = TUNING if config.startswith("tuning") else custom_config(tmp_path)
    bodies = 1
    if config.endswith("failover"):
        path, bodies = with_candidates(path, tmp_path, fake_apis), 1 + len(CANDIDATE_REGIONS)
    calls = count_vertex_rules(monkeypatch)
    submitted = run_cli(["training", "job_1", "--config", str(path), *FLAGS, *VERTEX])
    assert submitted.exit_code == 0, submitted.stderr
    assert len(calls) == bodies


def test_the_dry_run_prints_every_candidates_body_and_upload_the_failover_sends(
    fake_apis: FakeGoogleApis, tmp_path: Path
) -> None:
    trainer = write_package(tmp_path, "print('training')\n")
    config = with_candidates(custom_config(tmp_path), tmp_path, fake_apis)
    args = ["training", "job_1", "--config", str(config), "--package-path", str(trainer),
            "--staging-bucket", "gs://bkt", "--job-dir", "gs://bkt/out", *VERTEX]  # fmt: skip
    dry = run_cli([*args, "--dry-run", "--format", "json"])
    assert dry.exit_code == 0, dry.stderr
    plan = json.loads(dry.stdout)
    regions = ["us-central1", *CANDIDATE_REGIONS]
    assert [c["region"] for c in plan["candidates"]] == regions
    assert set(plan["uploads"]) == {"bkt", *(f"{r}-b" for r in CANDIDATE_REGIONS)}
    for region in ("us-central1", CANDIDATE_REGIONS[0]):
        fake_apis.script_region(region, create_error=(429, QUOTA))
    fake_apis.script_region(CANDIDATE_REGIONS[1], ["JOB_STATE_RUNNING"])
    submitted = run_cli(args)
    assert submitted.exit_code == 0, submitted.stderr
    sent = {r.path.split("/")[5]: r.json for r in fake_apis.requests_matching("POST", r".*/customJobs$")}
    assert sent == {c["region"]: c["body"] for c in plan["candidates"]}
    uploaded = {f"gs://{u.bucket}/{u.name}" for u in fake_apis.uploads}
    assert uploaded == {uri for uris in plan["uploads"].values() for uri in uris}
    for candidate in plan["candidates"][1:]:  # each candidate's body names the packages of its own bucket
        uris = candidate["body"]["jobSpec"]["workerPoolSpecs"][0]["pythonPackageSpec"]["packageUris"]
        assert uris == candidate["uploads"] and all(
            u.startswith(f"gs://{candidate['region']}-b/") for u in uris
        )
