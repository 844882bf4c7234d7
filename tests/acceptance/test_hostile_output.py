"""Every byte mlsubmit prints is safe and exact (docs/security.md).

``--format json`` and ``yaml`` stay valid and read back to exactly what the service (or the user) put in a
string, whatever it holds: DEL, C1 controls, lone surrogates, NUL, bidi marks, escape sequences. They are
escaped, never rewritten. Human output (``jobs list``, ``jobs describe``, trial tables) shows none of them raw.
A dry run prints exactly the args that are sent.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.fakes.api_server import FakeGoogleApis
from tests.fakes.cli import run_cli_process
from tests.fakes.lifecycle_support import PROJECT, point_cli_at, run_cli

HOSTILE = {
    "DEL": "a\x7fb",
    "C1 CSI": "a\x9b31mred",
    "NEL": "line\x85next",
    "lone surrogate": "a\ud800b",
    "NUL": "a\x00b",
    "bidi override": "evil\u202etxt.exe",
    "escape sequence": "\x1b]0;owned\x07\x1b[2J",
    "line separator": "a\u2028b",
    "byte order mark": "\ufeffa",
}
# Never raw in any output: what a terminal or a viewer would act on.
RAW = ("\x7f", "\x9b", "\x85", "\x00", "\u202e", "\x1b", "\x07", "\u2028", "\ufeff")


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch, fake_apis: FakeGoogleApis) -> None:
    point_cli_at(monkeypatch, fake_apis)


def _job(text: str) -> dict[str, Any]:
    return {
        "jobId": "j1",
        "state": "RUNNING",
        "labels": {"owner": text},
        "trainingInput": {"region": "us-central1", "args": [text, "--x"]},
    }


def _stdout_bytes(result: Any) -> bytes:
    data: bytes = result.stdout_bytes
    data.decode("utf-8")  # strict: no lone surrogate, no invalid byte
    return data


def _no_raw(text: str) -> None:
    assert not any(c in text for c in RAW), repr(text)
    assert not any(0xD800 <= ord(c) <= 0xDFFF for c in text), repr(text)


@pytest.mark.timeout(20)
@pytest.mark.parametrize("fmt", ["json", "yaml"])
@pytest.mark.parametrize("name", list(HOSTILE))
def test_describe_json_and_yaml_read_back_exactly(fake_apis: FakeGoogleApis, fmt: str, name: str) -> None:
    fake_apis.add_job(_job(HOSTILE[name]), PROJECT)
    result = run_cli(["jobs", "describe", "j1", "--format", fmt])
    assert result.exit_code == 0, result.output
    text = _stdout_bytes(result).decode()
    _no_raw(text)
    job = json.loads(text) if fmt == "json" else yaml.safe_load(text)
    assert job["labels"] == {"owner": HOSTILE[name]}
    assert job["trainingInput"]["args"] == [HOSTILE[name], "--x"]


@pytest.mark.timeout(20)
@pytest.mark.parametrize("fmt", ["json", "yaml"])
def test_list_json_and_yaml_read_back_exactly(fake_apis: FakeGoogleApis, fmt: str) -> None:
    for n, text in enumerate(HOSTILE.values()):
        fake_apis.add_job({**_job(text), "jobId": f"j{n}"}, PROJECT)
    result = run_cli(["jobs", "list", "--format", fmt])
    assert result.exit_code == 0, result.output
    text = _stdout_bytes(result).decode()
    _no_raw(text)
    jobs = json.loads(text) if fmt == "json" else yaml.safe_load(text)
    assert [j["labels"]["owner"] for j in jobs] == list(HOSTILE.values())


@pytest.mark.timeout(20)
def test_list_text_shows_no_terminal_control(fake_apis: FakeGoogleApis) -> None:
    for n, text in enumerate(HOSTILE.values()):
        fake_apis.add_job({"jobId": f"j{n}", "state": text, "createTime": text}, PROJECT)
    result = run_cli(["jobs", "list"])
    assert result.exit_code == 0, result.output
    text = _stdout_bytes(result).decode()
    _no_raw(text)
    assert "\\x1b" in text and "\\x7f" in text  # shown, escaped


@pytest.mark.timeout(20)
def test_describe_text_shows_no_terminal_control(fake_apis: FakeGoogleApis) -> None:
    fake_apis.add_job(_job("".join(HOSTILE.values())), PROJECT)
    result = run_cli(["jobs", "describe", "j1"])
    assert result.exit_code == 0, result.output
    _no_raw(_stdout_bytes(result).decode())


@pytest.mark.timeout(20)
def test_a_tuning_job_trials_table_shows_no_terminal_control(fake_apis: FakeGoogleApis) -> None:
    hostile = "".join(HOSTILE.values())
    job = {
        "jobId": "j1",
        "state": "SUCCEEDED",
        "trainingInput": {
            "region": "us-central1",
            "hyperparameters": {"goal": "MAXIMIZE", "hyperparameterMetricTag": hostile, "maxTrials": 1},
        },
        "trainingOutput": {
            "isHyperparameterTuningJob": True,
            "completedTrialCount": "1",
            "trials": [
                {
                    "trialId": "1" + hostile,
                    "hyperparameters": {"lr" + hostile: "0.1" + hostile},
                    "finalMetric": {"trainingStep": "1", "objectiveValue": 0.5},
                    "state": "SUCCEEDED" + hostile,
                }
            ],
        },
    }
    fake_apis.add_job(job, PROJECT)
    result = run_cli(["jobs", "describe", "j1"])
    assert result.exit_code == 0, result.output
    text = _stdout_bytes(result).decode()
    _no_raw(text)
    assert "Best trial" in text


@pytest.mark.timeout(30)
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="argv bytes that are not UTF-8 (Linux)")
@pytest.mark.parametrize("fmt", ["json", "yaml"])
def test_a_dry_run_prints_exactly_the_args_that_are_sent(tmp_path: Path, fmt: str) -> None:
    # argv cannot hold NUL; a byte that is not UTF-8 arrives as a lone surrogate (PEP 383).
    args = [v for v in HOSTILE.values() if "\x00" not in v and "\ud800" not in v] + ["\udcff not utf-8"]
    result = run_cli_process(
        [
            "training", "j1", "--region", "us-central1", "--runtime-version", "2.11", "--python-version", "3.7",
            "--module-name", "trainer.task", "--packages", "gs://my-bucket/t.tar.gz", "--scale-tier", "basic",
            "--dry-run", "--format", fmt, "--", *args,
        ],
        cwd=tmp_path,
        timeout=30,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    _no_raw(result.stdout)
    body = json.loads(result.stdout) if fmt == "json" else yaml.safe_load(result.stdout)
    assert body["trainingInput"]["args"] == args
