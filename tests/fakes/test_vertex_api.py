"""The fake aiplatform v1 customJobs collection answers googleapiclient like Vertex AI."""

from __future__ import annotations

import json
from typing import Any

import pytest
from googleapiclient.discovery import build_from_document
from googleapiclient.errors import HttpError
from googleapiclient.http import build_http

from tests.fakes.api_server import FakeGoogleApis
from tests.fakes.schema_check import discovery_json

PARENT = "projects/myproj/locations/us-central1"


@pytest.fixture(scope="module")
def document() -> str:
    return discovery_json("aiplatform.v1")


def custom_jobs(server: FakeGoogleApis, document: str) -> Any:
    client = build_from_document(document, http=build_http(), client_options={"api_endpoint": server.url})
    return client.projects().locations().customJobs()


def custom_job(name: str = "train-1", **spec: Any) -> dict[str, Any]:
    pool = {
        "machineSpec": {
            "machineType": "n1-standard-4",
            "acceleratorType": "NVIDIA_TESLA_T4",
            "acceleratorCount": 1,
        },
        "replicaCount": "1",
        "diskSpec": {"bootDiskType": "pd-ssd", "bootDiskSizeGb": 100},
        "pythonPackageSpec": {
            "executorImageUri": "us-docker.pkg.dev/vertex-ai/training/tf-cpu.2-11.py310:latest",
            "packageUris": ["gs://bkt/p.tar.gz"],
            "pythonModule": "trainer.task",
            "args": ["--epochs", "3"],
        },
    }
    job_spec = {"workerPoolSpecs": [pool], "scheduling": {"timeout": "7200s"}, **spec}
    return {"displayName": name, "labels": {"mlsubmit-job-id": name.replace("-", "_")}, "jobSpec": job_spec}


def error_of(exc: pytest.ExceptionInfo[HttpError]) -> dict[str, Any]:
    error: dict[str, Any] = json.loads(exc.value.content)["error"]
    return error


def test_create_assigns_a_numeric_id_and_name(fake_apis: FakeGoogleApis, document: str) -> None:
    api = custom_jobs(fake_apis, document)
    first = api.create(parent=PARENT, body=custom_job("a")).execute()
    second = api.create(parent=PARENT, body=custom_job("a")).execute()  # display names need not be unique
    first_id = first["name"].rsplit("/", 1)[1]
    assert first_id.isdigit()
    assert first["name"] == f"{PARENT}/customJobs/{first_id}"
    assert second["name"] != first["name"]
    assert first["state"] == "JOB_STATE_QUEUED"
    assert first["jobSpec"]["workerPoolSpecs"][0]["replicaCount"] == "1"
    assert set(fake_apis.custom_jobs) == {first_id, second["name"].rsplit("/", 1)[1]}
    assert len(fake_apis.custom_job_bodies) == 2


@pytest.mark.parametrize(
    ("mutate", "fragment"),
    [
        (lambda b: b["jobSpec"].update(bogus=1), "Unknown name \"bogus\" at 'custom_job.job_spec'"),
        (
            lambda b: b["jobSpec"]["workerPoolSpecs"][0]["machineSpec"].update(acceleratorType="TPU_V9"),
            "'custom_job.job_spec.worker_pool_specs[0].machine_spec.accelerator_type'",
        ),
        (lambda b: b.pop("displayName"), "custom_job.display_name; Message: Required field is not set"),
        (lambda b: b["jobSpec"].update(workerPoolSpecs=[]), "custom_job.job_spec.worker_pool_specs;"),
        (
            lambda b: b["jobSpec"]["workerPoolSpecs"][0].update(containerSpec={"imageUri": "gcr.io/x/y"}),
            "exactly one of container_spec and python_package_spec",
        ),
        (
            lambda b: b["jobSpec"]["workerPoolSpecs"][0]["machineSpec"].pop("machineType"),
            "worker_pool_specs[0].machine_spec.machine_type",
        ),
    ],
)
def test_invalid_custom_jobs_are_400(
    fake_apis: FakeGoogleApis, document: str, mutate: Any, fragment: str
) -> None:
    body = custom_job()
    mutate(body)
    with pytest.raises(HttpError) as exc:
        custom_jobs(fake_apis, document).create(parent=PARENT, body=body).execute()
    assert exc.value.resp.status == 400
    assert fragment in error_of(exc)["message"]
    assert fake_apis.custom_jobs == {}


