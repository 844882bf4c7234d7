"""`mlsubmit local train --config` reads the job as `training` does: the same scale tiers, the same rules, the same
messages at the same file lines."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner, Result

from mlsubmit.cli import cli

PACKAGES = ("--packages", "gs://b-1/trainer-0.0.0.tar.gz")


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def local_dry_run(config: Path) -> Result:
    return run("local", "train", "--package-path", "trainer", "--config", str(config), "--dry-run")


def replica_roles(result: Result) -> dict[str, int]:
    assert result.exit_code == 0, result.output
    roles: dict[str, int] = {}
    for replica in json.loads(result.stdout)["replicas"]:
        task: dict[str, Any] = replica["tf_config"]["task"]
        kind = task.get("type", "chief")  # a single process: gcloud's empty task
        roles[kind] = roles.get(kind, 0) + 1
    return roles


STANDARD_1 = """\
trainingInput:
  scaleTier: STANDARD_1
  region: us-central1
  runtimeVersion: "2.11"
  pythonModule: trainer.task
"""


def test_standard_1_runs_the_replicas_of_the_export_locally(workdir: Path) -> None:
    config = write(workdir / "std1.yaml", STANDARD_1)
    local = replica_roles(local_dry_run(config))
    assert local == {"chief": 1, "worker": 4, "ps": 3}

    exported = run("export", "--format", "tfjob", "--config", str(config), "std_1", *PACKAGES)
    assert exported.exit_code == 0, exported.output
    specs = yaml.safe_load(exported.stdout)["spec"]["tfReplicaSpecs"]
    assert {t: s["replicas"] for t, s in specs.items()} == {"Chief": 1, "Worker": 4, "PS": 3}


@pytest.mark.parametrize(
    ("tier", "expected"),
    [
        ("BASIC", {"chief": 1}),
        ("BASIC_GPU", {"chief": 1}),
        ("PREMIUM_1", {"chief": 1, "worker": 19, "ps": 11}),
    ],
)
def test_every_tier_expands_as_in_the_export(workdir: Path, tier: str, expected: dict[str, int]) -> None:
    config = write(workdir / "tier.yaml", STANDARD_1.replace("STANDARD_1", tier))
    assert replica_roles(local_dry_run(config)) == expected


def test_a_runtime_2_0_config_runs_a_master_locally_and_in_the_export(workdir: Path) -> None:
    config = write(workdir / "rt20.yaml", STANDARD_1.replace('"2.11"', '"2.0"'))
    assert replica_roles(local_dry_run(config)) == {"master": 1, "worker": 4, "ps": 3}
    exported = run(
        "export", "--format", "tfjob", "--config", str(config), "rt_20", *PACKAGES,
        # runtime 2.0 has no prebuilt image: a prebuilt one named explicitly (any other needs --build-image)
        "--executor-image-uri", "us-docker.pkg.dev/vertex-ai/training/tf-cpu.2-11.py310:latest",
    )  # fmt: skip
    assert exported.exit_code == 0, exported.output
    assert set(yaml.safe_load(exported.stdout)["spec"]["tfReplicaSpecs"]) == {"Master", "Worker", "PS"}


INVALID = [
    # a rule the schema cannot say: counts need scaleTier CUSTOM
    "trainingInput:\n  pythonModule: trainer.task\n  workerCount: 2\n",
    # a machine type that is neither kind
    "trainingInput:\n  pythonModule: trainer.task\n  scaleTier: CUSTOM\n  masterType: n1-standard-4\n"
    "  workerType: 'N1 STANDARD'\n  workerCount: 1\n",
    # a schema error next to a rule error
    "trainingInput:\n  pythonModule: trainer.task\n  workerCount: 2\n  masterConfig: [1, 2]\n",
    # an int64 count beyond int64, and a trailing newline in a region
    f"trainingInput:\n  pythonModule: trainer.task\n  scaleTier: CUSTOM\n  masterType: n1-standard-4\n"
    f"  workerType: n1-standard-4\n  workerCount: '{2**70}'\n  region: \"us-central1\\n\"\n",
    # a duration with a trailing newline
    'trainingInput:\n  pythonModule: trainer.task\n  scheduling:\n    maxRunningTime: "60s\\n"\n',
]


def error_lines(result: Result) -> list[str]:
    return [line for line in result.stderr.splitlines() if line.startswith("ERROR: ")]


@pytest.mark.parametrize(
    "text", INVALID, ids=["tier-rule", "machine-type", "schema-and-rule", "int64-and-newline", "duration"]
)
def test_an_invalid_config_gets_the_errors_of_training(workdir: Path, text: str) -> None:
    write(workdir / "bad.yaml", text)
    local = local_dry_run(Path("bad.yaml"))
    training = run(
        "training", "bad_job", "--config", "bad.yaml", "--dry-run", "--region", "us-central1",
        "--runtime-version", "2.11", *PACKAGES,
    )  # fmt: skip
    assert local.exit_code == 2 and training.exit_code == 2, (local.output, training.output)
    assert "Traceback" not in local.output + training.output
    local_lines = error_lines(local)
    assert local_lines and all(line.startswith("ERROR: bad.yaml:") for line in local_lines), local.stderr
    # every problem local train finds in the file, training --dry-run finds at the same line with the same words
    assert set(local_lines) <= set(error_lines(training)), (local.stderr, training.stderr)


@pytest.mark.parametrize("text", INVALID)
def test_validate_reports_what_local_train_reports(workdir: Path, text: str) -> None:
    write(workdir / "bad.yaml", text)
    local = local_dry_run(Path("bad.yaml"))
    checked = run("validate", "bad.yaml")
    assert checked.exit_code == 2 and error_lines(checked) == error_lines(local), (
        checked.stderr,
        local.stderr,
    )
