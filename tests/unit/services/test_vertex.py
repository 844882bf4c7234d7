"""VertexJobs against the loopback aiplatform fake: find by label, ml-style views, exactly-once create."""

from __future__ import annotations

from typing import Any

import pytest

from mlsubmit.errors import ApiError
from mlsubmit.job.vocab import JOB_ID_LABEL
from mlsubmit.services.compare import CUSTOM_JOB, is_same_job
from mlsubmit.services.ml import Caller
from mlsubmit.services.retry import RetryPolicy
from mlsubmit.services.vertex import VertexJobs, ml_state, vertex_filter
from mlsubmit.targets.vertex import to_custom_job
from tests.fakes.api_server import VERTEX_CREATE, FakeGoogleApis
from tests.fakes.clients import production_service
from tests.fakes.jobs import job

PARENT = "projects/myproj/locations/us-central1"


def backend(server: FakeGoogleApis, notes: list[str] | None = None) -> VertexJobs:
    caller = Caller(
        policy=RetryPolicy(attempts=4),
        sleep=lambda _s: None,
        notify=(notes.append if notes is not None else None),
    )
    service = production_service("aiplatform", server.url)
    return VertexJobs(service, "myproj", "us-central1", caller)


def custom_job(job_id: str = "my_job") -> dict[str, Any]:
    return to_custom_job(job(job_id))[0]


def seed(
    server: FakeGoogleApis,
    display: str,
    label: str | None,
    state: str = "JOB_STATE_RUNNING",
    machine: str = "",
) -> str:
    spec = custom_job()["jobSpec"]
    if machine:
        spec["workerPoolSpecs"][0]["machineSpec"]["machineType"] = machine
    resource: dict[str, Any] = {"displayName": display, "state": state, "jobSpec": spec}
    if label is not None:
        resource["labels"] = {JOB_ID_LABEL: label}
    return str(server.add_custom_job(resource)["name"])


@pytest.mark.parametrize(
    ("vertex", "ml"),
    [
        ("JOB_STATE_QUEUED", "QUEUED"),
        ("JOB_STATE_PENDING", "PREPARING"),
        ("JOB_STATE_RUNNING", "RUNNING"),
        ("JOB_STATE_SUCCEEDED", "SUCCEEDED"),
        ("JOB_STATE_FAILED", "FAILED"),
        ("JOB_STATE_CANCELLING", "CANCELLING"),
        ("JOB_STATE_CANCELLED", "CANCELLED"),
        ("JOB_STATE_EXPIRED", "FAILED"),
        ("JOB_STATE_PAUSED", "QUEUED"),
        ("JOB_STATE_UPDATING", "RUNNING"),
        ("JOB_STATE_PARTIALLY_SUCCEEDED", "FAILED"),
        ("JOB_STATE_UNSPECIFIED", "STATE_UNSPECIFIED"),
        (None, "STATE_UNSPECIFIED"),
    ],
)
def test_vertex_states_map_to_ml_states(vertex: str | None, ml: str) -> None:
    assert ml_state(vertex) == ml


@pytest.mark.parametrize(
    ("ml", "vertex"),
    [
        (None, None),
        ("state=FAILED", 'state="JOB_STATE_FAILED"'),
        ('state != "preparing"', 'state!="JOB_STATE_PENDING"'),
        ("jobId=my_job AND labels.team=x", "display_name=my_job AND labels.team=x"),
        ('createTime>"2024-01-01T00:00:00Z"', 'create_time>"2024-01-01T00:00:00Z"'),
        ('state="JOB_STATE_RUNNING"', 'state="JOB_STATE_RUNNING"'),
    ],
)
def test_ml_style_filters_are_translated(ml: str | None, vertex: str | None) -> None:
    assert vertex_filter(ml) == vertex


def covers(sent: dict[str, Any], found: dict[str, Any]) -> bool:
    return is_same_job(CUSTOM_JOB, sent, found)


