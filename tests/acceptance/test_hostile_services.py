"""A service that answers nonsense (docs/security.md): every answer is checked for the shape mlsubmit needs, so
an HTML page, a list for a job, a string ``error``, a ``state`` that is no string or a page token that never ends
is exit 1 with one ``ERROR:`` line naming the call and a short, neutralised excerpt of what came back: never
"submitted successfully", never exit 3, never a loop without end. Server text reaches the terminal without its
control characters.

Each behaviour is a small threaded ``http.server`` on 127.0.0.1 (:class:`Hostile`), answering every request with
what the test scripted; storage is the gcp-storage-emulator fixture.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.cli import run_cli
from tests.fakes.gcs import BUCKET, GcsEmulator

TOKEN = "ya29.hostile-services-SECRET-token-91c2"
ESC = "\x1b]0;pwned\x07\x1b[2J"  # sets the terminal title and clears the screen if printed as is
# (status, content type, body) for (method, path, json body or None)
Answer = tuple[int, str, bytes]
Script = Callable[[str, str, Any], Answer]


def as_json(value: Any, status: int = 200) -> Answer:
    return status, "application/json", json.dumps(value).encode()


class Hostile:
    """A loopback HTTP server answering every request with ``script(method, path, body)``; records requests."""

    def __init__(self, script: Script) -> None:
        self.script = script
        self.requests: list[tuple[str, str]] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _serve(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw) if raw else None
                except ValueError:
                    body = None
                owner.requests.append((self.command, self.path))
                status, kind, payload = owner.script(self.command, self.path, body)
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_POST = _serve

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/"
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.02,), daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def hostile() -> Iterator[Callable[[Script], Hostile]]:
    servers: list[Hostile] = []

    def start(script: Script) -> Hostile:
        servers.append(Hostile(script))
        return servers[-1]

    yield start
    for server in servers:
        server.close()


def env_for(server: Hostile) -> dict[str, str | None]:
    return {
        "CLOUDSDK_AUTH_ACCESS_TOKEN": TOKEN,
        "CLOUDSDK_CORE_PROJECT": "p",
        "CLOUDSDK_API_ENDPOINT_OVERRIDES_ML": server.url,
        "CLOUDSDK_API_ENDPOINT_OVERRIDES_AIPLATFORM": server.url,
        "CLOUDSDK_API_ENDPOINT_OVERRIDES_LOGGING": server.url,
        "MLSUBMIT_RETRY_INITIAL_DELAY": "0.01",
        "MLSUBMIT_POLL_INTERVAL": "0.01",
    }


def assert_bad_answer(result: Any, *fragments: str) -> str:
    """Exit 1, one ERROR line naming the call, no traceback, no bug report, no token, no raw escape."""
    output = result.stdout + result.stderr
    assert result.exit_code == 1, output
    assert "Traceback" not in output and "unexpected" not in output
    assert TOKEN not in output
    assert "\x1b" not in output and "\x07" not in output
    assert "submitted successfully" not in output
    errors = [line for line in result.stderr.splitlines() if line.startswith("ERROR: ")]
    assert len(errors) == 1, result.stderr
    for fragment in fragments:
        assert fragment in errors[0], errors[0]
    return errors[0]


HTML = f"<!DOCTYPE html><html><body>Sign in to the hotel wifi {ESC}</body></html>".encode()


# -- create answered 200 with something that is no job -----------------------------------------------------


def submit_args(job: str, trainer: Path, *flags: str) -> list[str]:
    return [
        "training", job, "--region", "us-central1", "--package-path", str(trainer), "--module-name",
        "trainer.task", "--runtime-version", "2.11", "--python-version", "3.7", "--staging-bucket",
        f"gs://{BUCKET}", *flags,
    ]  # fmt: skip


@pytest.mark.timeout(30)
@pytest.mark.parametrize(
    ("answer", "said"),
    [
        ((200, "text/html", HTML), "an HTML page"),
        (as_json(["jobId", "state"]), "a JSON list"),
        (as_json({"jobId": "html_200"}), "'state'"),
        (as_json({"jobId": "html_200", "state": 7}), "'state'"),
        ((200, "application/json", b""), "nothing"),
    ],
    ids=["html", "list", "no-state", "number-state", "empty"],
)
def test_a_create_answered_200_with_no_job_is_exit_1_not_success(
    hostile: Callable[[Script], Hostile],
    gcs_emulator: GcsEmulator,
    trainer: Path,
    answer: Answer,
    said: str,
) -> None:
    server = hostile(lambda method, path, body: answer)
    result = run_cli(submit_args("html_200", trainer), env=env_for(server))
    assert_bad_answer(result, "creating job html_200", said)
    assert [m for m, _ in server.requests] == ["POST"]  # one create, not retried: it was answered


@pytest.mark.timeout(30)
def test_a_vertex_create_answered_with_html_is_exit_1(
    hostile: Callable[[Script], Hostile], gcs_emulator: GcsEmulator, trainer: Path
) -> None:
    def script(method: str, path: str, body: Any) -> Answer:
        if method == "GET":  # the "is this id taken?" lookup
            return as_json({})
        return 200, "text/html", HTML

    server = hostile(script)
    # --no-preflight: this test is about the create's answer (the preflight reads have their own tests)
    args = submit_args("vertex_html", trainer, "--target", "vertex", "--no-preflight")
    result = run_cli(args, env=env_for(server))
    assert_bad_answer(result, "creating Vertex AI job vertex_html", "an HTML page")


# -- reads answered with the wrong shape ------------------------------------------------------------------


@pytest.mark.timeout(20)
@pytest.mark.parametrize(
    ("args", "answer", "said"),
    [
        (["jobs", "describe", "j1"], as_json([{"jobId": "j1", "state": "RUNNING"}]), "a JSON list"),
        (["jobs", "describe", "j1"], (200, "text/html", HTML), "an HTML page"),
        (["jobs", "describe", "j1"], as_json({"jobId": "j1", "state": ["RUNNING"]}), "'state'"),
        (["jobs", "wait", "j1"], as_json({"jobId": "j1"}), "'state'"),
        (["jobs", "cancel", "j1"], as_json("RUNNING"), "instead of a JSON object"),
        (["jobs", "list"], as_json({"jobs": ["j1", "j2"]}), "not a JSON object"),
        (["jobs", "list"], as_json({"jobs": {"j1": {}}}), "not a list"),
        (["jobs", "list"], as_json({"jobs": [], "nextPageToken": 5}), "'nextPageToken'"),
        (["jobs", "list"], as_json(42), "a JSON number"),
        (
            ["jobs", "describe", "j1"],
            as_json({"jobId": "j1", "state": "SUCCEEDED", "trainingOutput": {"trials": ["t1", 2]}}),
            "$.trainingOutput.trials[0]",
        ),
        (["jobs", "list"], as_json({"jobs": [{"jobId": "j1", "trainingInput": [1]}]}), "$.trainingInput"),
        (
            ["jobs", "wait", "1", "--target", "vertex", "--region", "us-central1"],
            as_json(
                {
                    "name": "projects/p/locations/us-central1/customJobs/1",
                    "state": "JOB_STATE_SUCCEEDED",
                    "trials": "none",
                }
            ),
            "$.trials",
        ),
        (
            ["jobs", "describe", "j1", "--target", "vertex", "--region", "us-central1"],
            as_json([1, 2]),
            "a JSON list",
        ),
    ],
    ids=[
        "job-list",
        "job-html",
        "state-list",
        "wait-no-state",
        "cancel-string",
        "items-strings",
        "items-object",
        "token-number",
        "list-number",
        "trials-strings",
        "list-input-list",
        "vertex-trials-string",
        "vertex-list",
    ],
)
def test_answers_of_the_wrong_shape_are_exit_1(
    hostile: Callable[[Script], Hostile], args: list[str], answer: Answer, said: str
) -> None:
    server = hostile(lambda method, path, body: answer)
    assert_bad_answer(run_cli(args, env=env_for(server)), said)


@pytest.mark.timeout(20)
@pytest.mark.parametrize(
    "error",
    [
        f"boom {ESC}",
        ["not", "an", "object"],
        {"code": 403, "status": 17, "message": {"nested": ESC}},
        None,
    ],
    ids=["string", "list", "odd-fields", "null"],
)
def test_an_error_answer_of_any_shape_is_exit_1_with_neutral_text(
    hostile: Callable[[Script], Hostile], error: Any
) -> None:
    server = hostile(lambda method, path, body: as_json({"error": error}, 403))
    line = assert_bad_answer(
        run_cli(["jobs", "describe", "j1"], env=env_for(server)), "reading job j1", "403"
    )
    if isinstance(error, str):
        assert "boom \\x1b]0;pwned\\x07" in line


@pytest.mark.timeout(20)
def test_an_html_error_page_is_exit_1(hostile: Callable[[Script], Hostile]) -> None:
    server = hostile(lambda method, path, body: (404, "text/html", HTML))
    assert_bad_answer(run_cli(["jobs", "describe", "j1"], env=env_for(server)), "j1")


@pytest.mark.timeout(20)
def test_a_failed_jobs_server_text_is_neutralised(hostile: Callable[[Script], Hostile]) -> None:
    job = {"jobId": "j1", "state": "FAILED", "errorMessage": f"OOM {ESC}", "endTime": "2020-01-01T00:00:00Z"}
    server = hostile(lambda method, path, body: as_json(job))
    for args in (["jobs", "wait", "j1"], ["jobs", "describe", "j1"]):
        result = run_cli(args, env=env_for(server))
        output = result.stdout + result.stderr
        assert "\x1b" not in output and "\x07" not in output, output
        assert "Traceback" not in output


# -- paging that makes no progress ------------------------------------------------------------------------


@pytest.mark.timeout(20)
def test_a_list_whose_page_token_repeats_ends_with_exit_1(hostile: Callable[[Script], Hostile]) -> None:
    page = {"jobs": [{"jobId": "j1", "state": "RUNNING"}], "nextPageToken": "again"}
    server = hostile(lambda method, path, body: as_json(page))
    assert_bad_answer(run_cli(["jobs", "list"], env=env_for(server)), "listing jobs", "twice")
    assert len(server.requests) == 2


@pytest.mark.timeout(20)
def test_a_list_of_endless_empty_pages_ends_with_exit_1(hostile: Callable[[Script], Hostile]) -> None:
    count = iter(range(10**9))
    server = hostile(lambda method, path, body: as_json({"jobs": [], "nextPageToken": f"t{next(count)}"}))
    assert_bad_answer(run_cli(["jobs", "list"], env=env_for(server)), "listing jobs", "nothing new")
    assert len(server.requests) <= 25


@pytest.mark.timeout(30)
@pytest.mark.parametrize("token", ["fresh", "same"])
def test_a_logging_endpoint_that_always_sends_a_page_token_ends(
    hostile: Callable[[Script], Hostile], token: str
) -> None:
    """The job ended long ago; the log answers the same entry with a next page token on every read."""
    job = {"jobId": "j1", "state": "SUCCEEDED", "endTime": "2020-01-01T00:00:00Z"}
    entry = {
        "insertId": "e1",
        "timestamp": "2020-01-01T00:00:00Z",
        "severity": "INFO",
        "textPayload": f"hello {ESC}",
        "resource": {"type": "ml_job", "labels": {"job_id": "j1", "task_name": "master-replica-0"}},
    }
    count = iter(range(10**9))

    def script(method: str, path: str, body: Any) -> Answer:
        if "entries" in path:
            next_token = f"t{next(count)}" if token == "fresh" else "same"
            return as_json({"entries": [entry], "nextPageToken": next_token})
        return as_json(job)

    server = hostile(script)
    result = run_cli(["jobs", "stream-logs", "j1"], env=env_for(server))
    assert result.exit_code == 0, result.stderr
    assert result.stdout.count("hello") == 1
    assert "hello \\x1b]0;pwned\\x07" in result.stdout and "\x1b" not in result.stdout
    reads = [p for _, p in server.requests if "entries" in p]
    assert len(reads) <= 25


@pytest.mark.timeout(20)
def test_log_entries_of_the_wrong_shape_are_exit_1(hostile: Callable[[Script], Hostile]) -> None:
    job = {"jobId": "j1", "state": "SUCCEEDED", "endTime": "2020-01-01T00:00:00Z"}

    def script(method: str, path: str, body: Any) -> Answer:
        return as_json({"entries": "not a list"}) if "entries" in path else as_json(job)

    server = hostile(script)
    assert_bad_answer(run_cli(["jobs", "stream-logs", "j1"], env=env_for(server)), "reading logs of job j1")
