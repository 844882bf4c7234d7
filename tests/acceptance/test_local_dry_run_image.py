"""`local train --dry-run` with an image shows what runs in the container, not on this machine (issue 27, smaller
items): the built image's ENTRYPOINT (`python3 -m MODULE`) in its WORKDIR `/usr/app`; an image given with --image
runs its own entrypoint, which the dry run does not pretend to know (docs/containers.md)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.fakes.cli import run_cli
from tests.fakes.trainers import write_trainer


def replicas(tmp_path: Path, *flags: str) -> list[dict[str, object]]:
    package = write_trainer(tmp_path, "print('hi')\n")
    args = ["local", "train", "--package-path", str(package), "--module-name", "trainer.task", "--dry-run"]
    result = run_cli([*args, *flags, "--", "--epochs", "3"])
    assert result.exit_code == 0, result.stderr
    found: list[dict[str, object]] = json.loads(result.stdout)["replicas"]
    return found


def test_a_built_image_runs_its_entrypoint_in_usr_app(tmp_path: Path) -> None:
    (chief,) = replicas(tmp_path, "--build-image")
    assert chief["argv"] == ["python3", "-m", "trainer.task", "--epochs", "3"]
    assert chief["cwd"] == "/usr/app"
    assert sys.executable not in json.dumps(chief) and str(tmp_path) not in json.dumps(chief)


def test_a_given_image_runs_its_own_entrypoint(tmp_path: Path) -> None:
    (chief,) = replicas(tmp_path, "--image", "registry.example/team/trainer:v1")
    assert chief["argv"] == ["<entrypoint of registry.example/team/trainer:v1>", "--epochs", "3"]
    assert chief["cwd"] == "<working directory of registry.example/team/trainer:v1>"


def test_without_an_image_the_host_interpreter_runs_in_the_packages_parent(tmp_path: Path) -> None:
    (chief,) = replicas(tmp_path, "--python", sys.executable)
    assert chief["argv"] == [sys.executable, "-m", "trainer.task", "--epochs", "3"]
    assert chief["cwd"] == str(tmp_path / "src")


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (["--image", "registry.example/t:v1", "--build-image"], "--image and --build-image: give one"),
        (
            ["--image", "registry.example/t:v1", "--from-package"],
            "--from-package runs the package from a local venv",
        ),
        (["--build-image", "--from-package"], "--from-package runs the package from a local venv"),
        (["--base-image", "python:3.11"], "--output-image-uri and --base-image go with --build-image"),
        (["--image", "-v/:/host"], "--image"),
    ],
)
def test_the_dry_run_refuses_what_the_run_would(tmp_path: Path, flags: list[str], said: str) -> None:
    """A dry run checks the container flags as the run does (docs/containers.md): one line, exit 2."""
    package = write_trainer(tmp_path, "print('hi')\n")
    base = ["local", "train", "--package-path", str(package), "--module-name", "trainer.task"]
    for mode in (["--dry-run"], []):
        result = run_cli([*base, *flags, *mode])
        assert result.exit_code == 2, (mode, result.stdout, result.stderr)
        (line,) = result.stderr.strip().splitlines()
        assert line.startswith("ERROR: ") and said in line
