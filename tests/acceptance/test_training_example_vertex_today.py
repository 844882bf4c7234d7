"""examples/configs/vertex_today.yaml runs on Vertex AI on the day of writing (2026-11-25), when every other
example's runtime image has ended: a dry run for --target vertex builds its image plan and a CustomJob."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

import pytest

from tests.fakes.cli import run_cli

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "configs" / "vertex_today.yaml"
WRITTEN = date(2026, 11, 25)


@pytest.fixture(autouse=True)
def on_the_day_of_writing(monkeypatch: pytest.MonkeyPatch) -> None:
    from mlsubmit.targets import vertex_images

    monkeypatch.setattr(vertex_images, "CLOCK", lambda: WRITTEN)
    monkeypatch.setenv("CLOUDSDK_CORE_PROJECT", "my-project")


def dry_run(config: Path) -> object:
    return run_cli(
        ["training", "my_job", "--config", str(config), "--target", "vertex", "--package-path",
         str(ROOT / "examples" / "trainer_tf" / "trainer"), "--staging-bucket", "gs://my-bucket", "--dry-run",
         "--format", "json"]
    )  # fmt: skip


def test_the_example_dry_runs_for_vertex_today() -> None:
    result = dry_run(EXAMPLE)
    assert result.exit_code == 0, result.stderr  # type: ignore[attr-defined]
    out = json.loads(result.stdout)  # type: ignore[attr-defined]
    image = out["image"]["image"]
    assert image.startswith("us-central1-docker.pkg.dev/my-project/mlsubmit/trainer:ctx-")
    assert out["image"]["base"].startswith("tensorflow/tensorflow:2.11")
    pools = out["job"]["jobSpec"]["workerPoolSpecs"]
    assert [p["containerSpec"]["imageUri"] for p in pools] == [image, image]
    assert pools[0]["containerSpec"]["args"][:2] == ["--steps", "50"]


def test_without_build_image_the_same_job_is_refused_today(tmp_path: Path) -> None:
    legacy = tmp_path / "legacy.yaml"
    legacy.write_text(EXAMPLE.read_text().replace("vertex:\n  buildImage: true\n", ""))
    result = dry_run(legacy)
    assert result.exit_code == 2  # type: ignore[attr-defined]
    assert "end of availability" in result.stderr  # type: ignore[attr-defined]
