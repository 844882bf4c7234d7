"""Reading cloudml-hypertune's metric file and the median early-stopping rule."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mlsubmit.local.tune.metrics import MetricLog, should_stop


def report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, values: list[tuple[float, int]], tag: str
) -> Path:
    """Report ``values`` with the real cloudml-hypertune package, as a trainer would."""
    hypertune = pytest.importorskip("hypertune")
    path = tmp_path / "hypertune" / "output.metrics"
    monkeypatch.setenv("CLOUD_ML_HP_METRIC_FILE", str(path))
    monkeypatch.setenv("CLOUD_ML_TRIAL_ID", "3")
    hpt = hypertune.HyperTune()
    for value, step in values:
        hpt.report_hyperparameter_tuning_metric(
            hyperparameter_metric_tag=tag, metric_value=value, global_step=step
        )
    return path


def test_reports_of_the_real_package_are_read_with_their_steps(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = report(tmp_path, monkeypatch, [(0.5, 1), (0.7, 2), (0.65, 3)], "accuracy")
    log = MetricLog(str(path), "accuracy")
    log.read(final=True)
    assert log.values == {1: 0.5, 2: 0.7, 3: 0.65}
    assert log.final == (3, 0.65)  # the last measurement, not the best
    assert log.problem is None


def test_other_tags_are_not_the_metric(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = report(tmp_path, monkeypatch, [(0.5, 1)], "loss")
    log = MetricLog(str(path), "training/hptuning/metric")
    log.read(final=True)
    assert log.final is None and log.problem is None


def test_a_missing_file_is_no_report(tmp_path: Path) -> None:
    log = MetricLog(str(tmp_path / "nothing"), "m")
    log.read(final=True)
    assert log.final is None and log.problem is None


def test_a_half_written_line_waits_while_running_and_is_a_problem_at_the_end(tmp_path: Path) -> None:
    path = tmp_path / "m"
    path.write_text(json.dumps({"m": "1.5", "global_step": "1"}) + "\n" + '{"m": "2.')
    log = MetricLog(str(path), "m")
    log.read()
    assert log.values == {1: 1.5} and log.problem is None
    log.read(final=True)
    assert log.problem is not None and "line 2" in log.problem and "not JSON" in log.problem


@pytest.mark.parametrize("raw", ["lots", "nan", "inf", None, True, [1]])
def test_a_non_number_is_a_problem_that_says_so(tmp_path: Path, raw: object) -> None:
    path = tmp_path / "m"
    path.write_text(json.dumps({"m": raw, "global_step": "2"}) + "\n")
    log = MetricLog(str(path), "m")
    log.read(final=True)
    assert log.problem is not None and "not a finite number" in log.problem
    assert log.final is None


def test_a_missing_step_is_step_zero(tmp_path: Path) -> None:
    path = tmp_path / "m"
    path.write_text(json.dumps({"m": 3}) + "\n")
    log = MetricLog(str(path), "m")
    log.read(final=True)
    assert log.final == (0, 3.0)


FINISHED = [{1: 0.5, 2: 0.8}, {1: 0.6, 2: 0.9}, {1: 0.4, 2: 0.7}]


@pytest.mark.parametrize(
    ("values", "finished", "maximize", "stop"),
    [
        ({1: 0.1}, FINISHED, True, True),  # well below the median at step 1 (0.5)
        ({1: 0.5}, FINISHED, True, False),  # at the median: not strictly worse
        ({1: 0.3, 2: 0.85}, FINISHED, True, False),  # recovered by step 2
        ({1: 0.1}, FINISHED[:1], True, False),  # too few finished trials to judge
        ({}, FINISHED, True, False),  # nothing reported yet
        ({1: 0.9}, FINISHED, False, True),  # minimising: higher is worse
        ({1: 0.1}, [{5: 0.9}, {5: 0.8}], True, False),  # the others had not reported by step 1
    ],
)
def test_median_rule(
    values: dict[int, float], finished: list[dict[int, float]], maximize: bool, stop: bool
) -> None:
    assert should_stop(values, finished, maximize=maximize) is stop
