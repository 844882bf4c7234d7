"""Parity with the reference: for command lines that need no upload, the body `--dry-run --format
json` prints equals, in meaning, the body the real gcloud 528 sends to a loopback recorder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.fakes.api_server import FakeGoogleApis
from tests.fakes.cli import run_cli
from tests.fakes.compare import normalize_job_body
from tests.fakes.early import EARLY_WORKERS, Start, early
from tests.fakes.gcloud_oracle import requires_gcloud, run_gcloud_batch

pytestmark = [requires_gcloud, pytest.mark.gcloud]

CUSTOM_CONFIG = """\
jobId: ignored_by_both
labels:
  team: research
trainingInput:
  scaleTier: CUSTOM
  runtimeVersion: "2.11"
  pythonVersion: "3.7"
  masterType: n1-standard-8
  masterConfig:
    diskConfig: {bootDiskType: pd-standard, bootDiskSizeGb: 150}
  workerType: n1-standard-8
  workerCount: 2
  evaluatorType: n1-standard-4
  evaluatorCount: 1
  scheduling: {maxRunningTime: 7200s, priority: 5}
  args: [--from-file, "1"]
"""

HP_CONFIG = """\
trainingInput:
  runtimeVersion: "2.11"
  hyperparameters:
    goal: MINIMIZE
    hyperparameterMetricTag: loss
    maxTrials: 6
    maxParallelTrials: 2
    params:
      - {parameterName: lr, type: DOUBLE, minValue: 0.001, maxValue: 0.5, scaleType: UNIT_LOG_SCALE}
      - {parameterName: depth, type: INTEGER, minValue: 2, maxValue: 8}
      - {parameterName: opt, type: CATEGORICAL, categoricalValues: [adam, sgd]}
      - {parameterName: batch, type: DISCRETE, discreteValues: [16, 32, 64]}
