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


def test_a_python_version_change_is_listed_under_what_migrate_changed(tmp_path: Path) -> None:
    """Issue 27 (smaller): runtime 2.11's job asked for Python 3.7; the image --build-image builds on
    TensorFlow's 2.11.0 runs Python 3.8, and both the summary on stderr and MIGRATION.md say so. Asked for while
    the runtime's prebuilt image is still served, it is built all the same (no "builds no image" refusal)."""
    package = write_trainer(tmp_path, "print('hi')\n")
    args = ["migrate", "j1", "--package-path", str(package), "--module-name", "trainer.task", "--region"]
    args += [
        "us-central1",
        "--staging-bucket",
        "gs://my-bucket",
        "--project",
        "p1",
        "--runtime-version",
        "2.11",
    ]
    args += ["--build-image"]  # on a day its prebuilt image is still served (tests/conftest.py)
    said = "pythonVersion 3.7 became Python 3.8: the job runs the Python of its image's base tensorflow/tensorflow"
    changed = run_cli([*args, "--python-version", "3.7", "--output-dir", str(tmp_path / "out")])
    assert changed.exit_code == 0, changed.stderr
    assert f"WARNING: {said}" in changed.stderr
    assert "WARNING: --build-image: the job runs as a custom container" in changed.stderr
    assert "no longer serves" not in changed.stderr  # it is served that day: the flag asked for the image
    report = (tmp_path / "out" / "MIGRATION.md").read_text()
    section = report.split("## What mlsubmit changed, and why", 1)[1].split("\n## ", 1)[0]
    assert said in section
    unsaid = run_cli(
        [*args, "--output-dir", str(tmp_path / "same")]
    )  # no pythonVersion asked: nothing changed
    assert unsaid.exit_code == 0, unsaid.stderr
    assert "became Python" not in unsaid.stderr + (tmp_path / "same" / "MIGRATION.md").read_text()
