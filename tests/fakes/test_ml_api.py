"""The fake ml v1 API answers googleapiclient (built from the shipped discovery document) like the service."""

from __future__ import annotations

import http.client
import json
from typing import Any

import pytest
from googleapiclient.discovery import build_from_document
from googleapiclient.errors import HttpError
from googleapiclient.http import build_http

from tests.fakes.api_server import FakeGoogleApis
from tests.fakes.schema_check import discovery_json

PARENT = "projects/myproj"


def ml_client(server: FakeGoogleApis) -> Any:
    """A googleapiclient ml v1 client whose every call goes to the fake."""
    return build_from_document(
        discovery_json("ml.v1"), http=build_http(), client_options={"api_endpoint": server.url}
    )


def job_body(job_id: str = "j1", **training: Any) -> dict[str, Any]:
    training_input = {
        "region": "us-central1",
        "packageUris": ["gs://bkt/p.tar.gz"],
        "pythonModule": "trainer.task",
        "args": ["--epochs", "3"],
        **training,
    }
    return {"jobId": job_id, "labels": {"team": "ml"}, "trainingInput": training_input}


def error_of(exc: pytest.ExceptionInfo[HttpError]) -> dict[str, Any]:
    error: dict[str, Any] = json.loads(exc.value.content)["error"]
    return error


def create(client: Any, body: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = client.projects().jobs().create(parent=PARENT, body=body).execute()
    return result


def get(client: Any, job_id: str) -> dict[str, Any]:
    result: dict[str, Any] = client.projects().jobs().get(name=f"{PARENT}/jobs/{job_id}").execute()
    return result


def test_create_stores_the_job_queued_and_returns_it(fake_apis: FakeGoogleApis) -> None:
    client = ml_client(fake_apis)
    created = create(client, job_body(workerCount=2, scaleTier="CUSTOM", masterType="n1-standard-4"))
    assert created["jobId"] == "j1"
    assert created["state"] == "QUEUED"
    assert created["createTime"].endswith("Z") and created["etag"]
    # int64 fields are answered as strings whatever the client sent.
    assert created["trainingInput"]["workerCount"] == "2"
    assert fake_apis.jobs["j1"]["trainingInput"]["args"] == ["--epochs", "3"]
    (request,) = fake_apis.requests_matching("POST", r"/jobs$")
    assert request.json["trainingInput"]["workerCount"] == 2  # recorded exactly as sent
    assert request.query["alt"] == ["json"]
    assert request.status == 200
    assert fake_apis.job_bodies == [request.json]


def test_unknown_field_is_400_with_googles_message(fake_apis: FakeGoogleApis) -> None:
    client = ml_client(fake_apis)
    with pytest.raises(HttpError) as exc:
        create(client, job_body(bogus=1))
    assert exc.value.resp.status == 400
    error = error_of(exc)
    assert error["status"] == "INVALID_ARGUMENT"
    assert error["message"] == (
        "Invalid JSON payload received. Unknown name \"bogus\" at 'job.training_input': Cannot find field."
    )
    assert fake_apis.jobs == {}


def test_nested_unknown_field_and_bad_values_are_all_reported(fake_apis: FakeGoogleApis) -> None:
    body = job_body(
        masterConfig={"acceleratorConfig": {"count": "two", "kind": "x"}},
        scaleTier="HUGE",
        scheduling={"maxRunningTime": "7 days"},
    )
    with pytest.raises(HttpError) as exc:
        create(ml_client(fake_apis), body)
    message = error_of(exc)["message"]
    assert "Unknown name \"kind\" at 'job.training_input.master_config.accelerator_config'" in message
    assert (
        "Invalid value at 'job.training_input.master_config.accelerator_config.count' (TYPE_INT64)" in message
    )
    assert "Invalid value at 'job.training_input.scale_tier'" in message
    assert "'job.training_input.scheduling.max_running_time'" in message
    assert len(message.splitlines()) == 4


def test_existing_job_id_is_409_already_exists(fake_apis: FakeGoogleApis) -> None:
    client = ml_client(fake_apis)
    create(client, job_body())
    with pytest.raises(HttpError) as exc:
        create(client, job_body(pythonModule="other.task"))
    assert exc.value.resp.status == 409
    assert error_of(exc)["status"] == "ALREADY_EXISTS"
    assert fake_apis.jobs["j1"]["trainingInput"]["pythonModule"] == "trainer.task"


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ({"trainingInput": {"region": "us-central1"}}, "A job ID must be specified"),
        ({"jobId": "1bad", "trainingInput": {}}, "should start with a letter"),
        ({"jobId": "ok"}, "Either training_input or prediction_input"),
    ],
)
def test_job_id_rules(fake_apis: FakeGoogleApis, body: dict[str, Any], fragment: str) -> None:
    with pytest.raises(HttpError) as exc:
        create(ml_client(fake_apis), body)
    assert exc.value.resp.status == 400
    assert fragment in error_of(exc)["message"]


