"""A property of failover (docs/getting-jobs-to-start.md): whatever each region answers, and whether the run
is repeated (a rerun after a crash), there are never two jobs of one submission that have not ended. Random
outcome scripts per region (hypothesis), the real CLI against the loopback aiplatform API, a fake clock."""

from __future__ import annotations

from typing import Any

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import mlsubmit.follow.failover as failover_module  # noqa: E402
from tests.acceptance.test_training_failover import IMAGE, QUOTA, STOCKOUT, FakeTime, HalfRandom  # noqa: E402
from tests.fakes.api_server import FakeGoogleApis  # noqa: E402
from tests.fakes.lifecycle_support import cli_env, run_cli  # noqa: E402

REGIONS = ("us-central1", "us-east4", "europe-west4", "asia-east1")
NOT_ENDED = {"JOB_STATE_QUEUED", "JOB_STATE_PENDING", "JOB_STATE_RUNNING", "JOB_STATE_CANCELLING"}
OUTCOMES = ("quota", "stockout", "queued", "running", "fails", "refused", "slow start")


def script(server: FakeGoogleApis, region: str, outcome: str) -> None:
    if outcome == "quota":
        server.script_region(region, create_error=(429, QUOTA))
    elif outcome == "refused":
        server.script_region(
            region,
            create_error=(
                400,
                "The Cloud Storage bucket of gs://b is in location us. It must be in the same regional location as the service location",
            ),
        )
    elif outcome == "stockout":
        server.script_region(region, ["JOB_STATE_QUEUED", "JOB_STATE_FAILED"], STOCKOUT.format(region=region))
    elif outcome == "queued":
        server.script_region(region, ["JOB_STATE_QUEUED"])
    elif outcome == "fails":
        server.script_region(region, ["JOB_STATE_PENDING", "JOB_STATE_FAILED"], "exited with 1")
    elif outcome == "slow start":
        server.script_region(region, ["JOB_STATE_QUEUED"] * 3 + ["JOB_STATE_RUNNING"])
    else:
        server.script_region(region, ["JOB_STATE_QUEUED", "JOB_STATE_RUNNING"])


def not_ended(server: FakeGoogleApis) -> list[dict[str, Any]]:
    return [j for j in server.custom_jobs.values() if j["state"] in NOT_ENDED]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    outcomes=st.lists(st.sampled_from(OUTCOMES), min_size=2, max_size=4),
    budget=st.sampled_from([0, 200, 1000]),
    queue_wait=st.sampled_from([None, "1m", "10m"]),
    reruns=st.integers(min_value=0, max_value=2),
)
@pytest.mark.timeout(120)
def test_never_two_jobs_of_one_submission_alive(
    outcomes: list[str],
    budget: int,
    queue_wait: str | None,
    reruns: int,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    regions = REGIONS[: len(outcomes)]
    config = tmp_path_factory.mktemp("cfg") / "config.yaml"
    config.write_text(f"vertex:\n  failover:\n    budget: {budget}s\n")
    with FakeGoogleApis() as server, pytest.MonkeyPatch.context() as patch:
        for name, value in cli_env(server).items():
            patch.setenv(name, value)
        patch.delenv("MLSUBMIT_POLL_INTERVAL")
        patch.setattr(failover_module, "time", FakeTime())
        patch.setattr(failover_module, "random", HalfRandom)
        for region, outcome in zip(regions, outcomes, strict=True):
            # without a queue limit a job queued for ever is followed for ever (as `jobs wait` would)
            script(server, region, "slow start" if outcome == "queued" and not queue_wait else outcome)
        original_add = server.vertex.add

        def add_checked(parent: str, resource: dict[str, Any]) -> dict[str, Any]:
            # at every create, no other job of this submission may still be going
            assert not_ended(server) == [], "a job was created while another of the submission was alive"
            return original_add(parent, resource)

        server.vertex.add = add_checked  # type: ignore[method-assign]
        argv = ["training", "sub", "--target", "vertex", "--region", regions[0], "--config", str(config)]
        argv += [
            "--packages",
            "gs://bkt/p.tar.gz",
            "--module-name",
            "trainer.task",
            "--executor-image-uri",
            IMAGE,
        ]
        argv += ["--fallback-regions", ",".join(regions[1:])]
        if queue_wait:
            argv += ["--max-queue-wait", queue_wait]
        for _run in range(1 + reruns):
            result = run_cli(argv)
            assert result.exit_code in (0, 1), result.stderr
            assert "Traceback" not in result.stderr
            assert len(not_ended(server)) <= 1, [j["name"] for j in not_ended(server)]
