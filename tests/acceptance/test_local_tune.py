"""`mlsubmit local tune` from the command line: real studies of real local runs (docs/local.md).

Trainers are trivial (no TensorFlow) so the whole file runs in seconds: examples/trainer_tune, which reports
with the real cloudml-hypertune package, and a few throwaway trainers written per test.
"""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.fakes.children import wait_for
from tests.fakes.cli import local_tune_args
from tests.fakes.trainers import write_trainer

REPO = Path(__file__).resolve().parents[2]
TRAINER = REPO / "examples" / "trainer_tune" / "trainer"
GRID = REPO / "examples" / "trainer_tune" / "grid.yaml"
BAYES = REPO / "examples" / "trainer_tune" / "config.yaml"

pytest.importorskip("hypertune")


def mlsubmit(
    *args: str, cwd: Path = REPO, timeout: float = 120, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run the real CLI in a subprocess, as a user would."""
    return subprocess.run(
        [sys.executable, "-m", "mlsubmit", *args],
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def tune(
    config: Path, job_dir: Path, *extra: str, trainer: Path = TRAINER
) -> subprocess.CompletedProcess[str]:
    return mlsubmit(*local_tune_args(trainer, config, job_dir, *extra))


def write_config(tmp_path: Path, hyperparameters: dict[str, Any], name: str = "tune.yaml") -> Path:
    path = tmp_path / name
    body = {"trainingInput": {"region": "us-central1", "hyperparameters": hyperparameters}}
    path.write_text(yaml.safe_dump(body))
    return path


def replicas(job_dir: Path) -> dict[str, list[dict[str, Any]]]:
    """trial id -> the records examples/trainer_tune wrote for its replicas."""
    found: dict[str, list[dict[str, Any]]] = {}
    for path in sorted(job_dir.glob("*/replica-*.json")):
        found.setdefault(path.parent.name, []).append(json.loads(path.read_text()))
    return found


def test_grid_runs_every_combination_once_and_names_the_known_optimum(tmp_path: Path) -> None:
    result = tune(GRID, tmp_path / "out", "--format", "json", "--", "--learning_rate=0.01")
    assert result.returncode == 0, result.stderr
    output = json.loads(result.stdout)
    combos = [tuple(t["hyperparameters"].values()) for t in output["trials"]]
    expected = list(itertools.product(["16", "32", "64"], ["sgd", "adam"], ["1", "2"]))
    assert sorted(combos) == sorted(expected) and len(combos) == 12
    assert output["trials"][0]["hyperparameters"] == {"units": "32", "optimizer": "adam", "layers": "2"}
    assert output["completedTrialCount"] == "12"
    assert output["isHyperparameterTuningJob"] is True
    assert output["hyperparameterMetricTag"] == "accuracy"
    first = output["trials"][0]
    assert first["finalMetric"]["trainingStep"] == "5" and first["state"] == "SUCCEEDED"
    assert first["isTrialStoppedEarly"] is False
    # Trials started in grid order (first parameter slowest), one line each for start and end.
    started = [line.split()[1] for line in result.stderr.splitlines() if " started: " in line]
    assert started[:3] == ["1", "2", "3"]
    assert "Trial 1 started: units=16 optimizer=sgd layers=1" in result.stderr
    assert result.stderr.count(" SUCCEEDED in ") == 12


def test_grid_text_output_is_a_table_sorted_by_objective(tmp_path: Path) -> None:
    result = tune(GRID, tmp_path / "out", "--", "--learning_rate=0.01")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["TRIAL", "PARAMETERS", "OBJECTIVE", "STEP", "STATE", "TIME"]
    assert lines[1].split()[:4] == ["8", "units=32", "optimizer=adam", "layers=2"]
    objectives = [float(line.split()[4]) for line in lines[1:13]]
    assert objectives == sorted(objectives, reverse=True)
    assert lines[-1].startswith("Best trial: 8 (objective 0.871875 at step 5): units=32 optimizer=adam")


def test_each_trial_gets_its_args_tf_config_trial_metric_file_and_folder(tmp_path: Path) -> None:
    out = tmp_path / "out"
    config = write_config(
        tmp_path,
        {
            "goal": "MAXIMIZE",
            "hyperparameterMetricTag": "accuracy",
            "algorithm": "RANDOM_SEARCH",
            "maxTrials": 4,
            "maxParallelTrials": 2,
            "params": [
                {
                    "parameterName": "learning_rate",
                    "type": "DOUBLE",
                    "minValue": 0.001,
                    "maxValue": 0.1,
                    "scaleType": "UNIT_REVERSE_LOG_SCALE",
                },
                {
                    "parameterName": "units",
                    "type": "INTEGER",
                    "minValue": 8,
                    "maxValue": 64,
                    "scaleType": "UNIT_LOG_SCALE",
                },
            ],
        },
    )
    result = tune(
        config,
        out,
        "--distributed",
        "--worker-count",
        "1",
        "--parameter-server-count",
        "0",
        "--seed",
        "3",
        "--",
        "--epochs",
        "3",
        "--epoch-seconds",
        "0.15",
    )
    assert result.returncode == 0, result.stderr
    found = replicas(out)
    assert sorted(found) == ["1", "2", "3", "4"]
    for trial_id, records in found.items():
        chief = next(r for r in records if r["tf_config"]["task"]["type"] == "chief")
        assert chief["tf_config"]["task"]["trial"] == trial_id
        assert chief["trial"] == trial_id
        assert chief["args"]["job_dir"] == str(out / trial_id)
        assert 0.001 <= chief["args"]["learning_rate"] <= 0.1 and 8 <= chief["args"]["units"] <= 64
        assert (out / "hypertune" / trial_id / "output.metrics").is_file()
    # Two trials ran side by side, on ports that never clashed.
    spans = {t: (min(r["start"] for r in rs), max(r["end"] for r in rs)) for t, rs in found.items()}
    ports = {
        t: {a for addrs in rs[0]["tf_config"]["cluster"].values() for a in addrs} for t, rs in found.items()
    }
    overlapping = [
        (a, b)
        for a, b in itertools.combinations(found, 2)
        if spans[a][0] < spans[b][1] and spans[b][0] < spans[a][1]
    ]
    assert overlapping, spans
    for a, b in overlapping:
        assert not ports[a] & ports[b]


def test_bayesian_study_runs_two_trials_at_a_time(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = tune(
        BAYES, out, "--seed", "7", "--format", "json", "--", "--epochs", "3", "--epoch-seconds", "0.1"
    )
    assert result.returncode == 0, result.stderr
    output = json.loads(result.stdout)
    assert len(output["trials"]) == 12
    kinds = output["trials"][0]["hyperparameters"]
    assert set(kinds) == {"learning_rate", "units", "optimizer", "layers"}
    for trial in output["trials"]:
        params = trial["hyperparameters"]
        assert 0.0001 <= float(params["learning_rate"]) <= 1.0
        assert params["units"] in ("16", "32", "64") and params["optimizer"] in ("sgd", "adam")
        assert params["layers"] in ("1", "2", "3")
    spans = sorted(
        (t["startTime"], t["endTime"]) for t in output["trials"] if t.get("startTime") and t.get("endTime")
    )
    assert any(b[0] < a[1] for a, b in itertools.pairwise(spans)), "no two trials overlapped"


def test_early_stopping_stops_a_clearly_bad_trial_and_ends_its_processes(tmp_path: Path) -> None:
    out = tmp_path / "out"
    config = write_config(
        tmp_path,
        {
            "goal": "MAXIMIZE",
            "hyperparameterMetricTag": "accuracy",
            "algorithm": "GRID_SEARCH",
            "maxTrials": 3,
            "enableTrialEarlyStopping": True,
            "params": [{"parameterName": "units", "type": "DISCRETE", "discreteValues": [30, 32, 4096]}],
        },
    )
    result = tune(
        config,
        out,
        "--format",
        "json",
        "--",
        "--learning_rate=0.01",
        "--optimizer=adam",
        "--epochs",
        "8",
        "--epoch-seconds",
        "0.2",
    )
    assert result.returncode == 0, result.stderr
    trials = {t["trialId"]: t for t in json.loads(result.stdout)["trials"]}
    assert trials["3"]["isTrialStoppedEarly"] is True
    assert int(trials["3"]["finalMetric"]["trainingStep"]) < 8
    assert not trials["1"]["isTrialStoppedEarly"] and not trials["2"]["isTrialStoppedEarly"]
    assert "Trial 3 stopped early" in result.stderr
    # Ended before its last epoch: the trainer never wrote its end-of-run record.
    assert not (out / "3" / "replica-chief-0.json").exists()
    assert (out / "1" / "replica-chief-0.json").exists()


SILENT = """\
import sys
print("trained, but forgot to report", sys.argv[1:])
"""


def test_a_trial_that_never_reports_fails_and_says_so(tmp_path: Path) -> None:
    trainer = write_trainer(tmp_path, textwrap.dedent(SILENT))
    config = write_config(
        tmp_path,
        {
            "goal": "MINIMIZE",
            "params": [{"parameterName": "x", "type": "INTEGER", "minValue": 1, "maxValue": 3}],
            "algorithm": "GRID_SEARCH",
            "maxTrials": 1,
        },
    )
    result = tune(config, tmp_path / "out", trainer=trainer)
    assert result.returncode == 1
    assert "Trial 1 FAILED" in result.stderr
    assert "ended without reporting training/hptuning/metric" in result.stderr
    assert "FAILED" in result.stdout and "Best trial: none" in result.stdout


NOT_A_NUMBER = """\
import json, os
with open(os.environ["CLOUD_ML_HP_METRIC_FILE"], "w") as f:
    f.write(json.dumps({"training/hptuning/metric": "lots", "global_step": "1"}) + "\\n")
"""


def test_a_non_number_metric_fails_the_trial_and_says_so(tmp_path: Path) -> None:
    trainer = write_trainer(tmp_path, textwrap.dedent(NOT_A_NUMBER))
    config = write_config(
        tmp_path,
        {
            "goal": "MAXIMIZE",
            "params": [{"parameterName": "x", "type": "CATEGORICAL", "categoricalValues": ["a"]}],
        },
    )
    result = tune(config, tmp_path / "out", trainer=trainer)
    assert result.returncode == 1
    assert "training/hptuning/metric = 'lots', which is not a finite number" in result.stderr


FAILING = """\
import sys
sys.exit(4)
"""


def test_max_failed_trials_ends_the_study(tmp_path: Path) -> None:
    trainer = write_trainer(tmp_path, textwrap.dedent(FAILING))
    config = write_config(
        tmp_path,
        {
            "goal": "MAXIMIZE",
            "maxTrials": 6,
            "maxFailedTrials": 2,
            "algorithm": "RANDOM_SEARCH",
            "params": [{"parameterName": "x", "type": "DOUBLE", "minValue": 0, "maxValue": 1}],
        },
    )
    result = tune(config, tmp_path / "out", "--format", "json", trainer=trainer)
    assert result.returncode == 1
    output = json.loads(result.stdout)
    assert [t["state"] for t in output["trials"]] == ["FAILED", "FAILED"]
    assert "exited with status 4" in result.stderr
    assert "ERROR: maxFailedTrials (2) reached: trial(s) 1, 2 failed; the study stopped." in result.stderr


def test_a_resumed_study_runs_only_the_missing_trials(tmp_path: Path) -> None:
    out = tmp_path / "out"
    spec = yaml.safe_load(GRID.read_text())["trainingInput"]["hyperparameters"]
    first = tune(
        write_config(tmp_path, {**spec, "maxTrials": 5}, "a.yaml"), out, "--", "--learning_rate=0.01"
    )
    assert first.returncode == 0, first.stderr
    # Trial 5 was still running when the study stopped: it runs again, with the same parameters.
    study_file = out / "mlsubmit-study.json"
    study = json.loads(study_file.read_text())
    study["trials"][4]["state"] = "RUNNING"
    study_file.write_text(json.dumps(study))

    again = tune(GRID, out, "--", "--learning_rate=0.01")
    assert again.returncode == 2
    assert "already holds a study; continue it with --resume" in again.stderr

    resumed = tune(GRID, out, "--resume", "--format", "json", "--", "--learning_rate=0.01")
    assert resumed.returncode == 0, resumed.stderr
    started = [line.split()[1] for line in resumed.stderr.splitlines() if " started: " in line]
    assert started == ["5", "6", "7", "8", "9", "10", "11", "12"]
    output = json.loads(resumed.stdout)
    combos = [tuple(t["hyperparameters"].values()) for t in output["trials"]]
    assert len(combos) == 12 and len(set(combos)) == 12
    assert "Trial 5 started: units=32 optimizer=sgd layers=1" in resumed.stderr

    # resumePreviousJobId asks for the same thing from the config file.
    by_config = tune(write_config(tmp_path, {**spec, "resumePreviousJobId": "earlier_job"}, "b.yaml"), out)
    assert by_config.returncode == 0, by_config.stderr
    assert " started: " not in by_config.stderr

    # A different search space is a different study.
    changed = {**spec, "params": spec["params"][:2]}
    refused = tune(write_config(tmp_path, changed, "c.yaml"), out, "--resume")
    assert refused.returncode == 2
    assert "params differ from the study" in refused.stderr


SLEEPER = """\
import os, sys, time
with open(os.path.join(os.environ["PID_DIR"], str(os.getpid())), "w") as f:
    f.write(os.environ["CLOUD_ML_TRIAL_ID"])
time.sleep(60)
"""


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_ctrl_c_ends_every_trials_processes(tmp_path: Path) -> None:
    trainer = write_trainer(tmp_path, textwrap.dedent(SLEEPER))
    pid_dir = tmp_path / "pids"
    pid_dir.mkdir()
    config = write_config(
        tmp_path,
        {
            "goal": "MAXIMIZE",
            "maxTrials": 4,
            "maxParallelTrials": 2,
            "algorithm": "RANDOM_SEARCH",
            "params": [{"parameterName": "x", "type": "DOUBLE", "minValue": 0, "maxValue": 1}],
        },
    )
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "mlsubmit",
            *local_tune_args(
                trainer,
                config,
                tmp_path / "out",
                "--distributed",
                "--worker-count",
                "1",
                "--parameter-server-count",
                "0",
            ),
        ],
        env={**os.environ, "PYTHONPATH": str(REPO), "PID_DIR": str(pid_dir)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    wait_for(lambda: len(list(pid_dir.iterdir())) >= 4, timeout=30)
    pids = [int(p.name) for p in pid_dir.iterdir()]
    assert len(pids) == 4  # two trials, each a chief and a worker
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 130, stderr
    assert "interrupted (SIGINT); stopped every trial. Continue the study with --resume." in stderr
    assert not [pid for pid in pids if _alive(pid)]
    study = json.loads((tmp_path / "out" / "mlsubmit-study.json").read_text())
    assert [t["state"] for t in study["trials"]] == ["CANCELLED", "CANCELLED"]


@pytest.mark.parametrize(
    ("hyperparameters", "job_dir", "message"),
    [
        (None, "out", "has no hyperparameters block"),
        (
            {
                "goal": "MAXIMIZE",
                "algorithm": "GRID_SEARCH",
                "params": [{"parameterName": "lr", "type": "DOUBLE", "minValue": 0.1, "maxValue": 1}],
            },
            "out",
            "GRID_SEARCH needs INTEGER, CATEGORICAL or DISCRETE parameters; lr is DOUBLE",
        ),
        (
            {
                "goal": "MAXIMIZE",
                "params": [{"parameterName": "x", "type": "INTEGER", "minValue": 1, "maxValue": 2}],
            },
            "gs://bucket/out",
            "local tune keeps the study and every trial's output in a local folder",
        ),
        (
            {
                "goal": "MAXIMIZE",
                "maxTrials": 2,
                "maxParallelTrials": 3,
                "params": [{"parameterName": "x", "type": "INTEGER", "minValue": 1, "maxValue": 2}],
            },
            "out",
            "maxParallelTrials (3) exceeds maxTrials (2)",
        ),
    ],
)
def test_bad_input_is_refused_before_any_trial(
    tmp_path: Path, hyperparameters: dict[str, Any] | None, job_dir: str, message: str
) -> None:
    config = tmp_path / "tune.yaml"
    ti: dict[str, Any] = {"region": "us-central1"}
    if hyperparameters:
        ti["hyperparameters"] = hyperparameters
    config.write_text(yaml.safe_dump({"trainingInput": ti}))
    target = job_dir if "://" in job_dir else str(tmp_path / job_dir)
    result = (
        tune(config, Path(target))
        if "://" not in job_dir
        else mlsubmit(*local_tune_args(TRAINER, config, job_dir))
    )
    assert result.returncode == 2, result.stderr
    assert message in result.stderr
    assert "Traceback" not in result.stderr
    assert " started: " not in result.stderr