def test_output_only_fields_are_ignored_and_snake_case_accepted(fake_apis: FakeGoogleApis) -> None:
    body = {
        "job_id": "j1",
        "state": "SUCCEEDED",
        "jobPosition": "3",
        "training_input": {"python_module": "m"},
    }
    created = create(ml_client(fake_apis), body)
    assert created["state"] == "QUEUED"
    assert "jobPosition" not in created
    assert created["trainingInput"] == {"pythonModule": "m"}


def test_each_get_advances_one_scripted_state(fake_apis: FakeGoogleApis) -> None:
    fake_apis.script_job("j1", ["QUEUED", "PREPARING", "RUNNING", "FAILED"], error_message="OOM in master")
    client = ml_client(fake_apis)
    assert create(client, job_body())["state"] == "QUEUED"
    seen = [get(client, "j1") for _ in range(5)]
    assert [job["state"] for job in seen] == ["QUEUED", "PREPARING", "RUNNING", "FAILED", "FAILED"]
    assert seen[3]["errorMessage"] == "OOM in master"
    assert "endTime" in seen[3] and "endTime" not in seen[2]
    assert "startTime" in seen[2]


def test_default_script_ends_in_success(fake_apis: FakeGoogleApis) -> None:
    client = ml_client(fake_apis)
    create(client, job_body())
    assert [get(client, "j1")["state"] for _ in range(4)] == ["QUEUED", "PREPARING", "RUNNING", "SUCCEEDED"]


def test_get_of_unknown_job_is_404(fake_apis: FakeGoogleApis) -> None:
    with pytest.raises(HttpError) as exc:
        get(ml_client(fake_apis), "nope")
    assert exc.value.resp.status == 404
    assert error_of(exc)["status"] == "NOT_FOUND"


def test_cancel_moves_to_cancelling_then_cancelled(fake_apis: FakeGoogleApis) -> None:
    fake_apis.script_job("j1", ["QUEUED", "RUNNING", "SUCCEEDED"])
    client = ml_client(fake_apis)
    create(client, job_body())
    assert get(client, "j1")["state"] == "QUEUED"
    assert client.projects().jobs().cancel(name=f"{PARENT}/jobs/j1", body={}).execute() == {}
    assert [get(client, "j1")["state"] for _ in range(3)] == ["CANCELLING", "CANCELLED", "CANCELLED"]
    with pytest.raises(HttpError) as exc:
        client.projects().jobs().cancel(name=f"{PARENT}/jobs/j1", body={}).execute()
    assert exc.value.resp.status == 400
    assert error_of(exc)["status"] == "FAILED_PRECONDITION"


def test_list_pages_and_filters(fake_apis: FakeGoogleApis) -> None:
    client = ml_client(fake_apis)
    for n in range(5):
        create(client, {**job_body(f"job{n}"), "labels": {"team": "a" if n % 2 else "b"}})
    fake_apis.script_job("job3", ["RUNNING"])
    jobs = client.projects().jobs()
    first = jobs.list(parent=PARENT, pageSize=2).execute()
    assert [j["jobId"] for j in first["jobs"]] == ["job0", "job1"]
    second = jobs.list(parent=PARENT, pageSize=2, pageToken=first["nextPageToken"]).execute()
    third = jobs.list(parent=PARENT, pageSize=2, pageToken=second["nextPageToken"]).execute()
    assert [j["jobId"] for j in second["jobs"] + third["jobs"]] == ["job2", "job3", "job4"]
    assert "nextPageToken" not in third
    assert [j["jobId"] for j in jobs.list(parent=PARENT, filter="state=RUNNING").execute()["jobs"]] == [
        "job3"
    ]
    assert [j["jobId"] for j in jobs.list(parent=PARENT, filter="labels.team=a").execute()["jobs"]] == [
        "job1",
        "job3",
    ]
    assert [j["jobId"] for j in jobs.list(parent=PARENT, filter="jobId:job4*").execute()["jobs"]] == ["job4"]
    assert jobs.list(parent=PARENT, filter='labels.team="zzz"').execute() == {}
    assert jobs.list(parent="projects/other").execute() == {}


def test_injected_503_before_processing_creates_nothing(fake_apis: FakeGoogleApis) -> None:
    fake_apis.inject("POST", r"/jobs$", 503)
    client = ml_client(fake_apis)
    with pytest.raises(HttpError) as exc:
        create(client, job_body())
    assert exc.value.resp.status == 503
    assert error_of(exc)["status"] == "UNAVAILABLE"
    assert fake_apis.jobs == {}
    assert create(client, job_body())["state"] == "QUEUED"  # the fault was used up
    assert [r.fault for r in fake_apis.requests] == ["503 before processing", None]


