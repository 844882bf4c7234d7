"""services.wire and services.rest against hostile loopback servers: deadline, size bounds, where the token goes,
no hidden re-send of a create, keep-alive reuse, and the googleapiclient-compatible error."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from pathlib import Path

import pytest
from googleapiclient.errors import HttpError

from mlsubmit.errors import ApiError, UsageError
from mlsubmit.services import rest, retry
from mlsubmit.services.wire import Wire, deadline_from_env, is_create, origin_of
from tests.fakes.api_server import FakeGoogleApis
from tests.fakes.hostile_http import (
    HostileServer,
    RawRequest,
    answer,
    drop_after_request,
    endless_chunks,
    huge_length,
    slow_drip,
)

TOKEN = "secret-token-value"


def ml(url: str, wire: Wire | None = None) -> rest.Resource:
    return rest.client("ml", url, wire or Wire(deadline=5), lambda: TOKEN)


@pytest.mark.timeout(20)
def test_a_slow_drip_ends_at_the_deadline() -> None:
    with HostileServer(slow_drip(interval=0.2)) as server:
        started = time.monotonic()
        with pytest.raises(TimeoutError, match="within 1s"):
            ml(server.url, Wire(deadline=1)).projects().jobs().get(name="projects/p/jobs/j").execute()
        assert time.monotonic() - started < 2.5
    assert retry.is_transient(TimeoutError())  # retried as a failed connection, within the retry policy


@pytest.mark.timeout(20)
def test_a_500_mb_content_length_is_refused_without_reading_it() -> None:
    with HostileServer(huge_length(500 * 1024 * 1024)) as server:
        started = time.monotonic()
        with pytest.raises(ApiError, match=r"524288000 bytes.*refused without reading"):
            ml(server.url).projects().jobs().get(name="projects/p/jobs/j").execute()
        assert time.monotonic() - started < 2
        assert retry.is_transient(ApiError("x", status=200)) is False


@pytest.mark.timeout(30)
def test_an_endless_chunked_answer_is_cut_at_the_bound() -> None:
    behaviour = endless_chunks()
    with HostileServer(behaviour) as server:
        wire = Wire(deadline=20, max_bytes=1 << 20)
        with pytest.raises(ApiError, match="larger than the 1048576 bytes"):
            ml(server.url, wire).projects().jobs().get(name="projects/p/jobs/j").execute()
        assert not wire.connections  # the connection is dropped, not reused half-read


@pytest.mark.timeout(20)
def test_a_redirect_is_not_followed_and_the_token_never_leaves_its_host() -> None:
    with HostileServer(answer(200, b"{}"), host="127.0.0.2") as elsewhere:
        location = {"Location": elsewhere.url + "v1/projects/p/jobs/j"}
        with HostileServer(answer(302, b"", location)) as server:
            with pytest.raises(HttpError) as caught:
                ml(server.url).projects().jobs().get(name="projects/p/jobs/j").execute()
            assert caught.value.resp.status == 302
            assert server.requests[0].headers["authorization"] == f"Bearer {TOKEN}"
            # The same wire, asked for a URL of another origin, never adds the token.
            wire = Wire(deadline=5)
            wire.send("GET", elsewhere.url + "x", origin=origin_of(server.url), token=lambda: TOKEN)
        assert elsewhere.requests and all("authorization" not in r.headers for r in elsewhere.requests)


@pytest.mark.timeout(20)
def test_a_create_whose_connection_drops_is_not_sent_again() -> None:
    with HostileServer(drop_after_request()) as server:
        wire = Wire(deadline=5)
        create = ml(server.url, wire).projects().jobs().create(parent="projects/p", body={"jobId": "j"})
        with pytest.raises(ConnectionError):
            create.execute()
        assert [r.method for r in server.requests] == ["POST"]
        assert retry.is_transient(ConnectionResetError())  # services.retry retries it, visibly


@pytest.mark.timeout(20)
def test_a_read_on_a_stale_keep_alive_connection_is_sent_once_more() -> None:
    calls = {"n": 0}
    ok = answer(200, b'{"jobId": "j"}')

    def first_ok_then_close(request: RawRequest, sock: socket.socket, stop: threading.Event) -> bool:
        calls["n"] += 1
        ok(request, sock, stop)
        return False  # the server closes the keep-alive connection after each answer

    with HostileServer(first_ok_then_close) as server:
        client = ml(server.url)
        for _ in range(2):
            time.sleep(0.05)
            assert client.projects().jobs().get(name="projects/p/jobs/j").execute() == {"jobId": "j"}
        with pytest.raises(ConnectionError):  # a create on the same stale connection is not re-sent
            time.sleep(0.05)
            client.projects().jobs().create(parent="projects/p", body={"jobId": "j"}).execute()


def test_connections_are_reused_within_a_command() -> None:
    with HostileServer(answer(200, b'{"jobs": []}')) as server:
        client = ml(server.url)
        for _ in range(3):
            client.projects().jobs().list(parent="projects/p").execute()
        assert server.connections == 1 and len(server.requests) == 3


def test_an_error_answer_is_googleapiclients_http_error_with_retry_after() -> None:
    body = b'{"error": {"code": 429, "message": "slow down", "status": "RESOURCE_EXHAUSTED"}}'
    with HostileServer(answer(429, body, {"Retry-After": "7"})) as server, pytest.raises(HttpError) as caught:
        ml(server.url).projects().jobs().get(name="projects/p/jobs/j").execute()
    err = caught.value
    assert (retry.status_of(err), retry.retry_after(err), err.content) == (429, 7.0, body)
    assert retry.is_transient(err)


def test_a_success_that_is_not_json_comes_back_as_text_for_the_answer_check() -> None:
    """Not a dict, so ``services.answers`` refuses it naming the call (tests/acceptance/test_hostile_*)."""
    page = b"<html>sign in</html>"
    with HostileServer(answer(200, page, {"Content-Type": "text/html"})) as server:
        got = ml(server.url).projects().jobs().create(parent="projects/p", body={}).execute()
    assert got == "<html>sign in</html>"


def test_an_error_answer_of_any_shape_is_an_http_error_with_a_reason() -> None:
    from googleapiclient.errors import HttpError

    body = b'{"error": {"code": 403, "status": 17, "message": {"nested": 1}}}'
    with (
        HostileServer(answer(403, body, {"Content-Type": "application/json"})) as server,
        pytest.raises(HttpError) as caught,
    ):
        ml(server.url).projects().jobs().get(name="projects/p/jobs/j").execute()
    assert caught.value.resp.status == 403 and "nested" in caught.value.reason


@pytest.mark.parametrize(
    ("name", "path"),
    [
        ("projects/p/jobs/j", "/v1/projects/p/jobs/j:cancel"),
        ("projects/p/jobs/j?x=1#y", "/v1/projects/p/jobs/j%3Fx=1%23y:cancel"),
        ("projects/example.com:p/jobs/j", "/v1/projects/example.com:p/jobs/j:cancel"),  # as googleapiclient
        ("projects/p/jobs/j%2F..", "/v1/projects/p/jobs/j%252F..:cancel"),
        ("projects/p/jobs/j b", "/v1/projects/p/jobs/j%20b:cancel"),
    ],
)
def test_path_values_are_percent_encoded(name: str, path: str) -> None:
    with HostileServer(answer(200, b"{}")) as server:
        ml(server.url).projects().jobs().cancel(name=name, body={}).execute()
        assert server.requests[0].path == path + "?alt=json"


@pytest.mark.parametrize("name", ["projects/../jobs/j", "projects/p/jobs/.", "../x"])
def test_dot_segments_are_refused(name: str) -> None:
    with pytest.raises(UsageError, match="not allowed in a resource name"):
        ml("http://127.0.0.1:9/").projects().jobs().get(name=name)


def test_the_facade_talks_to_the_fake_apis_like_googleapiclient() -> None:
    with FakeGoogleApis(project="p") as server:
        client = ml(server.url)
        made = client.projects().jobs().create(parent="projects/p", body={"jobId": "j1", "trainingInput": {}})
        assert made.execute()["jobId"] == "j1"
        page = client.projects().jobs().list(parent="projects/p", pageSize=1, filter=None).execute()
        assert [j["jobId"] for j in page["jobs"]] == ["j1"]
        with pytest.raises(HttpError) as caught:
            client.projects().jobs().get(name="projects/p/jobs/nope").execute()
        assert caught.value.resp.status == 404
        assert server.requests[0].headers["user-agent"].startswith("mlsubmit/")
    with pytest.raises(TypeError, match="unexpected parameters"):
        client.projects().jobs().get(name="projects/p/jobs/j", bogus=1)
    with pytest.raises(AttributeError):
        client.projects().nothing()


@pytest.mark.parametrize(
    ("method", "url", "create"),
    [
        ("POST", "http://h/v1/projects/p/jobs", True),
        ("POST", "http://h/v1/projects/p/jobs/j:cancel", False),
        ("POST", "http://h/v2/entries:list", False),
        ("GET", "http://h/v1/projects/p/jobs", False),
    ],
)
def test_is_create(method: str, url: str, create: bool) -> None:
    assert is_create(method, url) is create


@pytest.mark.parametrize(("env", "seconds"), [({}, 60.0), ({"MLSUBMIT_HTTP_TIMEOUT": "2.5"}, 2.5)])
def test_deadline_from_env(env: dict[str, str], seconds: float) -> None:
    assert deadline_from_env(env) == seconds


@pytest.mark.parametrize("raw", ["0", "-1", "soon"])
def test_a_bad_deadline_is_a_usage_error(raw: str) -> None:
    with pytest.raises(UsageError, match="MLSUBMIT_HTTP_TIMEOUT"):
        deadline_from_env({"MLSUBMIT_HTTP_TIMEOUT": raw})


@pytest.mark.timeout(30)
def test_a_tls_certificate_error_is_raised_and_never_retried(tmp_path: Path) -> None:
    import shutil
    import ssl
    import subprocess

    if shutil.which("openssl") is None:
        pytest.skip("needs the openssl command to make a self-signed certificate")
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert),
         "-days", "1", "-subj", "/CN=127.0.0.1"],
        check=True, capture_output=True,
    )  # fmt: skip
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def serve() -> None:
        conn, _addr = listener.accept()
        with contextlib.suppress(OSError, ssl.SSLError):
            context.wrap_socket(conn, server_side=True).recv(1)
        conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        with pytest.raises(ssl.SSLCertVerificationError) as caught:
            ml(f"https://127.0.0.1:{port}/").projects().jobs().get(name="projects/p/jobs/j").execute()
    finally:
        listener.close()
    assert retry.is_transient(caught.value) is False


@pytest.mark.parametrize("bad", ["tok\nX-Evil: 1", "tok én", "", "tok\x00"])
def test_a_token_that_is_no_header_value_is_refused_without_showing_it(bad: str) -> None:
    with HostileServer(answer(200, b"{}")) as server:
        client = rest.client("ml", server.url, Wire(deadline=5), lambda: bad)
        with pytest.raises(UsageError) as caught:
            client.projects().jobs().get(name="projects/p/jobs/j").execute()
        assert server.requests == []
    assert "not shown" in str(caught.value) and (not bad or bad not in str(caught.value))
