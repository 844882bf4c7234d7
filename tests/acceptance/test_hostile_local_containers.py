"""``local train`` in containers with hostile flags (docs/containers.md): a job dir that would mount the host's
root or a system folder over the image, or that the engine would split at ``:``, is refused before any engine
runs, in the dry run as in the run; ``--env K=V`` reaches the container even when the caller holds K=V too; a
package folder ``trainer_`` gets a valid local image name, not an error about a flag never given; a ``~user`` path with no such home is
one clear error."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.cli import run_cli, run_cli_process
from tests.fakes.containers import Storage
from tests.fakes.trainers import write_trainer

ENV_TASK = """\
import argparse, json, os
parser = argparse.ArgumentParser()
parser.add_argument("--job-dir")
args, _ = parser.parse_known_args()
with open(os.path.join(args.job_dir, "env.json"), "w") as out:
    json.dump({k: os.environ.get(k) for k in ("SHARED", "ONLY_FLAG")}, out)
"""


def local_train(trainer: Path, *extra: str, env: dict[str, str | None] | None = None) -> Any:
    return run_cli(
        ["local", "train", "--package-path", str(trainer), "--module-name", "trainer.task", *extra], env=env
    )


def assert_refused(result: Any, *fragments: str) -> None:
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ERROR: "), result.stderr
    assert all(fragment in lines[0] for fragment in fragments), lines[0]


@pytest.mark.parametrize("job_dir", ["/", "/usr", "/etc/out", "/run", "/var/run/x", "/home", "LINK"])
@pytest.mark.parametrize("dry_run", [True, False], ids=["dry-run", "run"])
def test_a_job_dir_over_a_system_folder_is_refused_before_any_engine(
    job_dir: str, dry_run: bool, tmp_path: Path
) -> None:
    trainer = write_trainer(tmp_path, "print('hi')\n")
    if job_dir == "LINK":
        (tmp_path / "root").symlink_to("/")
        job_dir = str(tmp_path / "root")
    result = local_train(
        trainer, "--image", "127.0.0.1:1/never/pulled:v1", "--builder", "buildah", "--job-dir", job_dir,
        *(["--dry-run"] if dry_run else []),
    )  # fmt: skip
    assert_refused(result, f"--job-dir {job_dir}", "system folder", "--job-dir ./out")


@pytest.mark.parametrize("dry_run", [True, False], ids=["dry-run", "run"])
def test_a_job_dir_with_a_colon_is_refused_before_any_engine(dry_run: bool, tmp_path: Path) -> None:
    trainer = write_trainer(tmp_path, "print('hi')\n")
    job_dir = tmp_path / "a:b"
    result = local_train(
        trainer, "--image", "127.0.0.1:1/never/pulled:v1", "--builder", "buildah", "--job-dir", str(job_dir),
        *(["--dry-run"] if dry_run else []),
    )  # fmt: skip
    assert_refused(result, f"--job-dir {job_dir}", "cannot hold ':'")
    assert not job_dir.exists()


def test_a_package_folder_named_trainer_underscore_gets_a_local_image_name(tmp_path: Path) -> None:
    package = tmp_path / "trainer_"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "task.py").write_text("print('hi')\n")
    (tmp_path / "setup.py").write_text(  # the project builds itself, so the folder's name is fine
        "from setuptools import setup\nsetup(name='trainer_', version='1', packages=['trainer_'])\n"
    )
    result = run_cli(
        ["local", "train", "--package-path", str(package), "--module-name", "trainer_.task", "--build-image",
         "--dry-run"]
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr  # not "--output-image-uri 'localhost/mlsubmit/trainer-'"
    assert json.loads(result.stdout)["image"]["image"].startswith("localhost/mlsubmit/trainer:ctx-")


@pytest.mark.parametrize("flag", ["--job-dir", "--package-path"])
def test_a_home_that_does_not_exist_is_one_clear_error(flag: str, tmp_path: Path) -> None:
    trainer = write_trainer(tmp_path, "print('hi')\n")
    args = {"--package-path": str(trainer), "--job-dir": str(tmp_path / "out")}
    args[flag] = "~no-such-user-x7/work"
    result = run_cli(
        ["local", "train", *[x for pair in args.items() for x in pair], "--module-name", "trainer.task", "--dry-run"],
        env={"HOME": None},
    )  # fmt: skip
    assert_refused(result, f"{flag} ~no-such-user-x7/work", "no home directory")


@pytest.mark.containers
def test_env_given_by_flag_reaches_the_container_even_when_the_caller_holds_it(
    container_storage: Storage, base_image: str, tmp_path: Path
) -> None:
    trainer = write_trainer(tmp_path, ENV_TASK)
    out = tmp_path / "out"
    result = run_cli_process(
        ["local", "train", "--package-path", str(trainer), "--module-name", "trainer.task", "--target", "vertex",
         "--build-image", "--builder", "buildah", "--base-image", base_image, "--job-dir", str(out),
         "--env", "SHARED=same-value", "--env", "ONLY_FLAG=1"],
        cwd=tmp_path, env={**container_storage.env, "SHARED": "same-value"}, timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert json.loads((out / "env.json").read_text()) == {"SHARED": "same-value", "ONLY_FLAG": "1"}
