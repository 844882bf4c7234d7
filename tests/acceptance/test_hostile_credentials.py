"""Credentials and the values that reach a host name or a URL path (docs/security.md).

A token is checked when it is read (one line of visible ASCII, bounded) and a bad one is exit 2 with one
``ERROR:`` line that never shows it or any part of it. A region, project, job id or endpoint override that could
change where a request goes (``127.0.0.1:PORT?`` as a region, ``../`` in a job id) is exit 2 before anything is
built, uploaded or sent: the loopback servers see no request at all.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fakes.api_server import FakeGoogleApis
from tests.fakes.cli import run_cli
from tests.fakes.gcs import BUCKET, GcsEmulator
from tests.fakes.lifecycle_support import cli_env

SECRET = "ya29.credentials-SECRET-part"  # every bad token below contains it; no output may
GOOD_TOKEN = "ya29.credentials-good-token-5d1e7a"


def assert_refused(result: object, *fragments: str, secret: str = SECRET) -> str:
    """Exit 2, exactly one ERROR line naming the problem, no traceback, no part of the token."""
    stdout, stderr = result.stdout, result.stderr  # type: ignore[attr-defined]
    output = stdout + stderr
    assert result.exit_code == 2, output  # type: ignore[attr-defined]
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ERROR: "), stderr
    assert "Traceback" not in output
    for part in (secret, "credentials-SECRET", "SECOND-LINE", "caf\u00e9", "AAAAAAAA"):
        assert part not in output, output
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


@pytest.fixture
def fake_env(fake_apis: FakeGoogleApis) -> dict[str, str | None]:
    return {**cli_env(fake_apis), "CLOUDSDK_AUTH_ACCESS_TOKEN": GOOD_TOKEN}


BAD_TOKENS = {
    "newline": f"{SECRET}\nSECOND-LINE",
    "carriage-return": f"{SECRET}\rSECOND-LINE",
    "non-ascii": f"{SECRET}caf\u00e9",
    "space": f"{SECRET} SECOND-LINE",
    "escape": f"{SECRET}\x1b[2J",
    "huge": SECRET + "A" * 20_000,
}


# -- the token --------------------------------------------------------------------------------------------


@pytest.mark.timeout(20)
@pytest.mark.parametrize("token", BAD_TOKENS.values(), ids=BAD_TOKENS.keys())
def test_a_bad_token_in_the_environment_is_refused_without_showing_it(
    fake_apis: FakeGoogleApis, fake_env: dict[str, str | None], token: str
) -> None:
    env = {**fake_env, "CLOUDSDK_AUTH_ACCESS_TOKEN": token}
    for verbosity in ("warning", "debug"):
        result = run_cli(["--verbosity", verbosity, "jobs", "describe", "j1"], env=env)
        assert_refused(result, "CLOUDSDK_AUTH_ACCESS_TOKEN", "not shown")
    assert fake_apis.requests == []


def submit_args(job: str, trainer: Path, *flags: str) -> list[str]:
    return [
        "--verbosity", "debug", "training", job, "--region", "us-central1", "--package-path", str(trainer),
        "--module-name", "trainer.task", "--runtime-version", "2.11", "--python-version", "3.7",
        "--staging-bucket", f"gs://{BUCKET}", *flags,
    ]  # fmt: skip


TOKEN_FILES: dict[str, bytes] = {
    **{name: token.encode() for name, token in BAD_TOKENS.items() if name != "non-ascii"},
    "non-ascii": f"{SECRET}caf\u00e9\n".encode(),
    "latin-1": SECRET.encode() + b"\xe9\n",
    "two-lines": f"{SECRET}\nSECOND-LINE\n".encode(),
    "nul": SECRET.encode() + b"\x00",
    "empty": b"\n",
}


@pytest.mark.timeout(30)
@pytest.mark.parametrize("content", TOKEN_FILES.values(), ids=TOKEN_FILES.keys())
def test_a_bad_token_file_is_refused_before_anything_is_uploaded(
    fake_apis: FakeGoogleApis,
    gcs_emulator: GcsEmulator,
    fake_env: dict[str, str | None],
    trainer: Path,
    tmp_path: Path,
    content: bytes,
) -> None:
    token_file = tmp_path / "token"
    token_file.write_bytes(content)
    result = run_cli(submit_args("bad_token", trainer, "--access-token-file", str(token_file)), env=fake_env)
    assert_refused(result, "--access-token-file")
    assert fake_apis.requests == [] and gcs_emulator.requests == []


@pytest.mark.timeout(30)
def test_a_token_file_that_is_a_fifo_or_folder_is_refused(
    fake_apis: FakeGoogleApis, fake_env: dict[str, str | None], trainer: Path, tmp_path: Path
) -> None:
    import os

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for path in (fifo, tmp_path):
        result = run_cli(submit_args("bad_token", trainer, "--access-token-file", str(path)), env=fake_env)
        assert_refused(result, "--access-token-file")
    assert fake_apis.requests == []


@pytest.mark.timeout(30)
def test_a_good_token_file_is_sent_and_never_printed_even_at_debug(
    fake_apis: FakeGoogleApis, gcs_emulator: GcsEmulator, fake_env: dict[str, str | None], trainer: Path,
    tmp_path: Path,
) -> None:  # fmt: skip
    token_file = tmp_path / "token"
    token_file.write_text(f"  {GOOD_TOKEN}\n")  # surrounding whitespace and the newline are not the token
    env = {**fake_env, "CLOUDSDK_AUTH_ACCESS_TOKEN": None}
    result = run_cli(submit_args("good_token", trainer, "--access-token-file", str(token_file)), env=env)
    assert result.exit_code == 0, result.stderr
    assert GOOD_TOKEN not in result.stdout + result.stderr
    assert "DEBUG" in result.stderr  # the debug log was on
    creates = fake_apis.requests_matching("POST", r"/jobs$")
    assert [r.headers.get("authorization") for r in creates] == [f"Bearer {GOOD_TOKEN}"]


# -- values that become part of a host name or a URL path --------------------------------------------------


@pytest.fixture
def listener() -> Iterator[tuple[int, list[bytes]]]:
    """A loopback socket that records every connection: where a hijacked request would go."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    server.settimeout(0.2)
    seen: list[bytes] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _addr = server.accept()
            except OSError:
                continue
            with conn:
                conn.settimeout(1)
                try:
                    seen.append(conn.recv(4096))
                except OSError:
                    seen.append(b"")

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield server.getsockname()[1], seen
    stop.set()
    thread.join(2)
    server.close()