def test_same_job_ignores_fields_the_service_fills_and_int64_spelling() -> None:
    sent = {"jobSpec": {"workerPoolSpecs": [{"replicaCount": "2"}, {}]}, "displayName": "a"}
    found = {
        "jobSpec": {
            "workerPoolSpecs": [
                {"replicaCount": 2, "diskSpec": {"bootDiskType": "pd-ssd", "bootDiskSizeGb": 100}},
                {},
            ]
        },
        "displayName": "a",
        "state": "JOB_STATE_QUEUED",
        "name": "projects/p/locations/r/customJobs/1",
        "createTime": "2026-01-01T00:00:00Z",
    }
    assert covers(sent, found)
    assert not covers({**sent, "displayName": "b"}, found)
    assert not covers({"jobSpec": {"workerPoolSpecs": [{}]}}, found)
    assert not covers({"enableWebAccess": True}, {"enableWebAccess": "True"})
    # a user field we did not send means someone else's job
    assert not covers(sent, {**found, "labels": {"team": "x"}})
    assert not covers(sent, {**found, "jobSpec": {**found["jobSpec"], "serviceAccount": "x@y"}})


def test_create_makes_the_job_and_shows_it_ml_style(fake_apis: FakeGoogleApis) -> None:
    result = backend(fake_apis).create(custom_job(), "my_job")
    shown = result.job
    assert not result.recovered
    (stored,) = fake_apis.custom_jobs.values()
    assert stored["displayName"] == "my_job" and stored["labels"][JOB_ID_LABEL] == "my_job"
    assert shown["jobId"] == "my_job"
    assert shown["state"] == "QUEUED" and shown["vertexState"] == "JOB_STATE_QUEUED"
    assert shown["name"] == stored["name"]
    assert fake_apis.custom_job_bodies == [custom_job()]


@pytest.mark.parametrize("lose", ["503", "drop"])
def test_a_retried_create_after_a_lost_answer_makes_one_job(fake_apis: FakeGoogleApis, lose: str) -> None:
    if lose == "503":
        fake_apis.inject("POST", VERTEX_CREATE, 503, after=True)
    else:
        fake_apis.inject_drop("POST", VERTEX_CREATE, after=True)
    notes: list[str] = []
    jobs = backend(fake_apis, notes)
    result = jobs.create(custom_job(), "my_job")
    shown = result.job
    assert result.recovered
    assert len(fake_apis.custom_jobs) == 1
    assert len(fake_apis.custom_job_bodies) == 1  # the retry found the job instead of posting again
    assert shown["name"] == next(iter(fake_apis.custom_jobs.values()))["name"]
    assert any("earlier attempt created" in n for n in notes)


def test_a_create_refused_before_processing_is_simply_retried(fake_apis: FakeGoogleApis) -> None:
    fake_apis.inject("POST", VERTEX_CREATE, 503, times=2)
    jobs = backend(fake_apis)
    assert not jobs.create(custom_job(), "my_job").recovered
    assert len(fake_apis.custom_jobs) == 1
    assert len(fake_apis.custom_job_bodies) == 3


def test_a_job_id_already_in_use_is_refused_like_on_ml(fake_apis: FakeGoogleApis) -> None:
    name = seed(fake_apis, "my_job", "my_job")
    with pytest.raises(ApiError) as exc:
        backend(fake_apis).create(custom_job(), "my_job")
    assert exc.value.status == 409 and name in str(exc.value)
    assert len(fake_apis.custom_jobs) == 1


def test_a_different_job_appearing_during_retries_is_not_taken_for_ours(fake_apis: FakeGoogleApis) -> None:
    fake_apis.inject("POST", VERTEX_CREATE, 503, after=False)
    jobs = backend(fake_apis)
    original = jobs.find

    def find_with_intruder(job_id: str) -> list[dict[str, Any]]:
        if not fake_apis.custom_jobs and fake_apis.custom_job_bodies:
            seed(fake_apis, "my_job", "my_job", machine="n1-highmem-2")  # someone else takes the id meanwhile
        return original(job_id)

    jobs.find = find_with_intruder  # type: ignore[method-assign]
    with pytest.raises(ApiError, match="different Vertex AI job"):
        jobs.create(custom_job(), "my_job")
    assert len(fake_apis.custom_jobs) == 1


def test_get_accepts_the_job_id_the_numeric_id_and_the_resource_name(fake_apis: FakeGoogleApis) -> None:
    name = seed(fake_apis, "my_job", "my_job")
    number = name.rsplit("/", 1)[1]
    jobs = backend(fake_apis)
    for key in ("my_job", number, name):
        shown = jobs.get(key)
        assert shown["name"] == name and shown["jobId"] == "my_job" and shown["state"] == "RUNNING"


