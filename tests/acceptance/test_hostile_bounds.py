"""Every bound is local and early (docs/local.md, docs/ci.md, docs/training.md).

``maxParallelTrials`` is bounded by what this machine can run (with a warning); a grid is sized before it is
built; environment settings are range checked; a connection refused outright (nothing listening: a wrong
endpoint) ends within seconds instead of being retried for minutes; a resumable upload stops when the
service's progress goes backwards or crawls, with the bytes sent bounded by a small multiple of the file.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.fakes.api_server import FakeGoogleApis
from tests.fakes.cli import run_cli_process
from tests.fakes.hostile_http import HostileServer, RawRequest
from tests.fakes.lifecycle_support import PROJECT, point_cli_at, run_cli
from tests.fakes.trainers import write_trainer

REPO = Path(__file__).resolve().parents[2]

# --- environment settings -----------------------------------------------------------------------------------

BAD_SETTINGS = {
    "MLSUBMIT_HTTP_TIMEOUT": ["inf", "1e308", "nan", "-1", "99999999", "0"],
    "MLSUBMIT_POLL_INTERVAL": ["inf", "1e300", "-5"],
    "MLSUBMIT_RETRY_INITIAL_DELAY": ["inf", "1e300"],
}
CASES = [(name, value) for name, values in BAD_SETTINGS.items() for value in values]


@pytest.mark.timeout(20)
@pytest.mark.parametrize(("name", "value"), CASES, ids=[f"{n}={v}" for n, v in CASES])
def test_an_environment_setting_out_of_range_is_a_usage_error(
    monkeypatch: pytest.MonkeyPatch, fake_apis: FakeGoogleApis, name: str, value: str
) -> None:
    point_cli_at(monkeypatch, fake_apis)
    fake_apis.add_job({"jobId": "j1", "state": "RUNNING", "trainingInput": {}}, PROJECT)
    result = run_cli(["jobs", "wait", "j1"], env={name: value})
    assert result.exit_code == 2, result.output
    assert name in result.stderr and "Traceback" not in result.output
    assert not fake_apis.requests


# --- a connection refused outright -------------------------------------------------------------------------


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def package(tmp_path: Path) -> Path:
    path = tmp_path / "data-1.0.tar.gz"
    path.write_bytes(os.urandom(2 << 20))  # 2 MiB: above the 1 MiB chunk set below, a resumable upload
    return path


def _submit(tmp_path: Path, package: Path, env: dict[str, str], timeout: float = 90) -> Any:
    return run_cli_process(
        [
            "training", "j1", "--region", "us-central1", "--runtime-version", "2.11", "--python-version", "3.7",
            "--module-name", "trainer.task", "--packages", str(package), "--staging-bucket", "gs://my-bucket",
        ],
        cwd=tmp_path,
        env={"CLOUDSDK_AUTH_ACCESS_TOKEN": "fake", "CLOUDSDK_CORE_PROJECT": "p", **env},
        timeout=timeout,
    )  # fmt: skip


@pytest.mark.timeout(60)
@pytest.mark.parametrize("where", ["storage", "ml"])
def test_a_refused_connection_fails_within_seconds(tmp_path: Path, package: Path, where: str) -> None:
    port = _closed_port()
    url = f"http://127.0.0.1:{port}"
    env = {"MLSUBMIT_RETRY_INITIAL_DELAY": "0.05", "CLOUDSDK_API_ENDPOINT_OVERRIDES_ML": url + "/"}
    if where == "storage":
        env["STORAGE_EMULATOR_HOST"] = url
    start = time.monotonic()
    if where == "storage":
        result = _submit(tmp_path, package, env, timeout=50)
    else:
        result = run_cli_process(
            ["jobs", "wait", "j1"],
            cwd=tmp_path,
            env={"CLOUDSDK_AUTH_ACCESS_TOKEN": "fake", "CLOUDSDK_CORE_PROJECT": "p", "MLSUBMIT_POLL_INTERVAL": "0.05",
                 **env},
            timeout=50,
        )  # fmt: skip
    took = time.monotonic() - start
    assert result.returncode == 1, result.stderr[-2000:]
    assert "Traceback" not in result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("ERROR:") and f"127.0.0.1:{port}" in last and "refused" in last, last
    assert took < 10, took


# --- a resumable upload whose service misbehaves ------------------------------------------------------------


class _Storage:
    """A storage endpoint whose resumable sessions report progress by ``script(round, sent_end)``."""

    def __init__(self, script: str) -> None:
        self.script = script
        self.rounds = 0
        self.received = 0
        self.lock = threading.Lock()

    def held(self, end: int) -> int:
        self.rounds += 1
        if self.script == "ahead":  # claims a third of the file more than it was sent
            return end + (2 << 20) // 3
        if self.script == "backwards":
            return end if self.rounds == 1 else max(0, end // 4)  # takes a chunk, then forgets most of it
        return min(end, self.rounds * 1024)  # crawls: 1 KiB more per round, however much was sent

    def behave(self, request: RawRequest, sock: socket.socket, stop: threading.Event) -> bool:
        with self.lock:
            self.received += len(request.body)
            if request.method == "GET":
                status, headers, body = 404, {}, b'{"error": {"code": 404, "message": "No such object"}}'
            elif request.method == "POST":
                url = f"http://{request.headers['host']}/upload/session/1"
                if self.script == "non-ascii":
                    url += "/\u00e9\u202e"
                status, headers, body = 200, {"Location": url}, b""
            else:
                span = request.headers.get("content-range", "")
                end = (
                    int(span.split(" ")[1].split("-")[1].split("/")[0])
                    if "*" not in span
                    else self.rounds * 1024
                )
                held = self.held(end + 1)
                status, headers, body = 308, {"Range": f"bytes=0-{held - 1}"} if held else {}, b""
        head = f"HTTP/1.1 {status} X\r\nContent-Length: {len(body)}\r\nContent-Type: application/json\r\n"
        head += "".join(f"{k}: {v}\r\n" for k, v in headers.items())
        sock.sendall(head.encode("utf-8") + b"\r\n" + body)
        return True


@pytest.mark.timeout(60)
@pytest.mark.parametrize("script", ["backwards", "crawl", "ahead", "non-ascii"])
def test_a_resumable_upload_stops_when_the_service_goes_backwards_or_crawls(
    tmp_path: Path, package: Path, script: str
) -> None:
    """Also when it claims bytes never sent (going on would leave a hole in the object) and when its session
    URI is no URI a request line can hold."""
    storage = _Storage(script)
    with HostileServer(storage.behave) as server:
        url = server.url.rstrip("/")
        env = {
            "STORAGE_EMULATOR_HOST": url,
            "CLOUDSDK_API_ENDPOINT_OVERRIDES_ML": url + "/",
            "MLSUBMIT_UPLOAD_CHUNK_MIB": "1",
            "MLSUBMIT_RETRY_INITIAL_DELAY": "0.01",
        }
        result = _submit(tmp_path, package, env, timeout=50)
    assert result.returncode == 1, result.stderr[-2000:]
    assert "Traceback" not in result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert "Cloud Storage" in last
    assert storage.received <= 4 * package.stat().st_size, storage.received
    why = {"ahead": "only 1048576 were sent", "non-ascii": "session URI that is not on"}.get(script, "")
    assert why in last, last
    if script == "non-ascii":
        assert "\u202e" not in result.stderr  # server text is neutralised


# --- local tune -----------------------------------------------------------------------------------------------

TASK = """\
import json, os, sys
path = os.environ["CLOUD_ML_HP_METRIC_FILE"]
os.makedirs(os.path.dirname(path), exist_ok=True)
open(path, "w").write(json.dumps({"global_step": "1", "loss": "0.5"}) + "\\n")
"""


@pytest.fixture
def trainer(tmp_path: Path) -> Path:
    return write_trainer(tmp_path, TASK)


def _tune(tmp_path: Path, trainer: Path, hyper: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    config = tmp_path / "tune.yaml"
    base = {"goal": "MINIMIZE", "hyperparameterMetricTag": "loss", "maxTrials": 2}
    config.write_text(
        yaml.safe_dump({"trainingInput": {"region": "us-central1", "hyperparameters": {**base, **hyper}}})
    )
    return subprocess.run(
        [sys.executable, "-m", "mlsubmit", "local", "tune", "--package-path", str(trainer), "--module-name",
         "trainer.task", "--config", str(config), "--job-dir", str(tmp_path / "out"), "--format", "json"],
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=50,
    )  # fmt: skip


@pytest.mark.timeout(60)
@pytest.mark.parametrize("parallel", [100_000, 1_000_000])
def test_max_parallel_trials_is_bounded_by_this_machine_with_a_warning(
    tmp_path: Path, trainer: Path, parallel: int
) -> None:
    params = [{"parameterName": "units", "type": "DISCRETE", "discreteValues": [1, 2, 3]}]
    hyper = {
        "algorithm": "GRID_SEARCH",
        "maxTrials": parallel,
        "maxParallelTrials": parallel,
        "params": params,
    }
    result = _tune(tmp_path, trainer, hyper)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "WARNING" in result.stderr and "maxParallelTrials" in result.stderr
    assert len(json.loads(result.stdout)["trials"]) == 3  # the grid's size


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    "params",
    [
        [{"parameterName": "units", "type": "INTEGER", "minValue": 0, "maxValue": 10**12}],
        [
            {"parameterName": "a", "type": "INTEGER", "minValue": 0, "maxValue": 2147483647},
            {"parameterName": "b", "type": "INTEGER", "minValue": -2147483648, "maxValue": 2147483647},
        ],
    ],
    ids=["one huge range", "two int32 ranges"],
)
def test_a_huge_grid_is_walked_lazily_not_built(tmp_path: Path, trainer: Path, params: list[Any]) -> None:
    result = _tune(tmp_path, trainer, {"algorithm": "GRID_SEARCH", "params": params})
    assert result.returncode == 0, result.stderr[-2000:]
    trials = json.loads(result.stdout)["trials"]
    assert sorted(t["trialId"] for t in trials) == ["1", "2"]
    first = {t["trialId"]: t["hyperparameters"] for t in trials}["1"]
    assert first == {p["parameterName"]: str(p["minValue"]) for p in params}
