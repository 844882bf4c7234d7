"""`mlsubmit local tune` takes `local train`'s flags, rules and merge, not copies of them (docs/local.md): a
trial sees what `local train` would give it (``--target vertex``'s environment, ``--env``), and a config that
`local train`, `validate` and `training` refuse is refused here too, with exit 2, before any trial runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from mlsubmit.cli import cli

REPO = Path(__file__).resolve().parents[2]

# Writes what it saw into its trial's job dir (the last --job-dir of its args), then reports a metric.
RECORDING_TRAINER = """\
import json, os, sys
job_dir = sys.argv[len(sys.argv) - 1 - sys.argv[::-1].index("--job-dir") + 1]
os.makedirs(job_dir, exist_ok=True)
with open(os.path.join(job_dir, "seen.json"), "w") as f:
    json.dump({"K": os.environ.get("K"), "CLUSTER_SPEC": os.environ.get("CLUSTER_SPEC")}, f)
with open(os.environ["CLOUD_ML_HP_METRIC_FILE"], "w") as f:
    f.write(json.dumps({"training/hptuning/metric": "1.0", "global_step": "1"}) + "\\n")
"""
HYPERPARAMETERS = {
    "goal": "MAXIMIZE",
    "params": [{"parameterName": "x", "type": "CATEGORICAL", "categoricalValues": ["a"]}],
    "maxTrials": 1,
}


def trainer_in(tmp_path: Path) -> Path:
    trainer = tmp_path / "src" / "trainer"
    trainer.mkdir(parents=True)
    (trainer / "__init__.py").write_text("")
    (trainer / "task.py").write_text(textwrap.dedent(RECORDING_TRAINER))
    return trainer


def config_in(tmp_path: Path, training_input: dict[str, object]) -> Path:
    path = tmp_path / "tune.yaml"
    path.write_text(yaml.safe_dump({"trainingInput": {**training_input, "hyperparameters": HYPERPARAMETERS}}))
    return path


def local_tune(trainer: Path, config: Path, job_dir: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    """The real CLI in a subprocess, as a user runs it."""
    flags = ["--package-path", str(trainer), "--module-name", "trainer.task", "--config", str(config)]
    return subprocess.run(
        [sys.executable, "-m", "mlsubmit", "local", "tune", *flags, "--job-dir", str(job_dir), *extra],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_vertex_trial_sees_the_env_flag_and_the_cluster_spec(tmp_path: Path) -> None:
    config = config_in(tmp_path, {"region": "us-central1"})
    out = tmp_path / "out"
    result = local_tune(trainer_in(tmp_path), config, out, "--target", "vertex", "--env", "K=V")
    assert result.returncode == 0, result.stderr
    [seen_file] = out.glob("*/seen.json")
    seen = json.loads(seen_file.read_text())
    assert seen["K"] == "V"
    spec = json.loads(seen["CLUSTER_SPEC"])
    assert spec["task"] == {"type": "workerpool0", "index": 0, "trial": "1"}


def test_env_without_vertex_is_refused_as_local_train_refuses_it(tmp_path: Path) -> None:
    result = local_tune(trainer_in(tmp_path), config_in(tmp_path, {}), tmp_path / "out", "--env", "K=V")
    assert result.returncode == 2 and "add --target vertex" in result.stderr
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").glob("*/seen.json"))


# Counts need scaleTier CUSTOM: a rule of `training` (no schema error), so only the rules refuse it.
REFUSED = {"pythonModule": "trainer.task", "workerCount": 2}


@pytest.mark.parametrize(
    "argv",
    [
        ["validate", "{config}"],
        ["local", "train", "--package-path", "{trainer}", "--config", "{config}", "--dry-run"],
        ["training", "job_1", "--config", "{config}", "--region", "us-central1", "--dry-run"],
    ],
    ids=["validate", "local-train", "training"],
)
def test_the_config_the_other_commands_refuse(tmp_path: Path, argv: list[str]) -> None:
    config, trainer = config_in(tmp_path, REFUSED), trainer_in(tmp_path)
    args = [a.format(config=config, trainer=trainer) for a in argv]
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert result.exit_code == 2 and "workerCount" in result.output


def test_local_tune_applies_the_config_rules(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = local_tune(trainer_in(tmp_path), config_in(tmp_path, REFUSED), out)
    assert result.returncode == 2, result.stderr
    assert "tune.yaml" in result.stderr and "workerCount" in result.stderr
    assert not list(out.glob("*/seen.json"))  # no trial ran