@pytest.mark.timeout(30)
@pytest.mark.parametrize("via", ["flag", "environment"])
@pytest.mark.parametrize("command", ["describe", "cancel", "wait", "stream-logs", "list"])
def test_a_region_that_would_change_the_host_is_refused(
    fake_apis: FakeGoogleApis,
    fake_env: dict[str, str | None],
    listener: tuple[int, list[bytes]],
    via: str,
    command: str,
) -> None:
    """Without an aiplatform override the region becomes the host name: ``127.0.0.1:PORT?`` would send the token
    to that port."""
    port, seen = listener
    region = f"127.0.0.1:{port}?"
    env = {**fake_env, "CLOUDSDK_API_ENDPOINT_OVERRIDES_AIPLATFORM": None}
    args = ["jobs", command, *([] if command == "list" else ["j1"]), "--target", "vertex"]
    if via == "flag":
        args += ["--region", region]
    else:
        env["CLOUDSDK_COMPUTE_REGION"] = region
    line = assert_refused(run_cli(args, env=env), "region", "is invalid")
    assert line.startswith("ERROR: --region" if via == "flag" else "ERROR: CLOUDSDK_COMPUTE_REGION")
    assert seen == [] and fake_apis.requests == []


@pytest.mark.timeout(30)
@pytest.mark.parametrize(
    ("args", "env", "said"),
    [
        (["jobs", "describe", "j1/../../other/jobs/x"], {}, "JOB: job id"),
        (["jobs", "describe", "j1\n"], {}, "JOB: job id"),
        (["jobs", "cancel", "j1?x=1"], {}, "JOB: job id"),
        (["jobs", "wait", "j1%2F..%2Fx"], {}, "JOB: job id"),
        (["jobs", "stream-logs", 'j1" OR resource.type="gce_instance'], {}, "JOB: job id"),
        (
            [
                "jobs",
                "describe",
                "projects/p/locations/us-central1/customJobs/1/../../../x",
                "--target",
                "vertex",
                "--region",
                "us-central1",
            ],
            {},
            "JOB: job id",
        ),
        (
            ["jobs", "describe", 'j1" OR display_name="x', "--target", "vertex", "--region", "us-central1"],
            {},
            "JOB: job id",
        ),
        (["jobs", "describe", "j1", "--project", "p/jobs/x?"], {}, "--project: project"),
        (["jobs", "list"], {"CLOUDSDK_CORE_PROJECT": "p@127.0.0.1"}, "CLOUDSDK_CORE_PROJECT: project"),
        (["jobs", "list"], {"CLOUDSDK_CORE_PROJECT": "p\n"}, "CLOUDSDK_CORE_PROJECT: project"),
        (
            ["jobs", "list"],
            {"CLOUDSDK_CORE_PROJECT": None, "GOOGLE_CLOUD_PROJECT": "../p"},
            "GOOGLE_CLOUD_PROJECT: project",
        ),
        (
            ["jobs", "list"],
            {"CLOUDSDK_API_ENDPOINT_OVERRIDES_ML": "file:///etc/passwd"},
            "http:// or https://",
        ),
        (["jobs", "list"], {"CLOUDSDK_API_ENDPOINT_OVERRIDES_ML": "127.0.0.1:1"}, "http:// or https://"),
        (
            ["jobs", "list"],
            {"CLOUDSDK_API_ENDPOINT_OVERRIDES_ML": "http://user:SECRET@127.0.0.1:1/"},
            "user name or password",
        ),
        (["jobs", "list"], {"CLOUDSDK_API_ENDPOINT_OVERRIDES_LOGGING": "https://"}, "with a host"),
        (["jobs", "list"], {"CLOUDSDK_API_ENDPOINT_OVERRIDES_ML": "http://127.0.0.1:99999/"}, "with a host"),
        (["jobs", "list"], {"CLOUDSDK_API_ENDPOINT_OVERRIDES_ML": "http://h/ x"}, "no spaces"),
    ],
    ids=[
        "dotdot",
        "newline",
        "query",
        "encoded-slash",
        "filter-quote",
        "vertex-name-dotdot",
        "vertex-filter-quote",
        "project-flag",
        "project-at",
        "project-newline",
        "project-google-cloud",
        "endpoint-file",
        "endpoint-no-scheme",
        "endpoint-userinfo",
        "endpoint-no-host",
        "endpoint-bad-port",
        "endpoint-space",
    ],
)
def test_values_that_would_change_where_a_request_goes_are_refused(
    fake_apis: FakeGoogleApis, fake_env: dict[str, str | None], args: list[str], env: dict[str, str | None],
    said: str,
) -> None:  # fmt: skip
    line = assert_refused(run_cli(args, env={**fake_env, **env}), said)
    assert "SECRET" not in line
    assert fake_apis.requests == []


