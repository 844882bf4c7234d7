"""services.compare: "is this the job we sent?" for ml v1 and Vertex AI, and ml's 409 resolution with it."""

from __future__ import annotations

import json
from typing import Any

import httplib2
import pytest
from googleapiclient.errors import HttpError

from mlsubmit.errors import ApiError
from mlsubmit.services.compare import CUSTOM_JOB, ML_JOB, is_same_job, output_only_paths
from mlsubmit.services.ml import Caller, MlJobs
from mlsubmit.services.retry import RetryPolicy

SENT: dict[str, Any] = {
    "jobId": "j1",
    "labels": {"team": "ml"},
    "trainingInput": {
        "scaleTier": "CUSTOM",
        "masterType": "n1-standard-4",
        "workerCount": 2,
        "packageUris": ["gs://b/t.tar.gz"],
        "pythonModule": "trainer.task",
        "region": "us-central1",
        "runtimeVersion": "2.11",
    },
}
FILLED_BY_SERVICE: dict[str, Any] = {
    "createTime": "2026-11-24T09:00:00Z",
    "state": "QUEUED",
    "etag": "abc=",
    "jobPosition": "3",
    "trainingOutput": {"consumedMLUnits": 0.1},
}


def found(**changes: Any) -> dict[str, Any]:
    job = json.loads(json.dumps(SENT))
    job.update(FILLED_BY_SERVICE)
    job["trainingInput"]["workerCount"] = "2"  # int64 comes back as a string
    for key, value in changes.items():
        job[key] = value
    return job


def training_input(**extra: Any) -> dict[str, Any]:
    return {**found()["trainingInput"], **extra}


@pytest.mark.parametrize(
    ("job", "same"),
    [
        (found(), True),
        # service defaults do not break the compare
        (found(trainingInput=training_input(scheduling={"maxRunningTime": "604800s", "priority": 0})), True),
        (found(trainingInput=training_input(scheduling={"priority": "0"})), True),
        (found(trainingInput=training_input(enableWebAccess=False)), True),
        # a field we sent, changed
        (found(labels={"team": "other"}), False),
        (found(trainingInput=training_input(workerCount="3")), False),
        (found(trainingInput=training_input(packageUris=["gs://b/t.tar.gz", "gs://b/x.tar.gz"])), False),
        # an extra user field: someone else's job
        (found(labels={"team": "ml", "owner": "bob"}), False),
        (found(trainingInput=training_input(serviceAccount="x@p.iam.gserviceaccount.com")), False),
        (found(trainingInput=training_input(args=["--epochs", "3"])), False),
        (
            found(trainingInput=training_input(scheduling={"maxWaitTime": "60s", "maxRunningTime": "1s"})),
            True,
        ),
        (found(trainingInput=training_input(scheduling={"maxRunningTime": "1s", "other": "x"})), False),
        # a field we sent is missing
        ({k: v for k, v in found().items() if k != "labels"}, False),
    ],
    ids=[
        "same",
        "default-scheduling",
        "priority-zero-string",
        "false-is-absent",
        "changed-label",
        "changed-count",
        "longer-list",
        "extra-label",
        "extra-service-account",
        "extra-args",
        "filled-scheduling",
        "unknown-scheduling-field",
        "missing-labels",
    ],
)
def test_ml_same_job(job: dict[str, Any], same: bool) -> None:
    assert is_same_job(ML_JOB, SENT, job) is same


def test_output_only_fields_come_from_the_discovery_documents() -> None:
    ml = output_only_paths("ml", ML_JOB)
    assert {"createTime", "startTime", "endTime", "state", "errorMessage", "jobPosition"} <= ml
    assert "trainingInput" not in ml and "jobId" not in ml
    vertex = output_only_paths("aiplatform", CUSTOM_JOB)
    assert {"name", "state", "createTime", "updateTime", "error", "webAccessUris"} <= vertex
    assert "displayName" not in vertex and "labels" not in vertex


def test_vertex_same_job_ignores_what_the_service_fills() -> None:
    sent = {"displayName": "j1", "labels": {"mlsubmit_job_id": "j1"}, "jobSpec": {"workerPoolSpecs": [{}]}}
    theirs = {
        **sent,
        "name": "projects/p/locations/r/customJobs/7",
        "state": "JOB_STATE_QUEUED",
        "jobSpec": {"workerPoolSpecs": [{"diskSpec": {"bootDiskType": "pd-ssd", "bootDiskSizeGb": 100}}]},
    }
    assert is_same_job(CUSTOM_JOB, sent, theirs)
    assert not is_same_job(CUSTOM_JOB, sent, {**theirs, "encryptionSpec": {"kmsKeyName": "k"}})


class FakeMlService:
    """``projects().jobs()`` whose create answers 503 once, then 409; get returns ``stored``."""

    def __init__(self, stored: dict[str, Any]) -> None:
        self.stored = stored
        self.creates = 0

    def projects(self) -> FakeMlService:
        return self

    def jobs(self) -> FakeMlService:
        return self

    def create(self, parent: str, body: dict[str, Any]) -> Any:
        service = self

        class Request:
            def execute(self, num_retries: int = 0) -> Any:
                service.creates += 1
                status = "503" if service.creates == 1 else "409"
                raise HttpError(httplib2.Response({"status": status}), b"{}")

        return Request()

    def get(self, name: str) -> Any:
        stored = self.stored

        class Request:
            def execute(self, num_retries: int = 0) -> Any:
                return stored

        return Request()


def ml_jobs(stored: dict[str, Any]) -> tuple[MlJobs, FakeMlService]:
    service = FakeMlService(stored)
    caller = Caller(policy=RetryPolicy(initial=0.0), sleep=lambda _s: None, notify=lambda _m: None)
    return MlJobs(service, "p", caller), service


def test_a_409_after_a_retry_adopts_our_own_job_with_service_defaults() -> None:
    jobs, service = ml_jobs(found(trainingInput=training_input(scheduling={"maxRunningTime": "604800s"})))
    result = jobs.create(SENT, SENT["jobId"])
    assert result.recovered and service.creates == 2


def test_a_409_after_a_retry_does_not_adopt_a_job_with_an_extra_field() -> None:
    jobs, service = ml_jobs(found(labels={"team": "ml", "owner": "bob"}))
    with pytest.raises(ApiError, match="already exists with a different definition"):
        jobs.create(SENT, SENT["jobId"])
    assert service.creates == 2
