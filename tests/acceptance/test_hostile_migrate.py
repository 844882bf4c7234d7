"""``mlsubmit migrate`` with hostile names and folders (docs/migrate.md, docs/security.md): terminal
escapes and raw HTML from trainer file names and job values reach MIGRATION.md escaped (the mapping table's
``jobDir`` too); an ``--output-dir`` inside the package is refused before anything is built (the next build
would package the migration); an ``image/`` or ``packages/`` folder that is a symlink is never written through.
What Vertex AI refuses but migrate can change (a tuning metric id with spaces, a package run on an image of its
own) is written changed, marked in MIGRATION.md, exit 0 (1 under ``--strict``)."""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.fakes.cli import run_cli
from tests.fakes.trainers import write_trainer

TASK = (
    "import tensorflow as tf\ntf.contrib.layers\n"  # a finding, so the file's name reaches the checkup table
)
HOSTILE = "x<img src=y onerror=alert(1)>\x1b]0;owned\x07\u202e"
BASE = ["--module-name", "trainer.task", "--region", "us-central1", "--staging-bucket", "gs://my-bucket"]


def migrate(package: Path, out: Path, *extra: str) -> Any:
    return run_cli(["migrate", "j1", "--package-path", str(package), *BASE, "--output-dir", str(out), *extra])


def test_escapes_and_html_from_names_and_values_are_inert_in_migration_md(tmp_path: Path) -> None:
    package = write_trainer(tmp_path, TASK)
    (package / f"{HOSTILE}.py").write_text(TASK)
    out = tmp_path / "out"
    result = migrate(
        package, out, "--runtime-version", "1.15", "--project", "p", "--job-dir", f"gs://bbb/{HOSTILE}"
    )
    assert result.exit_code == 0, result.stderr
    report = (out / "MIGRATION.md").read_text()
    assert "jobDir gs://bbb/x&lt;img src=y onerror=alert(1)&gt;\\x1b]0;owned\\x07\\u202e |" in report
    assert "| trainer/x&lt;img src=y onerror=alert(1)&gt;\\x1b]0;owned\\x07\\u202e.py:2 |" in report
    for raw in ("\x1b", "\x07", "\u202e", "<img", "<b"):
        assert raw not in report, raw


@pytest.mark.parametrize("inside", ["package", "subfolder"])
def test_an_output_dir_inside_the_package_is_refused_before_anything_is_built(
    inside: str, tmp_path: Path
) -> None:
    package = write_trainer(tmp_path, "print('hi')\n")
    out = package if inside == "package" else package / "migrated"
    result = migrate(package, out, "--runtime-version", "2.11")
    assert result.exit_code == 2, result.stderr
    assert result.stderr.strip().splitlines() == [
        f"ERROR: --output-dir {out} is inside --package-path {package}: the next build would package this "
        "migration into the trainer. Choose a folder outside it, e.g. beside it."
    ]
    assert not (package / "MIGRATION.md").exists() and not (package / "migrated").exists()


@pytest.mark.parametrize("folder", ["image", "packages"])
def test_a_symlinked_folder_in_the_output_dir_is_never_written_through(
    folder: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mlsubmit.targets import vertex_images

    if folder == "image":  # a day when 2.11's prebuilt image has ended: migrate builds an image
        monkeypatch.setattr(vertex_images, "CLOCK", lambda: date(2026, 11, 25))
    package = write_trainer(tmp_path, "print('hi')\n")
    out = tmp_path / "out"
    out.mkdir()
    victim = tmp_path / "victim"
    victim.mkdir()
    (out / folder).symlink_to(victim)
    result = migrate(package, out, "--runtime-version", "2.11", "--project", "p")
    assert result.exit_code == 2, result.stderr
    assert f"{out / folder} is a symlink or not a folder" in result.stderr
    assert list(victim.iterdir()) == []


TUNE = """\
trainingInput:
  scaleTier: BASIC
  runtimeVersion: "2.11"
  hyperparameters:
    goal: MAXIMIZE
    hyperparameterMetricTag: Taxi Model Accuracy
    maxTrials: 2
    params:
    - {parameterName: lr, type: DOUBLE, minValue: 0.01, maxValue: 0.1}
"""
ON_IMAGE = """\
trainingInput:
  scaleTier: CUSTOM
  masterType: n1-standard-4
  masterConfig:
    imageUri: gcr.io/cloud-ml-algos/image_classification:latest
"""


@pytest.mark.parametrize("strict", [False, True], ids=["default", "strict"])
@pytest.mark.parametrize("case", ["metric-with-spaces", "package-on-an-image"])
def test_what_vertex_refuses_but_migrate_can_change_is_written_changed_and_marked(
    case: str, strict: bool, tmp_path: Path
) -> None:
    package = write_trainer(tmp_path, "print('hi')\n")
    config = tmp_path / "job.yaml"
    config.write_text(TUNE if case == "metric-with-spaces" else ON_IMAGE)
    out = tmp_path / "out"
    result = run_cli(
        ["migrate", "j1", "--config", str(config), "--package-path", str(package), *BASE, "--project", "p",
         "--output-dir", str(out), *(["--strict"] if strict else [])]
    )  # fmt: skip
    assert result.exit_code == (1 if strict else 0), result.stderr
    report = (out / "MIGRATION.md").read_text()
    assert "## Changed so that Vertex AI takes it: act on these" in report
    if case == "metric-with-spaces":
        spec = yaml.safe_load((out / "hptuningjob.yaml").read_text())
        assert spec["studySpec"]["metrics"][0]["metricId"] == "Taxi_Model_Accuracy"
        assert "hyperparameter_metric_tag='Taxi_Model_Accuracy'" in report
    else:
        spec = yaml.safe_load((out / "customjob.yaml").read_text())
        (pool,) = spec["workerPoolSpecs"]
        assert pool["containerSpec"]["imageUri"].startswith(
            "us-central1-docker.pkg.dev/p/mlsubmit/trainer:ctx-"
        )
        dockerfile = (out / "image" / "Dockerfile").read_text()
        assert "FROM gcr.io/cloud-ml-algos/image_classification:latest" in dockerfile
        assert "trainer-0.0.0.tar.gz" in dockerfile
    assert "WARNING: changed: " in result.stderr
