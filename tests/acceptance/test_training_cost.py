"""`mlsubmit training` shows what a job costs and refuses one over its budget (docs/cost.md), against the
loopback ml v1 and aiplatform APIs: a refusal exits 2 before any request (the fake sees none), an under-budget
job is created as usual and its body carries no ``maxCost``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.fakes.api_server import FakeGoogleApis
from tests.fakes.lifecycle_support import parse_json, point_cli_at, run_cli

PACKAGE = ["--packages", "gs://bkt/pkgs/trainer-0.1.tar.gz", "--module-name", "trainer.task"]
T4_JOB = """\
trainingInput:
  region: us-central1
  scaleTier: CUSTOM
  masterType: n1-standard-4
  masterConfig: {acceleratorConfig: {type: NVIDIA_TESLA_T4, count: 1}}
"""


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch, fake_apis: FakeGoogleApis) -> None:
    point_cli_at(monkeypatch, fake_apis)


def train(
    tmp: Path, *args: str, config: str = T4_JOB, target: str = "vertex", env: dict[str, str] | None = None
) -> Any:
    path = tmp / "config.yaml"
    path.write_text(config, encoding="utf-8")
    extra = ["--runtime-version", "2.15"] if target == "vertex" else ["--runtime-version", "2.11"]
    argv = ["training", "my_job", "--target", target, "--config", str(path), *PACKAGE, *extra, *args]
    return run_cli(argv, env=env)


def test_dry_run_shows_one_cost_line_and_keeps_the_body_alone(tmp_path: Path) -> None:
    result = train(tmp_path, "--dry-run")
    assert result.exit_code == 0, result.stderr
    last = result.stdout.splitlines()[-1]
    assert last.startswith(
        "# Cost: $0.62099885/h; at most $104.33 in 168 h (timeout) (us-central1, on-demand"
    )
    assert "jobSpec" in yaml.safe_load(result.stdout)  # a YAML comment: the output still reads as the body
    as_json = train(tmp_path, "--dry-run", "--format", "json")
    assert "jobSpec" in parse_json(as_json) and "Cost" not in as_json.output  # unasked: the body alone


def test_dry_run_json_carries_a_cost_object_when_asked(tmp_path: Path) -> None:
    result = train(tmp_path, "--dry-run", "--format", "json", "--expected-hours", "10", "--max-cost", "200")
    assert result.exit_code == 0, result.stderr
    shown = parse_json(result)
    assert "jobSpec" in shown["job"]
    cost = shown["cost"]
    assert cost["usdPerHour"] == 0.62099885 and cost["upperBound"] == 104.33 and cost["expected"] == 6.21
    assert cost["pools"][0]["machineType"] == "n1-standard-4" and cost["pricesRead"]


@pytest.mark.parametrize("target", ["vertex", "ml"])
def test_max_cost_refuses_before_any_request(fake_apis: FakeGoogleApis, tmp_path: Path, target: str) -> None:
    result = train(tmp_path, "--max-cost", "50", target=target)
    assert result.exit_code == 2, result.output
    assert "upper bound $104.33" in result.stderr and "passes --max-cost $50.00" in result.stderr
    assert "scheduling.maxRunningTime" in result.stderr and "Spot" in result.stderr
    assert "Traceback" not in result.output
    assert fake_apis.requests == []


def test_max_cost_in_the_config_refuses_and_is_never_sent(fake_apis: FakeGoogleApis, tmp_path: Path) -> None:
    refused = train(tmp_path, config="maxCost: 10\n" + T4_JOB)
    assert refused.exit_code == 2 and "passes maxCost $10.00" in refused.stderr
    assert fake_apis.requests == []
    # a shorter timeout brings it under: 10 h x $0.62 = $6.21
    under = train(tmp_path, config="maxCost: 10\n" + T4_JOB + "  scheduling: {maxRunningTime: 36000s}\n")
    assert under.exit_code == 0, under.stderr
    (body,) = fake_apis.custom_job_bodies
    assert "maxCost" not in json.dumps(body)


def test_under_budget_ml_job_is_created(fake_apis: FakeGoogleApis, tmp_path: Path) -> None:
    result = train(tmp_path, "--max-cost", "105", target="ml")
    assert result.exit_code == 0, result.stderr
    (body,) = fake_apis.job_bodies
    assert body["jobId"] == "my_job" and "maxCost" not in body


def test_a_job_the_table_cannot_price_is_said_and_refused_under_a_budget(
    fake_apis: FakeGoogleApis, tmp_path: Path
) -> None:
    tpu = "trainingInput:\n  region: us-central1\n  scaleTier: BASIC_TPU\n"
    shown = train(tmp_path, "--dry-run", config=tpu, target="ml")
    assert (
        shown.exit_code == 0 and "Cost: not priced (scaleTier BASIC_TPU (TPU) is not priced" in shown.stdout
    )
    refused = train(tmp_path, "--max-cost", "1000", config=tpu, target="ml")
    assert refused.exit_code == 2 and "the job cannot be priced" in refused.stderr
    assert fake_apis.requests == []


def test_a_team_price_table(fake_apis: FakeGoogleApis, tmp_path: Path) -> None:
    prices = tmp_path / "prices.json"
    row = ["us-central1", "gpu:NVIDIA_TESLA_T4", "on-demand", 0.1, "2026-11-01", "contract"]
    prices.write_text(json.dumps({"format": 1, "read": "2026-11-01", "rows": [row]}))
    shown = train(tmp_path, "--dry-run", "--prices", str(prices))
    assert shown.exit_code == 0 and "Cost: $0.31849885/h" in shown.stdout  # the shipped rows fill the rest
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    result = train(tmp_path, "--max-cost", "1000", env={"MLSUBMIT_PRICES": str(bad)})
    assert result.exit_code == 2 and f"{bad}: not JSON" in result.stderr
    assert fake_apis.requests == []


def test_a_table_older_than_90_days_warns_and_never_blocks(fake_apis: FakeGoogleApis, tmp_path: Path) -> None:
    prices = tmp_path / "old.json"
    row = ["us-central1", "gpu:NVIDIA_TESLA_T4", "on-demand", 0.4025, "2025-01-01", "contract 2025"]
    prices.write_text(json.dumps({"format": 1, "read": "2025-01-01", "rows": [row]}))
    shown = train(tmp_path, "--dry-run", "--prices", str(prices), "--expected-hours", "2")
    assert shown.exit_code == 0
    assert "WARNING: the price table was read 2025-01-01" in shown.stderr and "days ago" in shown.stderr
    made = train(tmp_path, "--prices", str(prices), "--max-cost", "200")
    assert made.exit_code == 0, made.stderr
    assert "WARNING: the price table was read 2025-01-01" in made.stderr
    assert len(fake_apis.custom_job_bodies) == 1


def test_a_nan_budget_in_the_config_is_refused(fake_apis: FakeGoogleApis, tmp_path: Path) -> None:
    result = train(tmp_path, config="maxCost: .nan\n" + T4_JOB)
    assert result.exit_code == 2 and "config.yaml:1: $.maxCost: maxCost nan" in result.stderr
    assert "Traceback" not in result.output
    assert fake_apis.requests == []
