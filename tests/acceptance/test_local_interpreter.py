"""`local train` / `local tune` run the interpreter gcloud's `ml_engine/local_python` names (as `gcloud
ai-platform local train` does), name it when the trainer cannot import a module, and warn when its TensorFlow is
not the job's runtimeVersion (docs/local.md)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.fakes.cli import local_args, run_cli_process

FROM_GCLOUD = "gcloud property ml_engine/local_python (configuration default)"


def wrapper(tmp_path: Path, tensorflow: str) -> Path:
    """A Python that records each run and answers the TensorFlow probe with ``tensorflow``."""
    script = tmp_path / "bin" / "mypython"
    script.parent.mkdir()
    script.write_text(
        "#!/bin/sh\n"
        'case "$*" in *importlib.metadata*) echo ' + tensorflow + "; exit 0;; esac\n"
        f"echo ran >> {tmp_path / 'runs'}\n"
        f'exec {sys.executable} "$@"\n'
    )
    script.chmod(0o755)
    return script


def project(tmp_path: Path, task: str, python: Path) -> dict[str, str]:
    trainer = tmp_path / "trainer"
    trainer.mkdir()
    (trainer / "__init__.py").write_text("")
    (trainer / "task.py").write_text(task)
    config = tmp_path / "gcloud" / "configurations"
    config.mkdir(parents=True)
    (config / "config_default").write_text(f"[ml_engine]\nlocal_python = {python}\n")
    (tmp_path / "job.yaml").write_text("trainingInput:\n  runtimeVersion: '2.11'\n")
    return {"CLOUDSDK_CONFIG": str(tmp_path / "gcloud")}


def local_train(tmp_path: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return run_cli_process(local_args("train", "trainer", "job.yaml"), cwd=tmp_path, env=env)


def test_the_gcloud_property_chooses_the_interpreter_and_its_tensorflow_is_checked(tmp_path: Path) -> None:
    python = wrapper(tmp_path, "2.17.0")
    env = project(tmp_path, "print('trained')\n", python)
    done = local_train(tmp_path, env)
    assert done.returncode == 0, done.stderr
    assert "[chief] trained" in done.stdout
    assert (tmp_path / "runs").read_text() == "ran\n"
    assert (
        f"WARNING: the replicas run {python} (from {FROM_GCLOUD}), which has TensorFlow 2.17.0, but the job's "
        "runtimeVersion is 2.11"
    ) in done.stderr


def test_an_import_failure_names_the_interpreter(tmp_path: Path) -> None:
    python = wrapper(tmp_path, "2.11.0")
    env = project(tmp_path, "import no_such_module_for_mlsubmit\n", python)
    done = local_train(tmp_path, env)
    assert done.returncode == 1
    assert "WARNING" not in done.stderr  # its TensorFlow is the runtime's
    assert (
        f"ERROR: the trainer could not import a module with {python} (from {FROM_GCLOUD}): install the module there"
    ) in done.stderr


def test_a_tuning_trial_that_cannot_import_names_the_interpreter(tmp_path: Path) -> None:
    python = wrapper(tmp_path, "2.17.0")
    env = project(tmp_path, "import no_such_module_for_mlsubmit\n", python)
    (tmp_path / "job.yaml").write_text(
        "trainingInput:\n  runtimeVersion: '2.11'\n  hyperparameters:\n    goal: MAXIMIZE\n    maxTrials: 1\n"
        "    algorithm: GRID_SEARCH\n    params:\n    - {parameterName: x, type: INTEGER, minValue: 1, maxValue: 1}\n"
    )
    argv = local_args("tune", "trainer", "job.yaml", "--job-dir", str(tmp_path / "study"))
    done = run_cli_process(argv, cwd=tmp_path, env=env)
    assert done.returncode == 1
    source = FROM_GCLOUD
    assert f"WARNING: the replicas run {python} (from {source}), which has TensorFlow 2.17.0" in done.stderr
    assert (
        "Trial 1 FAILED" in done.stderr
        and f"exited with status 1; the trainer could not import a module with {python} (from {source})"
        in done.stderr
    )
