"""examples/ci/train.yml: its shape, and its shell steps run for real (validate and dry-run here; re-runs of
the submit step against the loopback API)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.fakes.api_server import FakeGoogleApis
from tests.fakes.lifecycle_support import PROJECT, cli_env

REPO = Path(__file__).resolve().parents[2]
WORKFLOW = REPO / "examples" / "ci" / "train.yml"
SHA = "0123456789abcdef0123456789abcdef01234567"
JOB_ID = f"train_{SHA[:12]}"

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="runs the workflow's bash steps")


def workflow() -> dict[str, Any]:
    loaded: dict[Any, Any] = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    loaded["on"] = loaded.pop(True, loaded.get("on"))  # YAML 1.1 reads the key `on` as true
    return loaded


def step(job: str, name: str) -> str:
    for item in workflow()["jobs"][job]["steps"]:
        if item.get("name") == name:
            return str(item["run"])
    raise AssertionError(f"no step {name!r} in job {job!r}")


def run_step(
    script: str, cwd: Path, extra_env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run a workflow step with bash -e as GitHub does, the workflow's env set and `mlsubmit` from this tree."""
    env = {**os.environ, **{k: str(v) for k, v in workflow()["env"].items()}, "GITHUB_SHA": SHA}
    env.update(extra_env or {})
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    shim = f'mlsubmit() {{ "{sys.executable}" -m mlsubmit "$@"; }}\n'
    return subprocess.run(
        ["bash", "-e", "-c", shim + script], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


def test_validates_every_push_and_trains_on_main_only() -> None:
    flow = workflow()
    assert "push" in flow["on"] and not (flow["on"]["push"] or {}).get("branches")
    jobs = flow["jobs"]
    assert "if" not in jobs["validate"]
    assert jobs["train"]["needs"] == "validate"
    assert jobs["train"]["if"] == "github.ref == 'refs/heads/main'"
    submit = step("train", "Submit and wait for the outcome")
    assert "--wait --cancel-on-interrupt --format json" in submit
    assert 'JOB_ID="train_${GITHUB_SHA::12}"' in submit
    assert flow["permissions"]["id-token"] == "write"


def test_validate_steps_pass_on_the_examples() -> None:
    validated = run_step(step("validate", "Validate the config file"), REPO)
    assert validated.returncode == 0, validated.stderr
    dry = run_step(
        step("validate", "Build the exact job body (nothing is uploaded or created; no credentials needed)"),
        REPO,
    )
    assert dry.returncode == 0, dry.stderr
    body = json.loads(dry.stdout)
    assert body["jobId"] == JOB_ID
    assert body["labels"] == {"commit": SHA[:12]}


@pytest.mark.parametrize(("final", "code"), [("SUCCEEDED", 0), ("FAILED", 1)])
def test_a_rerun_follows_the_commits_existing_job(
    fake_apis: FakeGoogleApis, tmp_path: Path, final: str, code: int
) -> None:
    fake_apis.script_job(JOB_ID, ["RUNNING", final], error_message="OOM")
    fake_apis.add_job({"jobId": JOB_ID, "trainingInput": {"region": "us-central1"}}, project=PROJECT)
    done = run_step(
        step("train", "Submit and wait for the outcome"),
        tmp_path,
        {**cli_env(fake_apis), "CLOUDSDK_CORE_PROJECT": PROJECT},
    )
    assert done.returncode == code, done.stderr
    assert f"job {JOB_ID} already exists for this commit; following it" in done.stdout
    job = json.loads((tmp_path / "job.json").read_text(encoding="utf-8"))
    assert (job["jobId"], job["state"]) == (JOB_ID, final)
    assert fake_apis.job_bodies == []  # nothing was submitted again
