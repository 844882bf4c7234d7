"""Hyperparameter rules (mlsubmit.job.hyperparameters): fixed parameters are allowed with a warning."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from mlsubmit.cli import cli
from mlsubmit.job.hyperparameters import check_hyperparameters, hyperparameter_warnings

# fmt: off
FIXED = [
    # param, refused, warned
    ({"parameterName": "lr", "type": "DOUBLE", "minValue": 0.5, "maxValue": 0.5}, False, True),
    ({"parameterName": "n", "type": "INTEGER", "minValue": 3, "maxValue": 3}, False, True),
    ({"parameterName": "n", "type": "INTEGER", "minValue": 3, "maxValue": 3.0}, False, True),
    ({"parameterName": "lr", "type": "DOUBLE", "minValue": 0.5, "maxValue": 0.25}, True, False),
    ({"parameterName": "lr", "type": "DOUBLE", "minValue": 0.25, "maxValue": 0.5}, False, False),
    ({"parameterName": "c", "type": "CATEGORICAL", "categoricalValues": ["a"]}, False, False),
]
# fmt: on


@pytest.mark.parametrize(("param", "refused", "warned"), FIXED)
def test_equal_bounds_are_a_warning_and_reversed_bounds_an_error(
    param: dict[str, object], refused: bool, warned: bool
) -> None:
    ti = {"hyperparameters": {"goal": "MAXIMIZE", "params": [param]}}
    assert bool(list(check_hyperparameters(ti))) == refused
    assert bool(list(hyperparameter_warnings(ti))) == warned


def test_fixed_parameter_runs_with_a_warning_naming_its_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("hp.yaml").write_text(
        "trainingInput:\n  hyperparameters:\n    goal: MAXIMIZE\n    params:\n"
        "    - parameterName: dropout\n      type: DOUBLE\n      minValue: 0.1\n      maxValue: 0.1\n",
        encoding="utf-8",
    )
    args = ["training", "j", "--dry-run", "--format", "json", "--config", "hp.yaml", "--region", "us-central1",
            "--runtime-version", "2.11", "--module-name", "t.task", "--packages", "gs://bkt/t.tar.gz"]  # fmt: skip
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert result.exit_code == 0, result.stderr
    params = json.loads(result.stdout)["trainingInput"]["hyperparameters"]["params"]
    assert params[0]["minValue"] == params[0]["maxValue"] == 0.1
    assert result.stderr.splitlines() == [
        "WARNING: hp.yaml:7: $.trainingInput.hyperparameters.params[0].minValue: minValue equals maxValue (0.1): "
        "every trial gets dropout=0.1, so tuning it is pointless; pass it as a fixed argument instead"
    ]
