"""The preflight fakes parse requests as the services do: wrong paths, query parameters and bodies are refused."""

from __future__ import annotations

import json
import urllib.request
from typing import Any
from urllib.error import HTTPError

import pytest

from tests.fakes.api_server import FakeGoogleApis


def call(server: FakeGoogleApis, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(server.url + path.lstrip("/"), data=data, method=method)
    if data is not None:
        request.add_header("content-type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, json.loads(answer.read())
    except HTTPError as err:
        return err.code, json.loads(err.read())


def test_each_read_answers_what_its_discovery_document_promises(fake_apis: FakeGoogleApis) -> None:
    assert (
        call(fake_apis, "GET", "/v1/projects/p/services/aiplatform.googleapis.com")[1]["state"] == "ENABLED"
    )
    assert call(fake_apis, "GET", "/v1/projects/p/serviceAccounts/a@p.iam.gserviceaccount.com")[0] == 200
    key = "/v1/projects/p/locations/us-central1/keyRings/r/cryptoKeys/k"
    assert call(fake_apis, "GET", key)[1]["primary"]["state"] == "ENABLED"
    assert call(fake_apis, "GET", key + ":getIamPolicy")[1]["bindings"]
    status, answer = call(
        fake_apis, "GET", "/storage/v1/b/b/iam/testPermissions?permissions=storage.objects.create"
    )
    assert (status, answer["permissions"]) == (200, ["storage.objects.create"])


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("GET", "/v1/projects/p/services/aiplatform.googleapis.com?nosuch=1", None),
        (
            "POST",
            "/v1/projects/p/serviceAccounts/a@p.iam.gserviceaccount.com:testIamPermissions",
            {"permission": ["x"]},
        ),
        (
            "POST",
            "/v1/projects/p/serviceAccounts/a@p.iam.gserviceaccount.com:testIamPermissions",
            {"permissions": "x"},
        ),
        ("GET", "/v1beta1/projects/p/services/aiplatform.googleapis.com/consumerQuotaMetrics?view=ALL", None),
        ("GET", "/storage/v1/b/b/iam/testPermissions", None),
    ],
)
def test_malformed_requests_are_refused(fake_apis: FakeGoogleApis, method: str, path: str, body: Any) -> None:
    status, answer = call(fake_apis, method, path, body)
    assert status == 400, answer
    assert answer["error"]["status"] == "INVALID_ARGUMENT"


def test_quota_pages(fake_apis: FakeGoogleApis) -> None:
    for n in range(3):
        fake_apis.preflight.add_quota(f"aiplatform.googleapis.com/m{n}", n)
    path = "/v1beta1/projects/p/services/aiplatform.googleapis.com/consumerQuotaMetrics?view=FULL&pageSize=2"
    first = call(fake_apis, "GET", path)[1]
    second = call(fake_apis, "GET", f"{path}&pageToken={first['nextPageToken']}")[1]
    assert [m["metric"] for m in first["metrics"] + second["metrics"]] == [
        f"aiplatform.googleapis.com/m{n}" for n in range(3)
    ]
