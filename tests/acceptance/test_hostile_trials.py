"""Trials are untrusted programs, and a study's own file is input too (docs/local.md, docs/security.md).

A trainer may write anything to its metric file (huge integers, ``inf``/``nan``, strings, deep JSON, megabytes,
a FIFO, a symlink to ``/dev/zero``): that trial fails with the reason, the study goes on, and its file stays
consistent. The study file read by ``--resume`` may have been truncated, replaced or grown: one line saying how
to recover, exit 2, never a hang nor a traceback. Two runners of one study at once: the second refuses.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.fakes.children import reaped, wait_for
from tests.fakes.cli import local_tune_args
from tests.fakes.trainers import write_trainer

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="FIFOs and /dev/zero (Linux)")

# Trial 1 does what HOSTILE says to its metric file; every other trial reports a good value.
TASK = """\
import json, os, sys, time
path = os.environ["CLOUD_ML_HP_METRIC_FILE"]
trial = os.environ["CLOUD_ML_TRIAL_ID"]
os.makedirs(os.path.dirname(path), exist_ok=True)
def line(value):
    return json.dumps({"global_step": "1", "trial": trial, "loss": value}) + "\\n"
SLEEP = float(os.environ.get("TRIAL_SLEEP", "0"))
if trial != "1":
    time.sleep(SLEEP)
    open(path, "w").write(line("0.5"))
    sys.exit(0)
