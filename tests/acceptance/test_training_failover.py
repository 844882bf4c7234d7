"""`training --target vertex` with failover (docs/getting-jobs-to-start.md) against the loopback aiplatform API,
with scripted per-region outcomes and a fake clock for every wait (polls, queue limits, rounds)."""

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

import mlsubmit.follow.failover as failover_module
from tests.fakes.api_server import VERTEX_CREATE, FakeGoogleApis
from tests.fakes.cli import MLSUBMIT_ROOT
from tests.fakes.lifecycle_support import cli_env, parse_json, point_cli_at, run_cli

A, B, C, D = "us-central1", "us-east4", "europe-west4", "asia-east1"
IMAGE = "us-docker.pkg.dev/vertex-ai/training/sklearn-cpu.1-0:latest"
QUOTA = (
    "The following quota metrics exceed quota limits: aiplatform.googleapis.com/custom_model_training_cpus"
)
STOCKOUT = "Resources are insufficient in region: {region}."
LIVE = {"JOB_STATE_QUEUED", "JOB_STATE_PENDING", "JOB_STATE_RUNNING"}
TRAIN = ["training", "my_job", "--target", "vertex", "--region", A]
JOB = [
    "--packages",
    "gs://bkt/pkgs/trainer-0.1.tar.gz",
    "--module-name",
    "trainer.task",
    "--executor-image-uri",
    IMAGE,
]


