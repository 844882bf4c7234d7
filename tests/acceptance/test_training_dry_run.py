"""`python -m mlsubmit training ... --dry-run --format json` as a real subprocess, the way CI runs it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.cli import MLSUBMIT_ROOT, run_cli_process

CONFIG = """\
labels:
  team: research
trainingInput:
  scaleTier: CUSTOM
  masterType: n1-standard-8
  masterConfig:
    acceleratorConfig: {type: NVIDIA_TESLA_T4, count: 1}
    diskConfig: {bootDiskType: pd-ssd, bootDiskSizeGb: 200}
  workerType: n1-standard-8
  workerCount: 2
  parameterServerType: n1-highmem-2
  parameterServerCount: 1
  evaluatorType: n1-standard-4
  evaluatorCount: 1
  runtimeVersion: "2.11"
  pythonVersion: "3.7"
  pythonModule: trainer.task
  packageUris: [gs://my-bucket/trainer-0.1.tar.gz]
  scheduling: {maxRunningTime: 7200s}
"""


def mlsubmit(cwd: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run `python -m mlsubmit ARGS` in ``cwd`` (the test environment is already isolated by conftest)."""
    return run_cli_process(args, cwd=cwd, env=env)


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    (tmp_path / "config.yaml").write_text(CONFIG, encoding="utf-8")
    return tmp_path


def test_dry_run_prints_the_body_as_json(workdir: Path) -> None:
    proc = mlsubmit(
        workdir,
        "training", "my_job", "--config", "config.yaml", "--region", "us-central1",
        "--worker-accelerator", "type=nvidia-tesla-t4,count=2", "--labels", "env=ci",
        "--dry-run", "--format", "json", "--", "--epochs", "3",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    body: dict[str, Any] = json.loads(proc.stdout)
    assert body["jobId"] == "my_job"
    assert body["labels"] == {"env": "ci"}
    ti = body["trainingInput"]
    assert ti["region"] == "us-central1"
    assert ti["args"] == ["--epochs", "3"]
    # int64 fields are JSON strings, as the API wants them
    assert (ti["workerCount"], ti["parameterServerCount"], ti["evaluatorCount"]) == ("2", "1", "1")
    assert ti["masterConfig"]["acceleratorConfig"] == {"type": "NVIDIA_TESLA_T4", "count": "1"}
    assert ti["workerConfig"]["acceleratorConfig"] == {"type": "NVIDIA_TESLA_T4", "count": "2"}
    assert ti["masterConfig"]["diskConfig"] == {"bootDiskType": "pd-ssd", "bootDiskSizeGb": 200}


def test_dry_run_needs_no_config_file(workdir: Path) -> None:
    proc = mlsubmit(
        workdir,
        "training", "flags_only", "--region", "europe-west4", "--runtime-version", "2.11",
        "--module-name", "trainer.task", "--packages", "gs://my-bucket/t.tar.gz", "--scale-tier", "custom",
        "--master-machine-type", "n1-standard-4", "--worker-count", "3", "--worker-machine-type", "n1-standard-4",
        "--dry-run", "--format", "json",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    body = json.loads(proc.stdout)
    assert body["trainingInput"]["workerCount"] == "3"
    assert body["trainingInput"]["scaleTier"] == "CUSTOM"


def test_invalid_job_exits_2_without_a_traceback(workdir: Path) -> None:
    (workdir / "bad.yaml").write_text(
        "trainingInput:\n  scaleTeir: CUSTOM\n  workerCount: many\n  jobDir: /tmp/out\n", encoding="utf-8"
    )
    proc = mlsubmit(workdir, "training", "my_job", "--config", "bad.yaml", "--dry-run", "--format", "json")
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert all(line.startswith("ERROR: ") for line in lines)
    # Schema problems and rule problems come together, each once (workerCount is not also blamed by a rule).
    assert (
        "ERROR: bad.yaml:2: $.trainingInput.scaleTeir: unknown key 'scaleTeir'; did you mean 'scaleTier'?"
        in lines
    )
    assert (
        "ERROR: bad.yaml:3: $.trainingInput.workerCount: 'many' is not valid: An int64 (sent as a JSON string)."
        in lines
    )
    assert sum("$.trainingInput.workerCount" in line for line in lines) == 1
    assert any("$.trainingInput.jobDir" in line and "/tmp/out" in line for line in lines)
    assert any("no region" in line for line in lines)
    assert lines[2].startswith("ERROR: bad.yaml:4: $.trainingInput.jobDir: '/tmp/out' is not valid")


def test_rule_violation_from_flags_exits_2(workdir: Path) -> None:
    proc = mlsubmit(
        workdir, "training", "my_job", "--config", "config.yaml", "--scale-tier", "basic", "--dry-run",
        env={"CLOUDSDK_COMPUTE_REGION": "us-central1"},
    )  # fmt: skip
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert (
        "ERROR: config.yaml:10: $.trainingInput.workerCount: workerCount needs scaleTier CUSTOM"
        in proc.stderr
    )


@pytest.mark.parametrize(
    ("args", "complaint"),
    [
        (("--epochs", "3"), "No such option '--epochs'"),
        (("extra",), "unexpected extra argument"),
    ],
    ids=["unknown-option", "extra-argument"],
)
def test_app_arguments_before_dashdash_are_a_usage_error(
    workdir: Path, args: tuple[str, ...], complaint: str
) -> None:
    proc = mlsubmit(workdir, "training", "my_job", "--config", "config.yaml", "--region", "us-central1",
                    *args, "--dry-run")  # fmt: skip
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert complaint in proc.stderr
    assert "arguments for your trainer go after `--`" in proc.stderr
    assert proc.stdout == ""
    # One line, gcloud-style, naming the command: not click's three-line usage block.
    assert len(proc.stderr.splitlines()) == 1
    assert proc.stderr.startswith("ERROR: (mlsubmit training) ")


def test_app_arguments_after_dashdash_are_passed_through(workdir: Path) -> None:
    proc = mlsubmit(workdir, "training", "my_job", "--config", "config.yaml", "--region", "us-central1",
                    "--dry-run", "--format", "json", "--", "--epochs", "3", "--dry-run", "extra")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["trainingInput"]["args"] == ["--epochs", "3", "--dry-run", "extra"]


# What a dry run of a config file must not load (issue 18, benchmarks/bench_dry_run.py): each costs the floor
# ratio a little and nothing in it needs them. decimal: the scheduling rules count integer nanoseconds;
# encodings.utf_8_sig: a BOM is dropped by hand; the backends: the --target values live in job.vocab; logging:
# set up only when a module loads it (cli.configure_logging).
NOT_FOR_A_DRY_RUN = ("decimal", "_decimal", "encodings.utf_8_sig", "mlsubmit.services.backends", "logging")


def test_a_config_file_dry_run_loads_only_what_it_needs(workdir: Path) -> None:
    """In a fresh process, as CI runs it: a file with a BOM and scheduling durations (the paths that loaded
    these) still gives the same body, and none of :data:`NOT_FOR_A_DRY_RUN` is imported."""
    (workdir / "bom.yaml").write_bytes(b"\xef\xbb\xbf" + CONFIG.encode())
    args = [
        "training",
        "j1",
        "--config",
        "bom.yaml",
        "--region",
        "us-central1",
        "--dry-run",
        "--format",
        "json",
    ]
    probe = (
        "import json, runpy, sys\n"
        f"sys.argv = ['mlsubmit', *{args!r}]\n"
        "try:\n    runpy.run_module('mlsubmit', run_name='__main__')\n"
        "except SystemExit as end:\n    assert end.code in (0, None), end.code\n"
        f"print(json.dumps(sorted(set({NOT_FOR_A_DRY_RUN!r}) & set(sys.modules))), file=sys.stderr)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(MLSUBMIT_ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=workdir, env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stderr.strip().splitlines()[-1]) == []
    body = json.loads(done.stdout)
    assert body["trainingInput"]["scheduling"] == {"maxRunningTime": "7200s"}
    assert body["labels"]["team"] == "research"
