"""Local files a hostile user hands mlsubmit (docs/security.md): a ``pyproject.toml`` nested 3,000 deep beside the
trainer, a job file that is one ``!!python/object/apply`` document. Each is one ``ERROR:`` line naming the file and
what is wrong (exit 2), never a RecursionError or a vague "not a mapping"; a region repeated in
``--fallback-regions`` is refused by the dry run and the submit alike, before any create."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.fakes.api_server import FakeGoogleApis
from tests.fakes.cli import run_cli
from tests.fakes.lifecycle_support import point_cli_at
from tests.fakes.trainers import write_trainer

JOB = ["--module-name", "trainer.task", "--region", "us-central1", "--staging-bucket", "gs://my-bucket"]


def assert_one_error(result: Any, *fragments: str) -> None:
    stderr = result.stderr
    assert result.exit_code == 2, stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ERROR: "), stderr
    for fragment in fragments:
        assert fragment in lines[0], stderr


@pytest.mark.timeout(30)
@pytest.mark.parametrize("command", ["training", "migrate"])
@pytest.mark.parametrize("value", ["[" * 3000 + "]" * 3000, "{a = " * 3000 + "1" + "}" * 3000])
def test_a_pyproject_nested_3000_deep_is_one_clear_error(command: str, value: str, tmp_path: Path) -> None:
    trainer = write_trainer(tmp_path, "print('hi')\n")
    pyproject = trainer.parent / "pyproject.toml"
    pyproject.write_text(
        f'[tool.ruff]\nline-length = 100\n\n[tool.x]\n# a comment with [[[ brackets\nv = "[[[["\na = {value}\n'
    )
    extra = ["--dry-run"] if command == "training" else ["--output-dir", str(tmp_path / "out")]
    result = run_cli(
        [command, "j1", "--package-path", str(trainer), *JOB, "--runtime-version", "2.11", *extra]
    )
    assert_one_error(result, f"{pyproject}:7:", "nests more than 64")


def test_a_shallow_pyproject_with_brackets_in_strings_and_comments_is_read(tmp_path: Path) -> None:
    trainer = write_trainer(tmp_path, "print('hi')\n")
    (trainer.parent / "pyproject.toml").write_text(
        "[tool.x]\n# [[[[" + "[" * 100 + '\nv = "' + "[" * 100 + "\"\nw = '" + "{" * 100 + "'\n"
        'z = """\n' + "[" * 100 + '\n"""\nok = [[1, 2], {a = [3]}]\n'
    )
    result = run_cli(
        ["training", "j1", "--package-path", str(trainer), *JOB, "--runtime-version", "2.11", "--dry-run"]
    )
    assert result.exit_code == 0, result.stderr


@pytest.mark.parametrize(
    "document",
    [
        '!!python/object/apply:os.system ["echo pwned"]\n',
        "!!python/name:os.system\n",
    ],
)
def test_a_top_level_python_tag_is_named(document: str, tmp_path: Path) -> None:
    config = tmp_path / "job.yaml"
    config.write_text(document)
    result = run_cli(
        [
            "training",
            "j1",
            "--config",
            str(config),
            "--packages",
            "gs://my-bucket/t.tar.gz",
            *JOB,
            "--dry-run",
        ]
    )
    tag = document.split()[0].split("[")[0]
    assert_one_error(result, f"{config}:1", f"unsupported YAML tag {tag}", "never Python objects")


@pytest.mark.parametrize("dry_run", [True, False], ids=["dry-run", "submit"])
@pytest.mark.parametrize("regions", ["us-east4,us-east4,europe-west4", "us-east4,us-central1"])
def test_a_region_repeated_in_fallback_regions_is_refused_before_any_create(
    regions: str, dry_run: bool, fake_apis: FakeGoogleApis, monkeypatch: pytest.MonkeyPatch
) -> None:
    point_cli_at(monkeypatch, fake_apis)
    result = run_cli(
        ["training", "j1", "--master-image-uri", "us-docker.pkg.dev/p/r/img:v1", "--target", "vertex", "--region",
         "us-central1", "--fallback-regions", regions, *(["--dry-run"] if dry_run else [])]
    )  # fmt: skip
    repeated = "us-east4" if regions.count("us-east4") == 2 else "us-central1"
    assert result.exit_code == 2, result.output
    assert f"region {repeated!r} is already tried in this round" in result.stderr
    assert "Traceback" not in result.output
    assert fake_apis.custom_job_bodies == []