class FakeTime:
    """Stands in for ``time`` in the failover loop: ``sleep`` moves the clock and is recorded."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.sleeps: list[float] = []
        self.on_sleep: Any = None

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds
        if self.on_sleep is not None:
            self.on_sleep(seconds)


class HalfRandom:
    @staticmethod
    def random() -> float:
        return 0.5  # no jitter: the round waits are the schedule's own


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch, fake_apis: FakeGoogleApis) -> FakeTime:
    point_cli_at(monkeypatch, fake_apis)
    monkeypatch.delenv("MLSUBMIT_POLL_INTERVAL")  # the default poll schedule, on the fake clock
    fake = FakeTime()
    monkeypatch.setattr(failover_module, "time", fake)
    monkeypatch.setattr(failover_module, "random", HalfRandom)
    return fake


def script_abcd(server: FakeGoogleApis) -> None:
    server.script_region(A, create_error=(429, QUOTA))
    server.script_region(
        B, ["JOB_STATE_QUEUED", "JOB_STATE_PENDING", "JOB_STATE_FAILED"], STOCKOUT.format(region=B)
    )
    server.script_region(C, ["JOB_STATE_QUEUED"])  # stays queued: the region's capacity is taken
    server.script_region(D, ["JOB_STATE_QUEUED", "JOB_STATE_PENDING", "JOB_STATE_RUNNING"])


def jobs_in(server: FakeGoogleApis, region: str) -> list[dict[str, Any]]:
    return [j for j in server.custom_jobs.values() if f"/locations/{region}/" in j["name"]]


def live(server: FakeGoogleApis) -> list[dict[str, Any]]:
    return [j for j in server.custom_jobs.values() if j["state"] in LIVE]


def create_regions(server: FakeGoogleApis) -> list[str]:
    return [r.path.split("/")[5] for r in server.requests_matching("POST", VERTEX_CREATE)]


@pytest.mark.timeout(60)
def test_quota_stockout_queue_then_running(fake_apis: FakeGoogleApis, clock: FakeTime) -> None:
    script_abcd(fake_apis)
    result = run_cli(
        [*TRAIN, *JOB, "--fallback-regions", f"{B},{C},{D}", "--max-queue-wait", "10m", "--format", "json"]
    )
    assert result.exit_code == 0, result.stderr
    job = parse_json(result)
    assert [a["region"] for a in job["attempts"]] == [A, B, C, D]
    assert [a["outcome"] for a in job["attempts"]] == ["quota", "stockout", "queued too long", "running"]
    assert "quota metrics exceed" in job["attempts"][0]["reason"]
    assert job["preflight"]["ok"] is True and job["preflight"]["checks"]  # the preflight beside the attempts
    assert job["attempts"][1]["reason"] == STOCKOUT.format(region=B)
    assert create_regions(fake_apis) == [A, B, C, D]  # A's quota answer is not retried
    (c_job,) = jobs_in(fake_apis, C)
    assert c_job["state"] in ("JOB_STATE_CANCELLING", "JOB_STATE_CANCELLED")
    (running,) = live(fake_apis)
    assert f"/locations/{D}/" in running["name"] and job["name"] == running["name"]
    # the waits: polls only (5 s growing ×1.5 up to 60 s), C cancelled once it was QUEUED for over 10 minutes
    assert max(clock.sleeps) <= 60 and sum(clock.sleeps) > 600
    queued = job["attempts"][2]
    assert queued["reason"].startswith("QUEUED for 10m") or queued["reason"].startswith("QUEUED for 11m")
    assert "Attempt: candidate 2 (europe-west4): queued too long" in result.stderr
    # later, `jobs describe` finds every attempt that made a job, by the submission's label
    described = run_cli(
        ["jobs", "describe", "my_job", "--target", "vertex", "--region", D, "--fallback-regions", f"{A},{B},{C}",
         "--format", "json"]
    )  # fmt: skip
    assert described.exit_code == 0, described.stderr
    seen = parse_json(described)
    assert seen["name"] == running["name"] and seen["state"] == "RUNNING"
    assert [(a["region"], a["outcome"]) for a in seen["attempts"]] == [
        (B, "stockout"),
        (C, "cancelled"),
        (D, "running"),
    ]


def quota_then_stockout(fake_apis: FakeGoogleApis, tmp_path: Path, budget: str) -> Path:
    """A job file with one failover candidate, B, and a failover ``budget``: A answers its create with a quota
    error and B's job stocks out; the returned file is the job's ``--config``."""
    config = tmp_path / "config.yaml"
    config.write_text(f"vertex:\n  failover:\n    budget: {budget}\n    candidates:\n      - region: {B}\n")
    fake_apis.script_region(A, create_error=(429, QUOTA))
    fake_apis.script_region(B, ["JOB_STATE_QUEUED", "JOB_STATE_FAILED"], STOCKOUT.format(region=B))
    return config


@pytest.mark.timeout(60)
def test_rounds_wait_60s_then_96s_within_the_budget(
    fake_apis: FakeGoogleApis, clock: FakeTime, tmp_path: Path
) -> None:
    config = quota_then_stockout(fake_apis, tmp_path, budget="200s")
    result = run_cli([*TRAIN, *JOB, "--config", str(config), "--format", "json"])
    assert result.exit_code == 1, result.stderr
    assert "no failover candidate could start job my_job in 3 round(s)" in result.stderr
    assert [a["outcome"] for a in parse_json(result)["attempts"]] == ["quota", "stockout"] * 3
    rounds = [s for s in clock.sleeps if s >= 60]
    assert rounds == [60.0, 96.0]  # 153.6 s more would pass the 200 s budget
    assert create_regions(fake_apis) == [A, B] * 3 and live(fake_apis) == []


@pytest.mark.timeout(60)
def test_capacity_back_in_the_second_round(
    fake_apis: FakeGoogleApis, clock: FakeTime, tmp_path: Path
) -> None:
    config = quota_then_stockout(fake_apis, tmp_path, budget="3600s")

    def capacity_returns(seconds: float) -> None:
        if seconds >= 60:  # the wait between rounds
            fake_apis.script_region(B, ["JOB_STATE_QUEUED", "JOB_STATE_RUNNING"])

    clock.on_sleep = capacity_returns
    result = run_cli([*TRAIN, *JOB, "--config", str(config), "--format", "json"])
    assert result.exit_code == 0, result.stderr
    job = parse_json(result)
    assert [a["outcome"] for a in job["attempts"]] == ["quota", "stockout", "quota", "running"]
    assert [s for s in clock.sleeps if s >= 60] == [60.0]
    assert len(live(fake_apis)) == 1


@pytest.mark.timeout(60)
def test_what_stops_does_not_move_on(fake_apis: FakeGoogleApis, clock: FakeTime) -> None:
    denied = "You do not have permission to act as service_account: 1-compute@developer.gserviceaccount.com."
    fake_apis.script_region(A, create_error=(400, denied))
    result = run_cli([*TRAIN, *JOB, "--fallback-regions", B])
    assert result.exit_code == 1 and "permission to act as" in result.stderr
    assert create_regions(fake_apis) == [A]


@pytest.mark.timeout(60)
def test_a_failure_of_the_job_itself_is_the_exit_code(fake_apis: FakeGoogleApis, clock: FakeTime) -> None:
    fake_apis.script_region(
        A, ["JOB_STATE_QUEUED", "JOB_STATE_FAILED"], "The replica workerpool0-0 exited with 1."
    )
    result = run_cli([*TRAIN, *JOB, "--fallback-regions", B, "--format", "json"])
    assert result.exit_code == 1 and "exited with 1" in result.stderr
    assert create_regions(fake_apis) == [A]
    assert parse_json(result)["attempts"][0]["outcome"] == "failed"


def test_candidates_are_checked_before_anything_is_sent(
    fake_apis: FakeGoogleApis, clock: FakeTime, tmp_path: Path
) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(
        "trainingInput:\n  jobDir: gs://us-bucket/out\n"
        f"vertex:\n  failover:\n    candidates:\n      - region: {B}\n      - region: {C}\n        masterType: n1-standard-4\n"
        "        masterConfig: {acceleratorConfig: {type: NVIDIA_L4, count: 1}}\n"
    )
    result = run_cli([*TRAIN, *JOB, "--config", str(config), "--fallback-regions", "Bad_Region"])
    assert result.exit_code == 2, result.stderr
    assert (
        f"{config}:6: $.vertex.failover.candidates[0]: failover candidate 1 ({B}): runs in {B}, but the job's jobDir"
        in result.stderr
    )
    assert f"{config}:" in result.stderr and "NVIDIA_L4" in result.stderr
    assert "--fallback-regions" in result.stderr and "'Bad_Region' is not a Vertex AI region" in result.stderr
    assert fake_apis.requests == []


@pytest.mark.timeout(60)
def test_a_rerun_after_kill_adopts_the_live_job(
    fake_apis: FakeGoogleApis, monkeypatch: pytest.MonkeyPatch
) -> None:
    """kill -9 while failover watches C's queued job; the rerun finds it by its label and does not create again."""
    script_abcd(fake_apis)
    argv = [*TRAIN, *JOB, "--fallback-regions", f"{B},{C},{D}", "--max-queue-wait", "1h"]
    env = {**os.environ, **cli_env(fake_apis), "PYTHONPATH": str(MLSUBMIT_ROOT)}
    child = subprocess.Popen(
        [sys.executable, "-m", "mlsubmit", *argv[0:]],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while not jobs_in(fake_apis, C) and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(10)
    (queued,) = jobs_in(fake_apis, C)
    fake_apis.script_custom_job(queued["name"].rsplit("/", 1)[-1], ["JOB_STATE_RUNNING"])  # capacity came
    point_cli_at(monkeypatch, fake_apis)
    result = run_cli([*argv, "--format", "json"])
    assert result.exit_code == 0, result.stderr
    job = parse_json(result)
    assert job["name"] == queued["name"] and job["attempts"][0]["reason"].startswith("adopted")
    assert create_regions(fake_apis) == [A, B, C]  # nothing created by the rerun
    assert len(live(fake_apis)) == 1
    assert json.dumps(job)  # the whole outcome is printable JSON


@pytest.mark.timeout(60)
def test_preflight_skips_candidates_whose_quota_limit_is_too_low(
    fake_apis: FakeGoogleApis, clock: FakeTime
) -> None:
    """Preflight feeds failover: a limit below the request (0 CPUs outside D) skips the candidate before any create,
    the job's own region included."""
    fake_apis.preflight.add_quota("aiplatform.googleapis.com/custom_model_training_cpus", 100, region=D)
    fake_apis.script_region(D, ["JOB_STATE_QUEUED", "JOB_STATE_RUNNING"])
    result = run_cli([*TRAIN, *JOB, "--fallback-regions", f"{B},{D}", "--format", "json"])
    assert result.exit_code == 0, result.stderr
    job = parse_json(result)
    assert [(a["region"], a["outcome"]) for a in job["attempts"]] == [
        (A, "skipped"),
        (B, "skipped"),
        (D, "running"),
    ]
    assert "limit 0" in job["attempts"][0]["reason"]
    assert create_regions(fake_apis) == [D]


@pytest.mark.timeout(60)
def test_no_preflight_means_no_quota_skip(fake_apis: FakeGoogleApis, clock: FakeTime) -> None:
    fake_apis.preflight.add_quota("aiplatform.googleapis.com/custom_model_training_cpus", 100, region=D)
    result = run_cli([*TRAIN, *JOB, "--fallback-regions", f"{B},{D}", "--no-preflight"])
    assert result.exit_code == 0, result.stderr
    assert create_regions(fake_apis) == [A]


def test_max_queue_wait_needs_candidates(fake_apis: FakeGoogleApis, clock: FakeTime) -> None:
    result = run_cli([*TRAIN, *JOB, "--max-queue-wait", "10m"])
    assert result.exit_code == 2 and "--max-queue-wait" in result.stderr
    assert fake_apis.requests == []


@pytest.mark.timeout(60)
def test_flex_start_queues_by_design(fake_apis: FakeGoogleApis, clock: FakeTime, tmp_path: Path) -> None:
    """A FLEX_START job waits under its own maxWaitDuration: --max-queue-wait does not cancel it."""
    config = tmp_path / "config.yaml"
    config.write_text(
        "trainingInput:\n  scaleTier: CUSTOM\n  masterType: g2-standard-8\n"
        "  masterConfig: {acceleratorConfig: {type: NVIDIA_L4, count: 1}}\n"
        "  scheduling: {strategy: FLEX_START, maxWaitTime: 7200s}\n"
    )
    fake_apis.script_region(A, ["JOB_STATE_QUEUED"] * 30 + ["JOB_STATE_RUNNING"])
    result = run_cli(
        [
            *TRAIN,
            *JOB,
            "--config",
            str(config),
            "--fallback-regions",
            B,
            "--max-queue-wait",
            "1m",
            "--format",
            "json",
        ]
    )
    assert result.exit_code == 0, result.stderr
    assert [a["outcome"] for a in parse_json(result)["attempts"]] == ["running"]
    assert create_regions(fake_apis) == [A] and sum(clock.sleeps) > 60


@pytest.mark.timeout(60)
def test_wait_follows_the_job_failover_settled_on(
    fake_apis: FakeGoogleApis, clock: FakeTime, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MLSUBMIT_POLL_INTERVAL", "0.01")  # `--wait` polls in real time
    fake_apis.script_region(A, create_error=(429, QUOTA))
    fake_apis.script_region(B, ["JOB_STATE_QUEUED", "JOB_STATE_RUNNING", "JOB_STATE_SUCCEEDED"])
    result = run_cli([*TRAIN, *JOB, "--fallback-regions", B, "--wait", "--format", "json"])
    assert result.exit_code == 0, result.stderr
    final = parse_json(result)
    assert final["state"] == "SUCCEEDED" and f"/locations/{B}/" in final["name"]
    assert [a["outcome"] for a in final["attempts"]] == ["quota", "running"]
    assert final["preflight"]["ok"] is True  # --wait prints the preflight beside the job too
    assert "Job [my_job] is SUCCEEDED." in result.stderr, result.stderr


@pytest.mark.timeout(60)
def test_a_tuning_job_fails_over_too(fake_apis: FakeGoogleApis, clock: FakeTime) -> None:
    tune = Path(__file__).resolve().parents[2] / "examples" / "trainer_tune" / "config.yaml"
    fake_apis.script_region(A, create_error=(429, QUOTA))
    fake_apis.script_region(B, ["JOB_STATE_QUEUED", "JOB_STATE_RUNNING"])
    result = run_cli([*TRAIN, *JOB, "--config", str(tune), "--fallback-regions", B, "--format", "json"])
    assert result.exit_code == 0, result.stderr
    assert [a["outcome"] for a in parse_json(result)["attempts"]] == ["quota", "running"]
    (stored,) = fake_apis.tuning_jobs.values()
    assert f"/locations/{B}/hyperparameterTuningJobs/" in stored["name"] and not fake_apis.custom_jobs