"""

PKG = ["--packages", "gs://parity-bucket/trainer-0.0.0.tar.gz,gs://parity-bucket/dep-1.0.tar.gz"]
MODULE = ["--module-name", "trainer.task"]

# (case id, job id, flags after the job id). Every case passes --region (gcloud ignores the file's region).
CASES: list[tuple[str, str, list[str]]] = [
    ("packages_and_args", "p_basic", [*PKG, *MODULE, "--runtime-version", "2.11", "--", "--epochs", "3"]),
    (
        "custom_container",
        "p_container",
        [
            "--scale-tier",
            "custom",
            "--master-machine-type",
            "n1-standard-4",
            "--master-image-uri",
            "gcr.io/parity/trainer:1",
            "--worker-count",
            "2",
            "--worker-machine-type",
            "n1-standard-4",
            "--worker-image-uri",
            "gcr.io/parity/worker:1",
            "--use-chief-in-tf-config",
            "true",
            "--",
            "--steps",
            "10",
        ],
    ),
    (
        "accelerators",
        "p_accel",
        [
            *PKG,
            *MODULE,
            "--runtime-version",
            "2.11",
            "--scale-tier",
            "CUSTOM",
            "--master-machine-type",
            "n1-standard-8",
            "--master-accelerator",
            "type=nvidia-tesla-t4,count=2",
            "--worker-count",
            "3",
            "--worker-machine-type",
            "n1-standard-8",
            "--worker-accelerator",
            "count=1,type=nvidia-tesla-v100",
            "--parameter-server-count",
            "1",
            "--parameter-server-machine-type",
            "n1-highmem-8",
        ],
    ),
    (
        "config_overridden_by_flags",
        "p_config",
        [
            "--config",
            "custom.yaml",
            *PKG,
            *MODULE,
            "--worker-count",
            "4",
            "--worker-machine-type",
            "n1-standard-16",
            "--master-accelerator",
            "type=nvidia-tesla-p100,count=1",
            "--runtime-version",
            "2.8",
        ],
    ),
    ("config_args_kept_without_dashdash", "p_config_args", ["--config", "custom.yaml", *PKG, *MODULE]),
    (
        "hyperparameters",
        "p_hp",
        ["--config", "hp.yaml", *PKG, *MODULE, "--scale-tier", "basic-gpu", "--python-version", "3.7"],
    ),
    (
        "kms_parts",
        "p_kms",
        [
            *PKG,
            *MODULE,
            "--runtime-version",
            "2.11",
            "--kms-key",
            "mykey",
            "--kms-keyring",
            "ring",
            "--kms-location",
            "us-central1",
            "--kms-project",
            "keyproj",
        ],
    ),
    (
        "kms_full_name",
        "p_kms_full",
        [
            *PKG,
            *MODULE,
            "--runtime-version",
            "2.11",
            "--kms-key",
            "projects/kp/locations/global/keyRings/r/cryptoKeys/k",
        ],
    ),
    (
        "labels_replace_file_labels",
        "p_labels",
        ["--config", "custom.yaml", *PKG, *MODULE, "--labels", "env=prod,owner=ml-team"],
    ),
    (
        "job_dir_service_account_tier",
        "p_misc",
        [
            *PKG,
            *MODULE,
            "--runtime-version",
            "2.11",
            "--python-version",
            "3.7",
            "--scale-tier",
            "standard-1",
            "--job-dir",
            "gs://parity-bucket/out/run1",
            "--service-account",
            "trainer@parity.iam.gserviceaccount.com",
            "--",
            "--lr",
            "0.1",
        ],
    ),
]


def write_configs(d: Path) -> Path:
    (d / "custom.yaml").write_text(CUSTOM_CONFIG)
    (d / "hp.yaml").write_text(HP_CONFIG)
    return d


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_configs(tmp_path_factory.mktemp("parity"))


@early
def dry_run_gcloud_bodies(start: Start) -> dict[str, dict]:
    """Every case through the real gcloud (one batch, started before the first test: tests/fakes/early.py), in a
    folder of its own holding the same configs; the body each one sent."""
    with FakeGoogleApis(project="parityproj") as server:
        commands = [
            ["ai-platform", "jobs", "submit", "training", job, "--region", "us-central1", *flags]
            for _case, job, flags in CASES
        ]
        cwd = write_configs(start.tmp.mktemp("parity-gcloud"))
        runs = run_gcloud_batch(commands, server, cwd=cwd, workers=EARLY_WORKERS, base_env=start.env)
    bodies = {}
    for (case, _job, _flags), run in zip(CASES, runs, strict=True):
        assert run.returncode == 0, f"{case}: gcloud failed: {run.stderr}"
        assert len(run.job_bodies) == 1, case
        bodies[case] = run.job_bodies[0]
    return bodies


@pytest.fixture(scope="module")
def gcloud_bodies(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    return dry_run_gcloud_bodies.result(tmp_path_factory)


@pytest.mark.parametrize(("case", "job", "flags"), CASES, ids=[c[0] for c in CASES])
def test_dry_run_body_equals_gcloud_body(
    case: str,
    job: str,
    flags: list[str],
    workdir: Path,
    gcloud_bodies: dict[str, dict],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(workdir)
    monkeypatch.setenv("CLOUDSDK_CORE_PROJECT", "parityproj")
    result = run_cli(["training", job, "--region", "us-central1", "--dry-run", "--format", "json", *flags])
    assert result.exit_code == 0, result.output
    ours = json.loads(result.stdout)
    assert normalize_job_body(ours) == normalize_job_body(gcloud_bodies[case])


def test_int64_fields_are_strings_like_the_api(workdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(workdir)
    result = run_cli(
        [
            "training",
            "p_ints",
            "--region",
            "us-central1",
            "--config",
            "custom.yaml",
            *PKG,
            *MODULE,
            "--master-accelerator",
            "type=nvidia-tesla-t4,count=2",
            "--dry-run",
            "--format",
            "json",
        ],
    )
    assert result.exit_code == 0, result.output
    ti = json.loads(result.stdout)["trainingInput"]
    assert ti["workerCount"] == "2" and ti["evaluatorCount"] == "1"
    assert ti["masterConfig"]["acceleratorConfig"]["count"] == "2"
    assert ti["masterConfig"]["diskConfig"] == {"bootDiskType": "pd-standard", "bootDiskSizeGb": 150}


def test_recorder_sees_a_difference(gcloud_bodies: dict[str, dict]) -> None:
    """The comparison is not vacuous: a changed field makes the normalised bodies differ."""
    body = json.loads(json.dumps(gcloud_bodies["accelerators"]))
    body["trainingInput"]["workerCount"] = "4"
    assert normalize_job_body(body) != normalize_job_body(gcloud_bodies["accelerators"])