@pytest.mark.timeout(30)
def test_a_bad_endpoint_or_token_stops_a_submit_before_the_upload(
    fake_apis: FakeGoogleApis, gcs_emulator: GcsEmulator, fake_env: dict[str, str | None], trainer: Path
) -> None:
    for env in (
        {"CLOUDSDK_API_ENDPOINT_OVERRIDES_ML": "ftp://127.0.0.1/"},
        {"CLOUDSDK_AUTH_ACCESS_TOKEN": f"{SECRET}\nSECOND-LINE"},
        {"CLOUDSDK_COMPUTE_REGION": "us-central1.evil", "CLOUDSDK_API_ENDPOINT_OVERRIDES_AIPLATFORM": None},
    ):
        args = submit_args("stopped", trainer)
        if "CLOUDSDK_COMPUTE_REGION" in env:
            at = args.index("--region")
            args = [*args[:at], *args[at + 2 :], "--target", "vertex"]
        result = run_cli(args, env={**fake_env, **env})
        assert_refused(result)
    assert fake_apis.requests == [] and gcs_emulator.requests == []


@pytest.mark.timeout(20)
def test_the_good_values_still_work(fake_apis: FakeGoogleApis, fake_env: dict[str, str | None]) -> None:
    fake_apis.add_job({"jobId": "j1", "state": "RUNNING", "trainingInput": {}}, project="example.com:my-proj")
    result = run_cli(
        [
            "--verbosity",
            "debug",
            "jobs",
            "describe",
            "j1",
            "--project",
            "example.com:my-proj",
            "--format",
            "json",
        ],
        env=fake_env,
    )
    assert result.exit_code == 0, result.stderr
    assert GOOD_TOKEN not in result.stdout + result.stderr
    assert [r.path for r in fake_apis.requests] == ["/v1/projects/example.com:my-proj/jobs/j1"]
