"""Vertex AI values are checked like the rest (docs/vertex.md, docs/security.md).

Environment variable names (POSIX names: no ``=``, no newline) and values (no NUL), the metric and parameter
ids of a tuning job (aiplatform v1 ``StudySpec.MetricSpec.metricId`` / ``ParameterSpec.parameterId``: "Must not
contain whitespaces"), executor image URIs, reservation and persistent-resource names and networks, from flags
and from the file's ``vertex:`` block: each bad value exits 2 with the file:line (or the flag) before anything
is built or sent.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.fakes.api_server import FakeGoogleApis
from tests.fakes.lifecycle_support import point_cli_at, run_cli

REGION = "us-central1"
PACKAGE = ["--packages", "gs://bkt/pkgs/trainer-0.1.tar.gz", "--module-name", "trainer.task"]
BASE = """\
trainingInput:
  scaleTier: BASIC
  runtimeVersion: "2.11"
  pythonVersion: "3.7"
"""


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch, fake_apis: FakeGoogleApis) -> None:
    point_cli_at(monkeypatch, fake_apis)


def _train(tmp_path: Path, config: str, *flags: str) -> Any:
    path = tmp_path / "job.yaml"
    path.write_text(config, encoding="utf-8")
    argv = ["training", "my_job", "--target", "vertex", "--region", REGION, *PACKAGE, "--config", str(path)]
    return run_cli([*argv, *flags])


def _refused(result: Any, fake_apis: FakeGoogleApis, where: str) -> None:
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert where in result.stderr, result.stderr
    assert not fake_apis.custom_job_bodies and not fake_apis.requests


def _reservation(value: str) -> str:
    """A ``vertex:`` block asking for the specific reservation ``value`` (a YAML scalar)."""
    return (
        "vertex:\n  reservationAffinity:\n    reservationAffinityType: SPECIFIC_RESERVATION\n"
        f"    key: compute.googleapis.com/reservation-name\n    values: [{value}]\n"
    )


def _tuning(metric: str, parameter: str = "lr") -> str:
    """A tuning block with the metric id ``metric`` and one parameter ``parameter`` (YAML scalars)."""
    return (
        f"  hyperparameters:\n    goal: MAXIMIZE\n    hyperparameterMetricTag: {metric}\n    maxTrials: 2\n"
        f"    params:\n    - {{parameterName: {parameter}, type: DOUBLE, minValue: 0.01, maxValue: 0.1}}\n"
    )


FILE_VALUES = {
    "env name with a newline": ('vertex:\n  env: {"A\\nB": "1"}\n', "job.yaml:6"),
    "env name with =": ('vertex:\n  env: {"A=B": "1"}\n', "job.yaml:6"),
    "env name starting with a digit": ('vertex:\n  env: {"1A": "1"}\n', "job.yaml:6"),
    "env value with NUL": ('vertex:\n  env: {A: "x\\0y"}\n', "job.yaml:6"),
    "executor image with a space": ('vertex:\n  executorImageUri: "gcr.io/p/img latest"\n', "job.yaml:6"),
    "executor image with a newline": ('vertex:\n  executorImageUri: "gcr.io/p/img\\n"\n', "job.yaml:6"),
    "executor image with NUL": ('vertex:\n  executorImageUri: "gcr.io/p/img\\0"\n', "job.yaml:6"),
    "reservation with a newline": (_reservation('"projects/p/zones/z/reservations/r\\n"'), "job.yaml:"),
    "reservation with a space": (_reservation('"my reservation"'), "job.yaml:"),
    "network with a newline": ('  network: "projects/p/global/networks/n\\nx"\n', "job.yaml:5"),
    "network with a space": ('  network: "projects/p q/global/networks/n"\n', "job.yaml:5"),
    "metric id with a space": (_tuning("my metric"), "job.yaml:7"),
    "metric id with a tab": (_tuning('"acc\\tx"'), "job.yaml:7"),
    "parameter id with a space": (_tuning("acc", parameter="learning rate"), "job.yaml:10"),
}


@pytest.mark.timeout(20)
@pytest.mark.parametrize("case", list(FILE_VALUES), ids=list(FILE_VALUES))
def test_a_bad_vertex_value_in_the_file_is_refused_with_its_line(
    fake_apis: FakeGoogleApis, tmp_path: Path, case: str
) -> None:
    extra, where = FILE_VALUES[case]
    result = _train(tmp_path, BASE + extra)
    _refused(result, fake_apis, where)


FLAG_VALUES = {
    "env name with a newline": (["--env", "A\nB=1"], "--env"),
    "env name starting with a digit": (["--env", "1A=1"], "--env"),
    "env name empty": (["--env", "=1"], "--env"),
    "env value with NUL": (["--env", "A=x\x00y"], "--env"),
    "executor image with a space": (["--executor-image-uri", "gcr.io/p/img latest"], "--executor-image-uri"),
    "executor image with a newline": (["--executor-image-uri", "gcr.io/p/img\n"], "--executor-image-uri"),
    "reservation with a newline": (["--reservation", "r\n"], "--reservation"),
    "reservation with a space": (["--reservation", "my reservation"], "--reservation"),
    "persistent resource with a newline": (
        ["--persistent-resource-id", "pr-1\n"],
        "--persistent-resource-id",
    ),
    "network with a newline": (["--network", "projects/p/global/networks/n\nx"], "--network"),
    "network with a space": (["--network", "projects/p/global/networks/my net"], "--network"),
}


@pytest.mark.timeout(20)
@pytest.mark.parametrize("case", list(FLAG_VALUES), ids=list(FLAG_VALUES))
def test_a_bad_vertex_value_from_a_flag_is_refused_naming_the_flag(
    fake_apis: FakeGoogleApis, tmp_path: Path, case: str
) -> None:
    flags, where = FLAG_VALUES[case]
    result = _train(tmp_path, BASE, *flags)
    _refused(result, fake_apis, where)


@pytest.mark.timeout(20)
def test_good_vertex_values_still_pass(fake_apis: FakeGoogleApis, tmp_path: Path) -> None:
    result = _train(
        tmp_path,
        BASE + 'vertex:\n  env: {A_1: "x=y, z"}\n',
        "--env", "B=ünïcode value",
        "--network", "projects/p/global/networks/my-net",
        "--reservation", "projects/p/zones/us-central1-a/reservations/r-1",
        "--dry-run",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
