"""`mlsubmit migrate`: the files a migrating team gets, offline (docs/migrate.md)."""

from __future__ import annotations

import json
import socket
import stat
import tarfile
from datetime import date
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.fakes.cli import run_cli
from tests.fakes.trainers import write_trainer

TRAINER = """\
import argparse, json, os
import tensorflow as tf

task = json.loads(os.environ.get('TF_CONFIG', '{}')).get('task', {})
if task.get('type') == 'master':
    print('primary')
p = argparse.ArgumentParser()
p.add_argument('--job-dir', required=True)
tf.summary.scalar('accuracy', 0.5)
"""
BASE = ["--module-name", "trainer.task", "--region", "us-central1", "--staging-bucket", "gs://my-bucket"]


@pytest.fixture
def package(tmp_path: Path) -> Path:
    return write_trainer(tmp_path, TRAINER)


def migrate(package: Path, out: Path, *args: str) -> Any:
    return run_cli(["migrate", "j1", "--package-path", str(package), *BASE, "--output-dir", str(out), *args])


def test_a_custom_job_becomes_a_job_file_a_script_and_a_report(package: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = migrate(
        package, out, "--runtime-version", "2.11", "--scale-tier", "standard-1", "--job-dir", "gs://my-bucket/o",
        "--labels", "team=ml", "--", "--epochs", "3",
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    spec = yaml.safe_load((out / "customjob.yaml").read_text())
    primary = spec["workerPoolSpecs"][0]
    assert primary["pythonPackageSpec"]["executorImageUri"] == (
        "us-docker.pkg.dev/vertex-ai/training/tf-cpu.2-11.py310:latest"
    )
    uri = primary["pythonPackageSpec"]["packageUris"][0]
    assert uri.startswith("gs://my-bucket/mlsubmit/packages/") and uri.endswith("/trainer-0.0.0.tar.gz")
    assert primary["pythonPackageSpec"]["args"] == ["--epochs", "3", "--job-dir", "gs://my-bucket/o"]
    assert [p["replicaCount"] for p in spec["workerPoolSpecs"]] == ["1", "4", "3"]
    assert (out / "packages" / "trainer-0.0.0.tar.gz").is_file()
    script = (out / "submit.sh").read_text().splitlines()
    assert script[-2:] == [
        f"gcloud storage cp --no-clobber packages/trainer-0.0.0.tar.gz {uri}",
        "gcloud ai custom-jobs create --region=us-central1 --display-name=j1 --config=customjob.yaml "
        "--labels=team=ml,mlsubmit_job_id=j1",
    ]
    assert (out / "submit.sh").stat().st_mode & stat.S_IXUSR
    report = (out / "MIGRATION.md").read_text()
    assert "scaleTier STANDARD_1 expanded to explicit pools" in report  # the translation's own warning
    assert "| trainer/task.py:5 | tf-config-primary | error |" in report
    assert "TensorFlow 2.11" in report
    assert "trainer/task.py:5: error tf-config-primary" in result.stderr


def test_json_document_and_strict(package: Path, tmp_path: Path) -> None:
    config = tmp_path / "hp.yaml"
    config.write_text(
        "trainingInput:\n  runtimeVersion: '2.11'\n  jobDir: gs://my-bucket/o\n  hyperparameters:\n"
        "    goal: MAXIMIZE\n    hyperparameterMetricTag: accuracy\n    maxTrials: 4\n"
        "    params:\n    - {parameterName: lr, type: DOUBLE, minValue: 0.01, maxValue: 0.1}\n"
    )
    out = tmp_path / "out"
    result = migrate(package, out, "--config", str(config), "--format", "json", "--strict")
    assert result.exit_code == 1, result.stderr
    document = json.loads(result.stdout)
    assert document["kind"] == "hptuningjob" and document["configFile"] == "hptuningjob.yaml"
    assert document["config"] == yaml.safe_load((out / "hptuningjob.yaml").read_text())
    assert document["config"]["studySpec"]["metrics"] == [{"metricId": "accuracy", "goal": "MAXIMIZE"}]
    assert "displayName" not in document["config"]  # on the command line, as gcloud requires
    assert document["command"][:4] == ["gcloud", "ai", "hp-tuning-jobs", "create"]
    found = {(f["file"], f["line"], f["rule"]) for f in document["checkup"]["findings"]}
    assert ("trainer/task.py", 9, "hypertune-missing") in found
    assert sorted(document["files"]) == sorted(
        ["hptuningjob.yaml", "submit.sh", "packages/trainer-0.0.0.tar.gz", "MIGRATION.md"]
    )
    assert "the trainer checkup found" in result.stderr and "(--strict)" in result.stderr
    assert migrate(package, tmp_path / "again", "--config", str(config)).exit_code == 0  # without --strict


def test_a_runtime_whose_image_has_ended_gets_the_built_image(
    package: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mlsubmit.targets import vertex_images

    monkeypatch.setattr(vertex_images, "CLOCK", lambda: date(2026, 11, 25))
    out = tmp_path / "out"
    result = migrate(
        package, out, "--runtime-version", "2.11", "--job-dir", "gs://my-bucket/o", "--project", "p1"
    )
    assert result.exit_code == 0, result.stderr
    dockerfile = (out / "image" / "Dockerfile").read_text()
    assert "FROM tensorflow/tensorflow:2.11.0" in dockerfile and '"-m", "trainer.task"' in dockerfile
    with tarfile.open(out / "image" / "context.tar.gz") as context:
        assert sorted(context.getnames()) == ["Dockerfile", "packages/trainer-0.0.0.tar.gz"]
    spec = yaml.safe_load((out / "customjob.yaml").read_text())
    image = spec["workerPoolSpecs"][0]["containerSpec"]["imageUri"]
    assert image.startswith("us-central1-docker.pkg.dev/p1/mlsubmit/trainer:ctx-")
    steps = (out / "submit.sh").read_text().splitlines()[-2:]
    assert steps[0] == f"gcloud builds submit --tag={image} image/context.tar.gz"
    assert not (out / "packages").exists()  # the image holds the package
    report = (out / "MIGRATION.md").read_text()
    assert "Vertex AI no longer serves its prebuilt image" in report and "Python 3.8" in report


def test_what_vertex_refuses_is_reported_with_what_to_do(package: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = migrate(package, out, "--runtime-version", "2.11", "--scale-tier", "basic-tpu")
    assert result.exit_code == 2
    assert not (out / "customjob.yaml").exists() and not (out / "submit.sh").exists()
    report = (out / "MIGRATION.md").read_text()
    assert "## Refused" in report and "TPU" in report
    assert "MIGRATION.md says what to change" in result.stderr


def test_an_invalid_config_writes_nothing(package: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = migrate(package, out, "--runtime-version", "2.11", "--worker-count", "2")
    assert result.exit_code == 2 and "workerCount needs scaleTier CUSTOM" in result.stderr
    assert not out.exists()


def test_migrate_opens_no_socket(package: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Stricter than the suite's loopback guard: not even loopback, and no name is resolved."""
    attempts: list[str] = []

    def refuse(*args: Any, **kwargs: Any) -> Any:
        attempts.append(repr(args[:2]))
        raise OSError("migrate must not use the network")

    for name in ("connect", "connect_ex"):
        monkeypatch.setattr(socket.socket, name, refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    result = migrate(package, tmp_path / "out", "--runtime-version", "2.11", "--job-dir", "gs://my-bucket/o")
    assert result.exit_code == 0, result.stderr
    assert attempts == []


def test_an_output_dir_that_cannot_be_written_is_one_line(package: Path, tmp_path: Path) -> None:
    taken = tmp_path / "file"
    taken.write_text("")
    result = migrate(package, taken / "out", "--runtime-version", "2.11")
    assert result.exit_code == 2
    assert result.stderr.startswith(f"ERROR: --output-dir {taken / 'out'}: cannot write there")


def test_files_already_there_are_replaced_never_written_through(package: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    (out / "packages").mkdir(parents=True)
    victim = tmp_path / "victim"
    victim.write_text("keep")
    for name in ("MIGRATION.md", "customjob.yaml", "packages/trainer-0.0.0.tar.gz"):
        (out / name).symlink_to(victim)
    result = migrate(package, out, "--runtime-version", "2.11")
    assert result.exit_code == 0, result.stderr
    assert victim.read_text() == "keep"
    assert (
        not (out / "MIGRATION.md").is_symlink() and "# Migrating `j1`" in (out / "MIGRATION.md").read_text()
    )
