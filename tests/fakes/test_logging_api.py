"""The fake logging v2 entries.list serves job logs the way Cloud Logging does, including over time."""

from __future__ import annotations

from typing import Any

import httplib2
import pytest
from googleapiclient.discovery import build_from_document
from googleapiclient.errors import HttpError
from googleapiclient.http import build_http

from tests.fakes.api_server import FakeGoogleApis
from tests.fakes.schema_check import discovery_json

GCLOUD_FILTER = '(resource.type="ml_job" OR resource.type="cloudml_job") AND resource.labels.job_id="{job}"'


def list_entries(server: FakeGoogleApis, **body: Any) -> dict[str, Any]:
    client = build_from_document(
        discovery_json("logging.v2"), http=build_http(), client_options={"api_endpoint": server.url}
    )
    result: dict[str, Any] = (
        client.entries().list(body={"resourceNames": ["projects/myproj"], **body}).execute()
    )
    return result


def messages(answer: dict[str, Any]) -> list[str]:
    return [e.get("jsonPayload", {}).get("message", e.get("textPayload")) for e in answer.get("entries", [])]


def test_entries_of_one_job_in_timestamp_order(fake_apis: FakeGoogleApis) -> None:
    fake_apis.add_log_lines("j1", ["one", "two"])
    fake_apis.add_log_lines("j2", ["other job"])
    fake_apis.add_log_entries(
        "j1",
        [
            {"timestamp": "2023-12-31T23:59:59Z", "textPayload": "earliest", "severity": "WARNING"},
            {"timestamp": "2024-06-01T00:00:00.5Z", "jsonPayload": {"message": "latest"}},
        ],
    )
    answer = list_entries(fake_apis, filter=GCLOUD_FILTER.format(job="j1"), orderBy="timestamp asc")
    assert messages(answer) == ["earliest", "one", "two", "latest"]
    first = answer["entries"][1]
    assert first["resource"] == {
        "type": "ml_job",
        "labels": {"job_id": "j1", "task_name": "master-replica-0", "project_id": "myproj"},
    }
    assert first["severity"] == "INFO" and first["insertId"] and first["timestamp"].startswith("2024-01-01T")
    desc = list_entries(fake_apis, filter=GCLOUD_FILTER.format(job="j1"), orderBy="timestamp desc")
    assert messages(desc) == ["latest", "two", "one", "earliest"]


def test_paging(fake_apis: FakeGoogleApis) -> None:
    fake_apis.add_log_lines("j1", [f"line {n}" for n in range(5)])
    job_filter = GCLOUD_FILTER.format(job="j1")
    seen: list[str] = []
    token = None
    pages = 0
    while True:
        answer = list_entries(
            fake_apis, filter=job_filter, pageSize=2, **({"pageToken": token} if token else {})
        )
        seen += messages(answer)
        pages += 1
        token = answer.get("nextPageToken")
        if not token:
            break
    assert seen == [f"line {n}" for n in range(5)]
    assert pages == 3


def test_gcloud_style_time_window_task_and_severity_filters(fake_apis: FakeGoogleApis) -> None:
    fake_apis.add_log_lines("j1", ["a", "b"], task_name="worker-replica-0")
    fake_apis.add_log_lines("j1", ["c"], severity="ERROR")
    fake_apis.add_log_entries("j1", [{"timestamp": "2099-01-01T00:00:00Z", "textPayload": "future"}])
    stored = list_entries(fake_apis, filter=GCLOUD_FILTER.format(job="j1"))["entries"]
    after_first = stored[0]["timestamp"]
    window = (
        GCLOUD_FILTER.format(job="j1")
        + f' AND ((timestamp="{after_first}" AND insertId>"{stored[0]["insertId"]}") OR timestamp>"{after_first}")'
        + ' AND timestamp<"2030-01-01T00:00:00Z"'
    )
    assert messages(list_entries(fake_apis, filter=window)) == ["b", "c"]
    task = GCLOUD_FILTER.format(job="j1") + ' AND resource.labels.task_name="worker-replica-0"'
    assert messages(list_entries(fake_apis, filter=task)) == ["a", "b"]
    assert messages(list_entries(fake_apis, filter="severity>=WARNING")) == ["c"]
    assert messages(list_entries(fake_apis, filter='NOT resource.labels.job_id="j1"')) == []


def test_entries_appear_when_the_job_reaches_a_state(fake_apis: FakeGoogleApis) -> None:
    fake_apis.script_job("j1", ["QUEUED", "RUNNING", "SUCCEEDED"])
    fake_apis.add_job({"jobId": "j1", "trainingInput": {}})
    fake_apis.add_log_lines("j1", ["starting"])
    fake_apis.add_log_lines("j1", ["training"], when_state="RUNNING")
    fake_apis.add_log_lines("j1", ["done"], when_state="SUCCEEDED")
    job_filter = GCLOUD_FILTER.format(job="j1")
    assert messages(list_entries(fake_apis, filter=job_filter)) == ["starting"]
    client_get = httplib2.Http(timeout=10)
    client_get.request(f"{fake_apis.url}v1/projects/myproj/jobs/j1")  # answers QUEUED, moves to RUNNING
    assert messages(list_entries(fake_apis, filter=job_filter)) == ["starting", "training"]
    client_get.request(f"{fake_apis.url}v1/projects/myproj/jobs/j1")
    assert messages(list_entries(fake_apis, filter=job_filter)) == ["starting", "training", "done"]


def test_entries_appear_after_some_list_calls(fake_apis: FakeGoogleApis) -> None:
    fake_apis.add_log_lines("j1", ["first"])
    fake_apis.add_log_lines("j1", ["second"], after_list_calls=1)
    fake_apis.add_log_lines("j1", ["third"], after_list_calls=2)
    job_filter = GCLOUD_FILTER.format(job="j1")
    polls = [messages(list_entries(fake_apis, filter=job_filter)) for _ in range(3)]
    assert polls == [["first"], ["first", "second"], ["first", "second", "third"]]


def test_bad_filter_and_order_are_400(fake_apis: FakeGoogleApis) -> None:
    for body in ({"filter": 'resource.labels.job_id="j1" AND ('}, {"orderBy": "severity"}):
        with pytest.raises(HttpError) as exc:
            list_entries(fake_apis, **body)
        assert exc.value.resp.status == 400