def test_jobs_mlsubmit_did_not_create_are_named_by_their_numeric_id(fake_apis: FakeGoogleApis) -> None:
    name = seed(fake_apis, "console run 7", None)
    assert backend(fake_apis).get(name.rsplit("/", 1)[1])["jobId"] == name.rsplit("/", 1)[1]


def test_ids_differing_only_in_case_are_told_apart_by_display_name(fake_apis: FakeGoogleApis) -> None:
    lower = seed(fake_apis, "my_job", "my_job")
    upper = seed(fake_apis, "My_Job", "my_job")
    jobs = backend(fake_apis)
    assert jobs.get("my_job")["name"] == lower
    assert jobs.get("My_Job")["name"] == upper


def test_unknown_and_ambiguous_job_ids_are_clear_errors(fake_apis: FakeGoogleApis) -> None:
    with pytest.raises(ApiError) as exc:
        backend(fake_apis).get("nope")
    assert exc.value.status == 404 and "numeric id" in str(exc.value)
    seed(fake_apis, "twice", "twice")
    seed(fake_apis, "twice", "twice")
    with pytest.raises(ApiError, match="several Vertex AI jobs"):
        backend(fake_apis).get("twice")
    with pytest.raises(ApiError) as missing:
        backend(fake_apis).get("999")
    assert missing.value.status == 404


def test_a_failed_job_carries_the_error_message(fake_apis: FakeGoogleApis) -> None:
    fake_apis.script_custom_job(
        "my_job", ["JOB_STATE_RUNNING", "JOB_STATE_FAILED"], error_message="OOM in worker"
    )
    jobs = backend(fake_apis)
    jobs.create(custom_job(), "my_job")
    assert jobs.get("my_job")["state"] == "RUNNING"
    failed = jobs.get("my_job")
    assert failed["state"] == "FAILED" and failed["errorMessage"] == "OOM in worker"


def test_list_translates_ml_filters_and_limits(fake_apis: FakeGoogleApis) -> None:
    seed(fake_apis, "a", "a", "JOB_STATE_RUNNING")
    seed(fake_apis, "b", "b", "JOB_STATE_FAILED")
    seed(fake_apis, "c", "c", "JOB_STATE_RUNNING")
    jobs = backend(fake_apis)
    assert [j["jobId"] for j in jobs.list("state=RUNNING")] == ["a", "c"]
    assert [j["state"] for j in jobs.list("state=FAILED")] == ["FAILED"]
    assert len(jobs.list(limit=2)) == 2


def test_cancel_moves_the_job_to_cancelled(fake_apis: FakeGoogleApis) -> None:
    seed(fake_apis, "my_job", "my_job", "JOB_STATE_RUNNING")
    jobs = backend(fake_apis)
    jobs.cancel("my_job")
    assert jobs.get("my_job")["state"] == "CANCELLING"
    assert jobs.get("my_job")["state"] == "CANCELLED"


def test_permission_errors_name_the_permission(fake_apis: FakeGoogleApis) -> None:
    fake_apis.inject_permission_denied("aiplatform.customJobs.create", "POST", VERTEX_CREATE)
    with pytest.raises(ApiError) as exc:
        backend(fake_apis).create(custom_job(), "my_job")
    assert exc.value.status == 403 and "aiplatform.customJobs.create" in str(exc.value)
    assert fake_apis.custom_jobs == {}


def test_the_production_wire_sends_a_post_once_and_reports_the_lost_answer(fake_apis: FakeGoogleApis) -> None:
    fake_apis.inject_drop("POST", VERTEX_CREATE, after=True)
    api = production_service("aiplatform", fake_apis.url).projects().locations().customJobs()
    with pytest.raises(ConnectionError):
        api.create(parent=PARENT, body=custom_job()).execute(num_retries=0)
    assert len(fake_apis.custom_job_bodies) == 1
    (number,) = fake_apis.custom_jobs
    name = f"{PARENT}/customJobs/{number}"
    assert api.get(name=name).execute()["displayName"] == "my_job"
    # a read whose kept-alive connection the server dropped is sent once more, fresh, and answered
    fake_apis.inject_drop("GET", r"/customJobs/", after=False)
    assert api.get(name=name).execute()["displayName"] == "my_job"
