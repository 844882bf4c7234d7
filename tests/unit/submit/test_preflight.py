"""``mlsubmit.submit.preflight`` over the production transport and the loopback fakes: the quota check failover uses,
and answers of the wrong shape (docs/getting-jobs-to-start.md)."""

from __future__ import annotations

from typing import Any

import pytest

from mlsubmit.services.preflight import Check
from mlsubmit.services.preflight import quota_checks as services_quota_checks
from mlsubmit.services.settings import Settings
from mlsubmit.submit.preflight import needs_of, preflight
from tests.fakes.api_server import FakeGoogleApis
from tests.fakes.lifecycle_support import cli_env

T4 = "aiplatform.googleapis.com/custom_model_training_nvidia_t4_gpus"
COLLECTIONS = ("customJobs", "hyperparameterTuningJobs")


def candidate(count: int) -> dict[str, Any]:
    machine = {
        "machineType": "n1-standard-8",
        "acceleratorType": "NVIDIA_TESLA_T4",
        "acceleratorCount": count,
    }
    return {"jobSpec": {"workerPoolSpecs": [{"machineSpec": machine, "replicaCount": "1"}]}}


def settings_for(server: FakeGoogleApis, region: str) -> Settings:
    return Settings.from_flags(cli_env(server), target="vertex", region=region)


def quota_checks(body: dict[str, Any], settings: Settings, region: str | None = None) -> list[Check]:
    return services_quota_checks(needs_of(body), settings, region=region)


def test_quota_checks_judge_a_candidate_in_its_own_region_with_quota_reads_only(
    fake_apis: FakeGoogleApis,
) -> None:
    fake_apis.preflight.add_quota(T4, 1, region="europe-west4")
    settings = settings_for(fake_apis, "us-central1")  # the job's region; the candidates are elsewhere
    refused = quota_checks(candidate(2), settings, region="europe-west4")
    fits = quota_checks(candidate(1), settings_for(fake_apis, "europe-west4"))
    elsewhere = quota_checks(candidate(1), settings, region="us-east1")
    by_status = [
        [(c.name.split()[1], c.status) for c in checks if "nvidia" in c.name]
        for checks in (refused, fits, elsewhere)
    ]
    assert by_status == [
        [(T4, "refused")],
        [(T4, "ok")],
        [(T4, "refused")],
    ]  # us-east1: the default bucket, 0
    paths = {r.path for r in fake_apis.requests}
    assert paths == {
        "/v1beta1/projects/p/services/aiplatform.googleapis.com/consumerQuotaMetrics",
        *(f"/v1/projects/p/locations/{r}/{c}" for r in ("europe-west4", "us-east1") for c in COLLECTIONS),
    }


@pytest.mark.parametrize(
    ("path", "body"),
    [
        (r"/services/aiplatform.googleapis.com$", {"state": ["ENABLED"]}),
        (r"/consumerQuotaMetrics$", {"metrics": "all of them"}),
        (
            r"/consumerQuotaMetrics$",
            {"metrics": [{"metric": T4, "consumerQuotaLimits": [{"quotaBuckets": "x"}]}]},
        ),
        (r"/serviceAccounts/", ["a list"]),
        (r"^/storage/v1/b/out$", {"location": 7}),
    ],
)
def test_answers_of_the_wrong_shape_are_never_ok_nor_a_crash(
    fake_apis: FakeGoogleApis, path: str, body: Any
) -> None:
    fake_apis.inject("*", path, 200, times=None, body=body)
    job = candidate(1)
    job["jobSpec"].update(
        serviceAccount="a@p.iam.gserviceaccount.com", baseOutputDirectory={"outputUriPrefix": "gs://out/x"}
    )
    checks = preflight(job, settings_for(fake_apis, "us-central1"))
    touched = {
        r"/services/aiplatform.googleapis.com$": "Vertex AI API",
        r"/consumerQuotaMetrics$": f"quota {T4}",
        r"/serviceAccounts/": "service account",
        r"^/storage/v1/b/out$": "job dir bucket",
    }[path]
    (found,) = [c for c in checks if c.name.startswith(touched)]
    assert found.status != "ok", found


CPUS = "aiplatform.googleapis.com/custom_model_training_cpus"


@pytest.mark.parametrize(
    ("given", "quota_only"),
    [({}, True), ({"service_account": "missing@p.iam.gserviceaccount.com"}, False)],
)
def test_a_refusal_is_a_typed_error_carrying_its_report(
    fake_apis: FakeGoogleApis, tmp_path: Any, given: dict[str, Any], quota_only: bool
) -> None:
    """``submit.run`` tells a quota refusal (a failover skips that region) from any other by the error's type and
    the checks' kind, never by the wording of a message."""
    from mlsubmit.errors import PreflightRefused
    from mlsubmit.job.merge import TrainingFlags
    from mlsubmit.job.validate import TrainingRequest
    from mlsubmit.submit.plan import PlanRequest, plan
    from mlsubmit.submit.preflight import check

    fake_apis.preflight.add_quota(CPUS, 100, region="europe-west4")  # 0 in the job's region
    fake_apis.preflight.missing_accounts.add("missing@p.iam.gserviceaccount.com")
    flags = {"region": "us-central1", "scale_tier": "CUSTOM", "master_machine_type": "n1-standard-8"}
    request = TrainingRequest(
        flags=TrainingFlags(
            job_id="j1", given={**flags, **given, "module_name": "trainer.task", "executor_image_uri": IMAGE}
        ),
        packages=["gs://bkt/trainer-0.1.tar.gz"],
        env=cli_env(fake_apis),
    )
    planned = plan(PlanRequest(request, "vertex", executor_image_uri=IMAGE), tmp_path)
    with pytest.raises(PreflightRefused) as caught:
        check(planned, settings_for(fake_apis, "us-central1"))
    assert caught.value.quota_only is quota_only
    report = caught.value.report
    assert report is not None and report["ok"] is False
    refused = {c["name"].split()[0] for c in report["checks"] if c["status"] == "refused"}
    assert ("quota" in refused) and (refused == {"quota"}) is quota_only


IMAGE = "us-docker.pkg.dev/vertex-ai/training/sklearn-cpu.1-0:latest"
