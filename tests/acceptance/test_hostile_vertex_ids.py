"""One id, one job — on Vertex too (docs/getting-jobs-to-start.md). Vertex AI has no server-side job id, so two
commands submitting one id at once would both create. The fake holds the creates until every command has sent
one, which makes the race certain (all commands pass their "is the id free?" look before any job exists); each case must end with one live job and
every other command saying the id is taken, as ml v1's 409 does. Custom and tuning jobs share one id space, and
`jobs cancel JOB` cancels the live job the id names, not an ended duplicate.
"""

from __future__ import annotations

import concurrent.futures
import subprocess
from pathlib import Path
from typing import Any

import pytest

from mlsubmit.job.vocab import JOB_ID_LABEL, job_id_label
from tests.fakes.api_server import FakeGoogleApis
from tests.fakes.cli import run_cli_process
from tests.fakes.lifecycle_support import PROJECT, cli_env, point_cli_at, run_cli

REGION = "us-central1"
REPO = Path(__file__).resolve().parents[2]
TUNE_CONFIG = REPO / "examples" / "trainer_tune" / "config.yaml"
IMAGE = "us-docker.pkg.dev/vertex-ai/training/sklearn-cpu.1-0:latest"
PACKAGE = ["--packages", "gs://bkt/pkgs/trainer-0.1.tar.gz", "--module-name", "trainer.task"]
CUSTOM = ["--executor-image-uri", IMAGE, "--job-dir", "gs://bkt/out"]
TUNING = ["--config", str(TUNE_CONFIG), "--executor-image-uri", IMAGE, "--job-dir", "gs://bkt/out"]
TAKEN = "is already taken in"
LIVE = {"JOB_STATE_QUEUED", "JOB_STATE_PENDING", "JOB_STATE_RUNNING"}


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch, fake_apis: FakeGoogleApis) -> None:
    point_cli_at(monkeypatch, fake_apis)
    fake_apis.default_custom_job_states = ["JOB_STATE_QUEUED"]  # jobs stay live until cancelled
    fake_apis.vertex_tuning.default_states = ["JOB_STATE_QUEUED"]


def argv(job: str, kind: list[str]) -> list[str]:
    return ["training", job, "--target", "vertex", "--region", REGION, *PACKAGE, *kind]


def live_jobs(server: FakeGoogleApis) -> list[dict[str, Any]]:
    every = [*server.custom_jobs.values(), *server.tuning_jobs.values()]
    return [j for j in every if j["state"] in LIVE]


def race(
    server: FakeGoogleApis, kinds: list[list[str]], job: str = "same_id"
) -> list[subprocess.CompletedProcess[str]]:
    """Run one `training` per entry of ``kinds`` at once, as separate processes, against a lagging list."""
    server.hold_vertex_creates(len(kinds))
    env = cli_env(server)
    with concurrent.futures.ThreadPoolExecutor(len(kinds)) as pool:
        futures = [pool.submit(run_cli_process, argv(job, kind), env=env, timeout=60) for kind in kinds]
        return [f.result() for f in futures]


def one_live_rest_taken(server: FakeGoogleApis, done: list[subprocess.CompletedProcess[str]]) -> None:
    winners = [d for d in done if d.returncode == 0]
    losers = [d for d in done if d.returncode != 0]
    assert len(winners) == 1, [d.stderr for d in done]
    for lost in losers:
        assert lost.returncode == 1 and TAKEN in lost.stderr and "Traceback" not in lost.stderr, lost.stderr
    (live,) = live_jobs(server)
    assert live["displayName"] == "same_id"


@pytest.mark.timeout(60)
def test_two_concurrent_custom_job_submits_leave_one_live_job(fake_apis: FakeGoogleApis) -> None:
    done = race(fake_apis, [CUSTOM, CUSTOM])
    one_live_rest_taken(fake_apis, done)
    assert (
        len(fake_apis.custom_job_bodies) == 2
    )  # both created: the newer one was cancelled by its own command


