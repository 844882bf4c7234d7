"""`submit.plan`: one validation pass for a packaged submit — the config file is read and the rules run once, and
the body carries the final package URIs of the built sdist."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mlsubmit.job import jobfile, rules, validate
from mlsubmit.job.merge import TrainingFlags
from mlsubmit.job.validate import TrainingRequest
from mlsubmit.submit import candidates
from mlsubmit.submit.plan import PlanRequest, plan
from tests.fakes.counting import count_vertex_rules

CONFIG = """\
trainingInput:
  region: us-central1
  runtimeVersion: "2.11"
  pythonVersion: "3.7"
  pythonModule: trainer.task
  scaleTier: CUSTOM
  masterType: n1-standard-4
  workerCount: 2
  workerType: n1-standard-4
"""


def test_a_packaged_plan_reads_the_config_and_runs_the_rules_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    trainer = tmp_path / "trainer"
    trainer.mkdir()
    (trainer / "__init__.py").write_text("")
    (trainer / "task.py").write_text("print('hi')\n")
    config = tmp_path / "config.yaml"
    config.write_text(CONFIG)
    calls: dict[str, int] = {"read": 0, "rules": 0}
    real_read, real_rules = jobfile.check_job_file, rules.check_job

    def counting_read(*args: Any, **kwargs: Any) -> Any:
        calls["read"] += 1
        return real_read(*args, **kwargs)

    def counting_rules(*args: Any, **kwargs: Any) -> Any:
        calls["rules"] += 1
        return real_rules(*args, **kwargs)

    monkeypatch.setattr(validate, "check_job_file", counting_read)
    monkeypatch.setattr(candidates, "check_job_file", counting_read)
    monkeypatch.setattr(validate, "check_job", counting_rules)
    request = TrainingRequest(
        flags=TrainingFlags(job_id="job_1", given={}),
        config=str(config),
        package_path=str(trainer),
        staging_bucket="gs://stage",
        env={"CLOUDSDK_CORE_PROJECT": "proj"},
    )
    planned = plan(PlanRequest(request), tmp_path / "out")
    assert calls == {"read": 1, "rules": 1}
    [uri] = planned.body["trainingInput"]["packageUris"]
    [staged] = planned.uploads
    assert uri == staged.uri and uri.startswith("gs://stage/") and uri.endswith("/trainer-0.0.0.tar.gz")
    assert "<sha256>" not in uri  # the placeholder of the validation pass is gone


def test_a_vertex_plan_runs_vertex_rules_once_and_holds_the_body_it_sends(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = count_vertex_rules(monkeypatch)
    config = tmp_path / "config.yaml"
    config.write_text(CONFIG.replace('  runtimeVersion: "2.11"\n', ""))
    request = TrainingRequest(
        flags=TrainingFlags(job_id="job_1", given={"executor_image_uri": IMAGE}),
        config=str(config),
        packages=["gs://stage/trainer-0.0.0.tar.gz"],
        env={"CLOUDSDK_CORE_PROJECT": "proj"},
    )
    planned = plan(PlanRequest(request, "vertex", executor_image_uri=IMAGE), tmp_path)
    assert len(calls) == 1
    assert planned.collection == "customJobs" and planned.service == "vertex"
    assert planned.region == "us-central1" and planned.job_id == "job_1"
    assert planned.body["displayName"] == "job_1" and "workerPoolSpecs" in planned.body["jobSpec"]
    assert planned.job["trainingInput"]["packageUris"] == ["gs://stage/trainer-0.0.0.tar.gz"]


IMAGE = "us-docker.pkg.dev/vertex-ai/training/sklearn-cpu.1-0:latest"