HOSTILE
"""

HOSTILE = {
    "a 100000-digit integer": 'open(path, "w").write(\'{"global_step": "1", "loss": \' + "9" * 100000 + "}\\n")',
    "a 4000-digit integer": 'open(path, "w").write(\'{"global_step": "1", "loss": \' + "9" * 4000 + "}\\n")',
    "a 4000-digit step": 'open(path, "w").write(\'{"loss": "0.1", "global_step": \' + "9" * 4000 + "}\\n")',
    "an infinite step": 'open(path, "w").write(\'{"loss": "0.1", "global_step": "1e999"}\\n\')',
    "inf": 'open(path, "w").write(line("inf"))',
    "nan literal": 'open(path, "w").write(\'{"global_step": 1, "loss": NaN}\\n\')',
    "a string": 'open(path, "w").write(line("fast"))',
    "deep json": 'open(path, "w").write("[" * 100000 + "]" * 100000 + "\\n")',
    "deep json object": 'open(path, "w").write(\'{"loss": \' + "[" * 100000 + "]" * 100000 + "}\\n")',
    "megabytes": 'open(path, "w").write("x" * (8 << 20))',
    "one long line": 'open(path, "w").write(line("0.1")[:-2] + " " * (4 << 20) + "}\\n")',
    "fifo": "os.mkfifo(path)",
    "fifo kept open": "os.mkfifo(path); time.sleep(0.2)",
    "dev zero": 'os.symlink("/dev/zero", path)',
    "directory": "os.mkdir(path)",
}


def _config(tmp_path: Path, **extra: Any) -> Path:
    hyper = {
        "goal": "MINIMIZE",
        "hyperparameterMetricTag": "loss",
        "algorithm": "GRID_SEARCH",
        "maxTrials": 2,
        "maxParallelTrials": 1,
        "params": [{"parameterName": "units", "type": "DISCRETE", "discreteValues": [1, 2]}],
        **extra,
    }
    path = tmp_path / "tune.yaml"
    path.write_text(yaml.safe_dump({"trainingInput": {"region": "us-central1", "hyperparameters": hyper}}))
    return path


def _trainer(tmp_path: Path, hostile: str) -> Path:
    return write_trainer(tmp_path, TASK.replace("HOSTILE", hostile))


def _argv(trainer: Path, config: Path, job_dir: Path, *extra: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "mlsubmit",
        *local_tune_args(trainer, config, job_dir, "--format", "json", *extra),
    ]


def _env(**more: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO), **more}


def _tune(trainer: Path, config: Path, job_dir: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        _argv(trainer, config, job_dir, *extra), env=_env(), capture_output=True, text=True, timeout=40
    )


# --- class 2: a trial's metric file --------------------------------------------------------------------------


@pytest.mark.timeout(60)
@pytest.mark.parametrize("hostile", list(HOSTILE), ids=list(HOSTILE))
def test_a_hostile_metric_file_fails_that_trial_and_the_study_goes_on(tmp_path: Path, hostile: str) -> None:
    out = tmp_path / "out"
    result = _tune(_trainer(tmp_path, HOSTILE[hostile]), _config(tmp_path), out)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "Traceback" not in result.stderr
    trials = {t["trialId"]: t for t in json.loads(result.stdout)["trials"]}
    assert trials["1"]["state"] == "FAILED"
    assert any(word in trials["1"]["errorMessage"] for word in ("metric file", "loss", "global_step"))
    assert len(trials["1"]["errorMessage"]) < 400  # the reason, not the file's content
    assert trials["2"]["state"] == "SUCCEEDED" and trials["2"]["finalMetric"]["objectiveValue"] == 0.5
    # The study file stays consistent: it reads back as JSON and --resume has nothing left to run.
    kept = json.loads((out / "mlsubmit-study.json").read_text())
    assert [t["state"] for t in kept["trials"]] == ["FAILED", "SUCCEEDED"]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("hostile", ["fifo", "dev zero"])
def test_a_hostile_metric_file_read_for_early_stopping_never_blocks_a_signal(
    tmp_path: Path, hostile: str
) -> None:
    # Trial 1 turns its metric file into a FIFO (or /dev/zero) and keeps running: the scheduler reads it for
    # early stopping while the trial runs; SIGTERM must still end the study at once.
    source = HOSTILE[hostile] + "; print('hostile ready', flush=True); time.sleep(60)"
    config = _config(tmp_path, enableTrialEarlyStopping=True)
    metric = tmp_path / "out" / "hypertune" / "1" / "output.metrics"
    with reaped(
        subprocess.Popen(
            _argv(_trainer(tmp_path, source), config, tmp_path / "out"),
            env=_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
    ) as proc:
        wait_for(lambda: metric.is_symlink() or metric.exists(), timeout=20)
        time.sleep(0.5)  # several scheduler rounds read it
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=15)
    assert proc.returncode == 130, err[-2000:]
    assert "Traceback" not in err


# --- class 1: the study file read by --resume ---------------------------------------------------------------

STUDY = {
    "truncated": lambda p: p.write_bytes(p.read_bytes()[: len(p.read_bytes()) // 2]),
    "a list": lambda p: p.write_text("[]"),
    "trials not a list": lambda p: p.write_text(_edit(p, trials={"a": 1})),
    "a trial with unknown keys": lambda p: p.write_text(_edit(p, trials=[{"trial_id": "1", "x": 1}])),
    "a trial of the wrong types": lambda p: p.write_text(
        _edit(p, trials=[{"trial_id": 1, "point": [], "state": "SUCCEEDED", "objective": "high"}])
    ),
    "a trial id that is not a number": lambda p: p.write_text(
        _edit(p, trials=[{"trial_id": "../x", "point": {"units": 1}, "state": "QUEUED"}])
    ),
    "hyperparameters not an object": lambda p: p.write_text(_edit(p, hyperparameters=[1])),
    "deeply nested": lambda p: p.write_text('{"version": 1, "trials": ' + "[" * 200000 + "]" * 200000 + "}"),
    "huge": lambda p: p.write_bytes(b" " * (64 << 20)),
    "a fifo": lambda p: (p.unlink(), os.mkfifo(p)),
    "dev zero": lambda p: (p.unlink(), p.symlink_to("/dev/zero")),
    "a directory": lambda p: (p.unlink(), p.mkdir()),
    "not utf-8": lambda p: p.write_bytes(b'{"version": 1, "studyId": "\xff\xfe"}'),
}


def _edit(path: Path, **changes: Any) -> str:
    return json.dumps({**json.loads(path.read_text()), **changes})


@pytest.fixture(scope="module")
def finished_study(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """A study of two trials whose trial 1 failed: trainer, config and the kept study file's bytes."""
    tmp_path = tmp_path_factory.mktemp("study")
    trainer, config = _trainer(tmp_path, HOSTILE["a string"]), _config(tmp_path)
    result = _tune(trainer, config, tmp_path / "out")
    assert result.returncode == 0, result.stderr
    return trainer, config, tmp_path / "out" / "mlsubmit-study.json"


