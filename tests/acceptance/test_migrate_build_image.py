"""`migrate --build-image --package-path` writes the image's context and a job that runs it (issue 27, item 9):
no "this job has none" refusal for the package it was given, no "runtimeVersion None"."""

from __future__ import annotations

from pathlib import Path

import yaml

from tests.fakes.cli import run_cli
from tests.fakes.trainers import write_trainer


def test_migrate_builds_the_image_the_job_asked_for(tmp_path: Path) -> None:
    package = write_trainer(tmp_path, "print('hi')\n")
    out = tmp_path / "out"
    args = ["migrate", "j1", "--package-path", str(package), "--module-name", "trainer.task", "--region"]
    args += ["us-central1", "--staging-bucket", "gs://my-bucket", "--project", "p1", "--build-image"]
    result = run_cli([*args, "--output-dir", str(out)])
    assert result.exit_code == 0, result.stderr
    assert "this job has none" not in result.stderr and "None" not in result.stderr
    assert (
        "WARNING: --build-image: the job runs as a custom container built from its packages on "
        in result.stderr
    )
    assert (out / "image" / "Dockerfile").is_file()
    job = yaml.safe_load((out / "customjob.yaml").read_text())
    (pool,) = job["workerPoolSpecs"]
    assert pool["containerSpec"]["imageUri"].startswith("us-central1-docker.pkg.dev/p1/mlsubmit/trainer:ctx-")
