"""gcloud 528 as the oracle for each failover attempt (docs/getting-jobs-to-start.md): for every candidate
mlsubmit tried, `gcloud ai custom-jobs create --region R --config spec.yaml` with that candidate's jobSpec sends
the same body to the same region (both against loopback servers)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.acceptance.test_training_failover import (
    JOB,
    TRAIN,
    A,
    B,
    C,
    D,
    FakeTime,
    clock,
    script_abcd,
)
from tests.fakes.api_server import VERTEX_CREATE, FakeGoogleApis
from tests.fakes.gcloud_oracle import requires_gcloud, run_gcloud_batch
from tests.fakes.lifecycle_support import run_cli

pytestmark = [requires_gcloud, pytest.mark.gcloud]
__all__ = ["clock"]  # the fake-clock fixture, shared with the failover tests

CANDIDATES = f"""\
vertex:
  failover:
    candidates:
      - region: {B}
        masterType: n1-standard-8
      - region: {C}
        scheduling: {{strategy: SPOT}}
      - region: {D}
        masterType: g2-standard-8
        masterConfig: {{acceleratorConfig: {{type: NVIDIA_L4, count: 1}}}}
trainingInput:
  scaleTier: CUSTOM
  masterType: n1-standard-4
  scheduling: {{maxRunningTime: 7200s}}
"""


@pytest.mark.timeout(120)
def test_each_attempt_body_is_what_gcloud_sends(
    fake_apis: FakeGoogleApis, clock: FakeTime, tmp_path: Path
) -> None:
    script_abcd(fake_apis)
    config = tmp_path / "config.yaml"
    config.write_text(CANDIDATES, encoding="utf-8")
    result = run_cli([*TRAIN, *JOB, "--config", str(config), "--max-queue-wait", "10m"])
    assert result.exit_code == 0, result.stderr
    sent = [(r.path.split("/")[5], r.json) for r in fake_apis.requests_matching("POST", VERTEX_CREATE)]
    assert [region for region, _ in sent] == [A, B, C, D]
    commands, dirs = [], []
    for index, (region, body) in enumerate(sent):
        where = tmp_path / f"attempt{index}"
        where.mkdir()
        (where / "spec.yaml").write_text(yaml.safe_dump(body["jobSpec"]), encoding="utf-8")
        labels = ",".join(f"{k}={v}" for k, v in body["labels"].items())
        commands.append(
            ["ai", "custom-jobs", "create", f"--region={region}", f"--display-name={body['displayName']}",
             f"--labels={labels}", "--config=spec.yaml"]
        )  # fmt: skip
        dirs.append(where)
    with FakeGoogleApis() as oracle_server:
        runs = run_gcloud_batch(commands, oracle_server, cwd=dirs)
    for (region, ours), run in zip(sent, runs, strict=True):
        assert run.returncode == 0, run.stderr
        (request,) = [r for r in run.requests if r.method == "POST"]
        assert request.path.split("/")[5] == region
        theirs: dict[str, Any] = request.json
        assert ours == theirs, region