@pytest.mark.timeout(60)
def test_three_concurrent_submits_keep_the_oldest(fake_apis: FakeGoogleApis) -> None:
    done = race(fake_apis, [CUSTOM, CUSTOM, CUSTOM])
    one_live_rest_taken(fake_apis, done)
    oldest = min(fake_apis.custom_jobs.values(), key=lambda j: (j["createTime"], j["name"]))
    assert oldest["state"] in LIVE


@pytest.mark.timeout(60)
def test_a_tuning_job_and_a_custom_job_racing_for_one_id(fake_apis: FakeGoogleApis) -> None:
    done = race(fake_apis, [TUNING, CUSTOM])
    one_live_rest_taken(fake_apis, done)
    assert len(fake_apis.custom_jobs) + len(fake_apis.tuning_jobs) == 2


@pytest.mark.timeout(30)
@pytest.mark.parametrize(("seeded", "kind"), [("tuning", CUSTOM), ("custom", TUNING)])
def test_an_id_used_by_one_kind_is_taken_for_the_other(
    fake_apis: FakeGoogleApis, seeded: str, kind: list[str]
) -> None:
    resource = {"displayName": "same_id", "labels": {JOB_ID_LABEL: job_id_label("same_id")}}
    if seeded == "tuning":
        fake_apis.add_tuning_job(resource, project=PROJECT, region=REGION)
    else:
        fake_apis.add_custom_job(resource, project=PROJECT, region=REGION)
    result = run_cli(argv("same_id", kind))
    assert result.exit_code == 1 and TAKEN in result.stderr, result.stderr
    assert len(fake_apis.custom_jobs) + len(fake_apis.tuning_jobs) == 1  # nothing created


@pytest.mark.timeout(60)
def test_jobs_cancel_finds_the_live_job_beside_a_cancelled_duplicate(fake_apis: FakeGoogleApis) -> None:
    one_live_rest_taken(fake_apis, race(fake_apis, [CUSTOM, CUSTOM]))
    result = run_cli(["jobs", "cancel", "same_id", "--target", "vertex", "--region", REGION])
    assert result.exit_code == 0, result.stderr
    assert live_jobs(fake_apis) == []


@pytest.mark.timeout(60)
def test_jobs_cancel_finds_a_live_tuning_job_beside_an_ended_custom_job(fake_apis: FakeGoogleApis) -> None:
    label = {JOB_ID_LABEL: job_id_label("same_id")}
    fake_apis.add_custom_job(
        {"displayName": "same_id", "labels": label, "state": "JOB_STATE_CANCELLED"},
        project=PROJECT,
        region=REGION,
    )
    fake_apis.add_tuning_job(
        {"displayName": "same_id", "labels": label, "state": "JOB_STATE_RUNNING"},
        project=PROJECT,
        region=REGION,
    )
    result = run_cli(["jobs", "cancel", "same_id", "--target", "vertex", "--region", REGION])
    assert result.exit_code == 0, result.stderr
    assert live_jobs(fake_apis) == []
    assert len(fake_apis.requests_matching("POST", r"/hyperparameterTuningJobs/\d+(:|%3A)cancel$")) == 1


@pytest.mark.timeout(60)
def test_two_failover_runs_racing_in_two_regions_leave_one_live_job(fake_apis: FakeGoogleApis) -> None:
    """Each run creates in its own first region; the look across the candidates' regions keeps the oldest."""
    other = "europe-west4"
    for region in (REGION, other):
        fake_apis.script_region(region, ["JOB_STATE_QUEUED", "JOB_STATE_RUNNING"])
    fake_apis.hold_vertex_creates(2)
    env = cli_env(fake_apis)
    no_dir = ["--executor-image-uri", IMAGE]  # a job dir belongs to one region: none here
    runs = [
        [*argv("same_id", no_dir), "--fallback-regions", other],
        ["training", "same_id", "--target", "vertex", "--region", other, *PACKAGE, *no_dir, "--fallback-regions", REGION],
    ]  # fmt: skip
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        done = [f.result() for f in [pool.submit(run_cli_process, a, env=env, timeout=60) for a in runs]]
    one_live_rest_taken(fake_apis, done)
    assert {j["name"].split("/")[3] for j in fake_apis.custom_jobs.values()} == {REGION, other}