def test_empty_pools_keep_positions(fake_apis: FakeGoogleApis, document: str) -> None:
    body = custom_job()
    primary = body["jobSpec"]["workerPoolSpecs"][0]
    body["jobSpec"]["workerPoolSpecs"] += [{}, {}, {**primary, "replicaCount": "1"}]
    created = custom_jobs(fake_apis, document).create(parent=PARENT, body=body).execute()
    assert [bool(p) for p in created["jobSpec"]["workerPoolSpecs"]] == [True, False, False, True]


def test_states_advance_per_get_and_cancel(fake_apis: FakeGoogleApis, document: str) -> None:
    fake_apis.script_custom_job(
        "scripted", ["JOB_STATE_QUEUED", "JOB_STATE_RUNNING", "JOB_STATE_FAILED"], "bad"
    )
    api = custom_jobs(fake_apis, document)
    name = api.create(parent=PARENT, body=custom_job("scripted")).execute()["name"]
    states = [api.get(name=name).execute() for _ in range(4)]
    assert [s["state"] for s in states] == ["JOB_STATE_QUEUED", "JOB_STATE_RUNNING"] + [
        "JOB_STATE_FAILED"
    ] * 2
    assert states[2]["error"]["message"] == "bad"

    other = api.create(parent=PARENT, body=custom_job("other")).execute()["name"]
    assert api.get(name=other).execute()["state"] == "JOB_STATE_QUEUED"
    assert api.cancel(name=other, body={}).execute() == {}
    assert [api.get(name=other).execute()["state"] for _ in range(2)] == [
        "JOB_STATE_CANCELLING",
        "JOB_STATE_CANCELLED",
    ]
    with pytest.raises(HttpError) as exc:
        api.cancel(name=other, body={}).execute()
    assert error_of(exc)["status"] == "FAILED_PRECONDITION"
    with pytest.raises(HttpError) as missing:
        api.get(name=f"{PARENT}/customJobs/42").execute()
    assert missing.value.resp.status == 404


def test_list_filters_by_label_and_display_name(fake_apis: FakeGoogleApis, document: str) -> None:
    api = custom_jobs(fake_apis, document)
    for name in ("alpha", "beta", "gamma"):
        api.create(parent=PARENT, body=custom_job(name)).execute()
    fake_apis.add_custom_job(custom_job("elsewhere"), region="europe-west4")

    def names(**kwargs: Any) -> list[str]:
        return [j["displayName"] for j in api.list(parent=PARENT, **kwargs).execute().get("customJobs", [])]

    assert names() == ["alpha", "beta", "gamma"]
    assert names(filter='labels.mlsubmit-job-id="beta"') == ["beta"]
    assert names(filter='display_name="gamma"') == ["gamma"]
    assert names(filter='display_name="alpha" OR display_name="gamma"') == ["alpha", "gamma"]
    assert names(filter='state="JOB_STATE_QUEUED" AND labels.mlsubmit-job-id="nope"') == []
    page = api.list(parent=PARENT, pageSize=2).execute()
    assert len(page["customJobs"]) == 2 and page["nextPageToken"]


def test_lost_create_answer_leaves_a_job_findable_by_label(fake_apis: FakeGoogleApis, document: str) -> None:
    fake_apis.inject("POST", r"/customJobs$", 503, after=True)
    api = custom_jobs(fake_apis, document)
    with pytest.raises(HttpError):
        api.create(parent=PARENT, body=custom_job("once")).execute()
    found = api.list(parent=PARENT, filter='labels.mlsubmit-job-id="once"').execute()["customJobs"]
    assert [j["displayName"] for j in found] == ["once"]