@pytest.mark.timeout(60)
@pytest.mark.parametrize("damage", list(STUDY), ids=list(STUDY))
def test_a_damaged_study_file_is_refused_with_how_to_recover(
    finished_study: tuple[Path, Path, Path], tmp_path: Path, damage: str
) -> None:
    trainer, config, kept = finished_study
    out = tmp_path / "out"
    out.mkdir()
    study = out / "mlsubmit-study.json"
    study.write_bytes(kept.read_bytes())
    STUDY[damage](study)
    result = _tune(trainer, config, out, "--resume")
    assert result.returncode == 2, (result.returncode, result.stderr[-2000:])
    assert "Traceback" not in result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith("ERROR:")]
    assert len(lines) == 1 and "mlsubmit-study.json" in lines[0], result.stderr[-2000:]
    assert "remove" in lines[0] or "move" in lines[0]
    assert len(lines[0]) < 600
    assert not (out / "1").exists() and not (out / "2").exists()  # no trial ran


# --- class 3: one study, one runner ----------------------------------------------------------------------------


@pytest.mark.timeout(60)
@pytest.mark.parametrize("resume_second", [True, False], ids=["resume", "fresh"])
def test_a_second_runner_of_the_same_study_refuses_while_the_first_runs(
    tmp_path: Path, resume_second: bool
) -> None:
    # The first runner's trial 1 runs until the test releases it, after the second runner has been refused.
    release = tmp_path / "release"
    hold = 'while not os.path.exists(os.environ["RELEASE"]):\n    time.sleep(0.05)\n'
    trainer = _trainer(tmp_path, hold + 'open(path, "w").write(line("0.7"))')
    config, out = _config(tmp_path), tmp_path / "out"
    with reaped(
        subprocess.Popen(
            _argv(trainer, config, out),
            env=_env(RELEASE=str(release)),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
    ) as first:
        wait_for((out / "mlsubmit-study.json").exists, timeout=20)
        extra = ("--resume",) if resume_second else ()
        second = _tune(trainer, config, out, *extra)
        assert second.returncode == 2, second.stderr[-2000:]
        assert "Traceback" not in second.stderr
        assert "another mlsubmit" in second.stderr and str(first.pid) in second.stderr, second.stderr
        release.touch()
        out_first, err_first = first.communicate(timeout=30)
    assert first.returncode == 0, err_first[-2000:]
    trials = json.loads(out_first)["trials"]
    assert sorted(t["trialId"] for t in trials) == ["1", "2"]
    assert all(t["state"] == "SUCCEEDED" for t in trials)


@pytest.mark.timeout(60)
def test_the_lock_of_a_killed_runner_is_taken_over(tmp_path: Path) -> None:
    trainer = _trainer(tmp_path, "time.sleep(30)")
    config, out = _config(tmp_path), tmp_path / "out"
    first = subprocess.Popen(
        _argv(trainer, config, out), env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    wait_for((out / "1").exists, timeout=20)
    first.kill()  # kill -9: no chance to release anything
    first.wait()
    time.sleep(0.5)  # its keeper ends the trial
    (trainer / "task.py").write_text(TASK.replace("HOSTILE", 'open(path, "w").write(line("0.9"))'))
    result = _tune(trainer, config, out, "--resume")
    assert result.returncode == 0, result.stderr[-2000:]
    trials = {t["trialId"]: t for t in json.loads(result.stdout)["trials"]}
    assert trials["1"]["state"] == "SUCCEEDED" and trials["1"]["finalMetric"]["objectiveValue"] == 0.9
