"""``mlsubmit.preflight`` over the production transport and the loopback fakes: the quota check failover uses,
and answers of the wrong shape (docs/getting-jobs-to-start.md)."""

from __future__ import annotations

from typing import Any

import pytest

from mlsubmit.preflight import preflight, quota_checks
from mlsubmit.services.settings import Settings
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
