"""The real CLI against misbehaving API servers: a deadline on every call, bounded answers, the token only for its
own host, and network commands that load none of the Google client stack when a bare token signs them."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.fakes.api_server import FakeGoogleApis
from tests.fakes.cli import run_cli_process
from tests.fakes.hostile_http import HostileServer, answer, huge_length, slow_drip

TOKEN = "tok-must-stay-home-123"
HEAVY = (
    "googleapiclient.discovery",
    "googleapiclient.http",
    "httplib2",
    "pyparsing",
    "cryptography",
    "google.auth",
)


def env_for(url: str, **extra: str) -> dict[str, str]:
    return {
        "CLOUDSDK_AUTH_ACCESS_TOKEN": TOKEN,
        "CLOUDSDK_CORE_PROJECT": "p",
        "CLOUDSDK_API_ENDPOINT_OVERRIDES_ML": url,
        "MLSUBMIT_RETRY_INITIAL_DELAY": "0",
        **extra,
    }


def assert_clean_failure(proc: subprocess.CompletedProcess[str]) -> None:
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr and proc.stderr.splitlines()[-1].startswith("ERROR: ")
    assert TOKEN not in proc.stdout + proc.stderr


@pytest.mark.timeout(30)
def test_a_server_that_drips_bytes_ends_in_exit_1_at_the_deadline(tmp_path: Path) -> None:
    with HostileServer(slow_drip(interval=0.05)) as server:
        started = time.monotonic()
        proc = run_cli_process(
            ["jobs", "describe", "j"], cwd=tmp_path, env=env_for(server.url, MLSUBMIT_HTTP_TIMEOUT="0.25")
        )
        took = time.monotonic() - started
    assert_clean_failure(proc)
    assert "no complete answer within 0.25s" in proc.stderr
    assert took < 5 * 0.25 + 5  # five attempts of at most 0.25 s each, no backoff, plus start-up


@pytest.mark.timeout(30)
def test_a_500_mb_answer_is_refused_with_exit_1(tmp_path: Path) -> None:
    with HostileServer(huge_length(500 * 1024 * 1024)) as server:
        proc = run_cli_process(["jobs", "describe", "j"], cwd=tmp_path, env=env_for(server.url))
    assert_clean_failure(proc)
    assert "524288000 bytes" in proc.stderr and "refused" in proc.stderr
    assert len(server.requests) == 1  # not retried


@pytest.mark.timeout(30)
def test_a_redirect_to_another_host_never_receives_the_token(tmp_path: Path) -> None:
    with HostileServer(answer(200, b'{"jobId": "j", "state": "RUNNING"}'), host="127.0.0.3") as elsewhere:
        moved = {"Location": elsewhere.url + "v1/projects/p/jobs/j"}
        with HostileServer(answer(307, b"", moved)) as server:
            proc = run_cli_process(["jobs", "describe", "j"], cwd=tmp_path, env=env_for(server.url))
        assert server.requests and server.requests[0].headers["authorization"] == f"Bearer {TOKEN}"
    assert_clean_failure(proc)
    assert "HTTP 307" in proc.stderr
    assert elsewhere.requests == []


@pytest.mark.timeout(30)
def test_a_create_answered_with_an_html_page_is_not_a_success(tmp_path: Path) -> None:
    with HostileServer(answer(200, b"<html>proxy login</html>", {"Content-Type": "text/html"})) as server:
        proc = run_cli_process(["jobs", "cancel", "j"], cwd=tmp_path, env=env_for(server.url))
    assert_clean_failure(proc)
    assert "an HTML page instead of a JSON object" in proc.stderr


PROBE = """
import sys
from mlsubmit.cli import main
try:
    main(sys.argv[1:])
except SystemExit as done:
    code = done.code
heavy = sorted(m for m in sys.modules if m.startswith({heavy!r}))
print(__import__("json").dumps({{"code": code, "heavy": heavy}}), file=sys.stderr)
"""


def probe(args: list[str], env: dict[str, str], cwd: Path) -> dict[str, object]:
    import os

    from tests.fakes.cli import MLSUBMIT_ROOT

    full = {**os.environ, **env, "PYTHONPATH": str(MLSUBMIT_ROOT)}
    code = PROBE.format(heavy=HEAVY)
    done = subprocess.run(
        [sys.executable, "-c", code, *args], cwd=cwd, env=full, capture_output=True, text=True, timeout=60
    )
    result: dict[str, object] = json.loads(done.stderr.strip().splitlines()[-1])
    return result


@pytest.mark.timeout(60)
def test_describe_and_the_dry_run_load_no_google_client_stack(tmp_path: Path) -> None:
    with FakeGoogleApis(project="p") as server:
        server.add_job({"jobId": "j1", "state": "RUNNING", "trainingInput": {}}, project="p")
        described = probe(["jobs", "describe", "j1", "--format", "json"], env_for(server.url), tmp_path)
        listed = probe(["jobs", "list"], env_for(server.url), tmp_path)
    (tmp_path / "trainer").mkdir()
    (tmp_path / "trainer" / "__init__.py").write_text("")
    (tmp_path / "trainer" / "task.py").write_text("print('hi')\n")
    dry = probe(
        ["training", "j2", "--region", "us-central1", "--package-path", "trainer", "--module-name",
         "trainer.task", "--job-dir", "gs://my-bucket/d", "--runtime-version", "2.11", "--python-version", "3.7",
         "--dry-run", "--format", "json"],
        {"CLOUDSDK_CORE_PROJECT": "p"},
        tmp_path,
    )  # fmt: skip
    assert described == {"code": 0, "heavy": []}
    assert listed == {"code": 0, "heavy": []}
    assert dry == {"code": 0, "heavy": []}


@pytest.mark.timeout(60)
def test_a_submit_with_a_package_uploaded_resumably_loads_no_google_client_stack(tmp_path: Path) -> None:
    (tmp_path / "trainer").mkdir()
    (tmp_path / "trainer" / "__init__.py").write_text("")
    (tmp_path / "trainer" / "task.py").write_text("print('hi')\n")
    big = tmp_path / "data-1.0.tar.gz"
    big.write_bytes(bytes(range(256)) * 8192)  # 2 MiB, above the 1 MiB bound set below: a resumable upload
    with FakeGoogleApis(project="p") as server:
        env = env_for(server.url, STORAGE_EMULATOR_HOST=server.url.rstrip("/"), MLSUBMIT_UPLOAD_CHUNK_MIB="1")
        submitted = probe(
            ["training", "j3", "--region", "us-central1", "--package-path", "trainer", "--module-name",
             "trainer.task", "--packages", str(big), "--job-dir", "gs://my-bucket/d", "--runtime-version", "2.11",
             "--python-version", "3.7"],
            env,
            tmp_path,
        )  # fmt: skip
        puts = server.requests_matching("PUT", r"^/upload/")
        assert sorted(u.upload_type for u in server.uploads) == ["multipart", "resumable"]
    assert submitted == {"code": 0, "heavy": []}
    assert len(puts) == 2  # 1 MiB PUTs