def test_injected_503_after_processing_loses_the_answer_but_creates_the_job(
    fake_apis: FakeGoogleApis,
) -> None:
    fake_apis.inject("POST", r"/jobs$", 503, after=True)
    client = ml_client(fake_apis)
    with pytest.raises(HttpError) as exc:
        create(client, job_body())
    assert exc.value.resp.status == 503
    assert list(fake_apis.jobs) == ["j1"]
    with pytest.raises(HttpError) as again:
        create(client, job_body())
    assert again.value.resp.status == 409


def test_injection_counts_times_and_custom_body(fake_apis: FakeGoogleApis) -> None:
    fault = fake_apis.inject(
        "GET", r"/jobs/j1$", 429, times=2, body={"error": {"code": 429, "message": "slow down"}}
    )
    client = ml_client(fake_apis)
    create(client, job_body())
    for _ in range(2):
        with pytest.raises(HttpError) as exc:
            get(client, "j1")
        assert exc.value.resp.status == 429
        assert error_of(exc)["message"] == "slow down"
    assert get(client, "j1")["jobId"] == "j1"
    assert fault.fired == 2
    assert fake_apis.pending_faults() == []


def test_injection_can_be_narrowed_to_one_request_body(fake_apis: FakeGoogleApis) -> None:
    fake_apis.inject("POST", r"/jobs$", 503, match=lambda r: r.json["jobId"] == "b")
    client = ml_client(fake_apis)
    assert create(client, job_body("a"))["jobId"] == "a"
    fake_apis.inject("GET", r"/jobs/a$", 500, match=lambda r: r.json["never"])  # no body: raises, so no match
    assert get(client, "a")["jobId"] == "a"
    with pytest.raises(HttpError) as exc:
        create(client, job_body("b"))
    assert exc.value.resp.status == 503
    assert list(fake_apis.jobs) == ["a"]


def test_permission_denied_names_the_permission(fake_apis: FakeGoogleApis) -> None:
    fake_apis.inject_permission_denied("ml.jobs.create")
    with pytest.raises(HttpError) as exc:
        create(ml_client(fake_apis), job_body())
    assert exc.value.resp.status == 403
    error = error_of(exc)
    assert error["status"] == "PERMISSION_DENIED"
    assert "ml.jobs.create" in error["message"] and "projects/myproj" in error["message"]
    assert error["details"][0]["metadata"]["permission"] == "ml.jobs.create"


def test_dropped_connection_gets_no_answer(fake_apis: FakeGoogleApis) -> None:
    fake_apis.inject_drop("POST", r"/jobs$")
    conn = http.client.HTTPConnection("127.0.0.1", fake_apis.port, timeout=10)
    conn.request("POST", f"/v1/{PARENT}/jobs", json.dumps(job_body()), {"Content-Type": "application/json"})
    with pytest.raises((http.client.RemoteDisconnected, ConnectionResetError)):
        conn.getresponse()
    conn.close()
    assert fake_apis.jobs == {}
    (request,) = fake_apis.requests
    assert request.status is None and request.fault == "drop before processing"


def test_httplib2_resends_once_after_a_drop_so_a_lost_create_answer_becomes_409(
    fake_apis: FakeGoogleApis,
) -> None:
    # Worth knowing for "exactly once": httplib2 silently re-sends a request whose connection was dropped.
    fake_apis.inject_drop("POST", r"/jobs$", after=True)
    with pytest.raises(HttpError) as exc:
        create(ml_client(fake_apis), job_body())
    assert exc.value.resp.status == 409
    assert len(fake_apis.job_bodies) == 2
    assert list(fake_apis.jobs) == ["j1"]


def test_invalid_json_and_unknown_paths(fake_apis: FakeGoogleApis) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", fake_apis.port, timeout=10)
    conn.request("POST", f"/v1/{PARENT}/jobs", b"{not json", {"Content-Type": "application/json"})
    response = conn.getresponse()
    assert response.status == 400
    assert json.loads(response.read())["error"]["message"].startswith("Invalid JSON payload received.")
    conn.request("GET", "/v1/nothing/here")
    response = conn.getresponse()
    assert response.status == 404
    assert json.loads(response.read())["error"]["status"] == "NOT_FOUND"
    conn.close()


def test_seeded_jobs_can_be_read_and_pinned(fake_apis: FakeGoogleApis) -> None:
    fake_apis.add_job({"jobId": "old", "state": "RUNNING", "trainingInput": {"region": "us-central1"}})
    client = ml_client(fake_apis)
    assert [get(client, "old")["state"] for _ in range(2)] == ["RUNNING", "RUNNING"]


def test_server_binds_loopback_and_stops(fake_apis: FakeGoogleApis) -> None:
    assert fake_apis.url == f"http://127.0.0.1:{fake_apis.port}/"
    server = FakeGoogleApis().start()
    port = server.port
    server.stop()
    with pytest.raises(ConnectionRefusedError):
        http.client.HTTPConnection("127.0.0.1", port, timeout=5).connect()
