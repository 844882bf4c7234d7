"""The rest of the first round (docs/config.md, docs/training.md, docs/security.md).

A YAML tag on a scalar that cannot be read as that type, any ``!!python/...`` tag, a machine user with no home
directory, an absolute path in a build backend's configuration, ``jobs cancel`` under SIGTERM while the service
does not answer, one enormous log line, a build backend that prints megabytes: each ends in a clear message or
bounded work, exit 2 (or 1, or 130), never a traceback, with memory that does not grow with the input.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from tests.fakes.api_server import FakeGoogleApis
from tests.fakes.children import reaped, wait_for
from tests.fakes.cli import run_cli_process
from tests.fakes.hostile_http import HostileServer, RawRequest
from tests.fakes.lifecycle_support import point_cli_at, run_cli, seed_job

REPO = Path(__file__).resolve().parents[2]

# --- YAML tags -----------------------------------------------------------------------------------------------

TAGGED = {
    "!!int on a word": ("workerCount: !!int abc", "!!int"),
    "!!int 0x": ("workerCount: !!int 0x", "!!int"),
    "!!float on a word": ("workerCount: !!float xyz", "!!float"),
    "!!bool maybe": ("workerCount: !!bool maybe", "!!bool"),
    "!!timestamp on a word": ("workerCount: !!timestamp notadate", "!!timestamp"),
    "!!null on a word": ("workerCount: !!null x", "!!null"),
    "!!binary not base64": ('workerCount: !!binary "@@@"', "!!binary"),
    "!!python/tuple": ("workerCount: !!python/tuple [1]", "!!python/tuple"),
    "!!python/object/apply": (
        'workerCount: !!python/object/apply:os.system ["true"]',
        "!!python/object/apply",
    ),
    "!!python/name": ('workerCount: !!python/name:os.system ""', "!!python/name"),
    "!!python/dict": ("workerCount: !!python/dict {a: 1}", "!!python/dict"),
    "a local tag on a list": ("args: !Ref [a]", "!Ref"),
}


@pytest.mark.timeout(20)
@pytest.mark.parametrize("case", list(TAGGED), ids=list(TAGGED))
def test_a_tag_that_cannot_be_read_is_named_at_its_line(tmp_path: Path, case: str) -> None:
    line, tag = TAGGED[case]
    config = tmp_path / "job.yaml"
    config.write_text(f"trainingInput:\n  scaleTier: BASIC\n  region: us-central1\n  {line}\n")
    result = run_cli(["validate", str(config)])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and "bug in mlsubmit" not in result.output
    errors = [e for e in result.stderr.splitlines() if e.startswith("ERROR:")]
    assert errors and errors[0].startswith(f"ERROR: {config}:4:"), result.stderr
    assert tag in errors[0], errors


# --- a machine user with no home directory -------------------------------------------------------------------


# A machine user: no passwd entry for its uid (so os.path.expanduser("~") stays "~"), and HOME as given.
NO_PASSWD_ENTRY = """\
import pwd, sys
def getpwuid(uid):
    raise KeyError(f"getpwuid(): uid not found: {uid}")
pwd.getpwuid = getpwuid
from mlsubmit.cli import main
main(sys.argv[1:])
"""


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    "home", [None, "/nonexistent", "", "relative"], ids=["unset", "nonexistent", "empty", "relative"]
)
def test_a_user_without_a_home_directory_still_submits(tmp_path: Path, home: str | None) -> None:
    package = tmp_path / "big-0.1.tar.gz"
    with package.open("wb") as handle:
        handle.write(os.urandom(4096))
        handle.truncate(17 << 20)  # large enough for the digest cache, which is written after the upload
    env = {k: v for k, v in os.environ.items() if k not in ("HOME", "XDG_CACHE_HOME")}
    missing = tmp_path.parent / f"{tmp_path.name}-missing-home"  # like /nonexistent, without touching it
    if home is not None:
        env["HOME"] = str(missing) if home == "/nonexistent" else home
    with FakeGoogleApis(project="p") as server:
        env.update(
            PYTHONPATH=str(REPO),
            CLOUDSDK_AUTH_ACCESS_TOKEN="fake",
            CLOUDSDK_CORE_PROJECT="p",
            CLOUDSDK_API_ENDPOINT_OVERRIDES_ML=server.url,
            STORAGE_EMULATOR_HOST=server.url.rstrip("/"),
        )
        result = subprocess.run(
            [sys.executable, "-c", NO_PASSWD_ENTRY, "training", "j1", "--region", "us-central1",
             "--runtime-version", "2.11", "--python-version", "3.7", "--module-name", "trainer.task",
             "--packages", str(package), "--staging-bucket", "gs://my-bucket", "--async"],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=50,
        )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    assert "Traceback" not in result.stderr
    # Nothing was written under a folder named "~" (or "relative", or anywhere) in the working directory.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["big-0.1.tar.gz"]
    assert not missing.exists()


# --- the project's build backend -------------------------------------------------------------------------------

BACKEND = """\
import os, sys
def get_requires_for_build_sdist(config_settings=None):
    return []
def build_sdist(sdist_directory, config_settings=None):
    LOUD
    raise SystemExit("backend failed on purpose")
"""


def _project(tmp_path: Path, pyproject: str, backend: str | None = None) -> Path:
    project = tmp_path / "project"
    (project / "trainer").mkdir(parents=True)
    (project / "trainer" / "__init__.py").write_text("")
    (project / "trainer" / "task.py").write_text("print('hi')\n")
    (project / "pyproject.toml").write_text(textwrap.dedent(pyproject))
    if backend is not None:
        (project / "local_backend.py").write_text(backend)
    return project


def _dry_run_memory(project: Path) -> tuple[subprocess.CompletedProcess[str], int]:
    """A dry run of the project's package, in a process that reports its own peak memory (KiB) last."""
    code = (
        "import resource, sys\n"
        "from mlsubmit.cli import main\n"
        "try:\n"
        "    main(sys.argv[1:])\n"
        "except SystemExit as exit:\n"
        "    code = exit.code\n"
        "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)\n"
        "sys.exit(code)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code, "training", "j1", "--region", "us-central1", "--runtime-version", "2.11",
         "--python-version", "3.7", "--package-path", str(project / "trainer"), "--module-name", "trainer.task",
         "--staging-bucket", "gs://my-bucket", "--dry-run", "--format", "json"],
        cwd=project,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=100,
    )  # fmt: skip
    return result, int(result.stderr.strip().splitlines()[-1])


@pytest.mark.timeout(120)
@pytest.mark.parametrize("how", ["one long line", "many lines"])
def test_a_backend_that_prints_megabytes_is_kept_to_its_tail(tmp_path: Path, how: str) -> None:
    pytest.importorskip("build")
    loud = (
        "sys.stdout.write('x' * (48 << 20)); sys.stdout.flush()"
        if how == "one long line"
        else "[sys.stdout.write('line %d\\n' % i) for i in range(1_000_000)]; sys.stdout.flush()"
    )
    pyproject = """\
        [build-system]
        requires = []
        build-backend = "local_backend"
        backend-path = ["."]
        """
    project = _project(tmp_path, pyproject, BACKEND.replace("LOUD", loud))
    quiet = _project(tmp_path / "quiet", pyproject, BACKEND.replace("LOUD", "pass"))
    result, peak = _dry_run_memory(project)
    _, baseline = _dry_run_memory(quiet)
    assert result.returncode == 2, result.stderr[-2000:]
    assert "Traceback" not in result.stderr
    assert "backend failed on purpose" in result.stderr
    assert len(result.stderr) < 200_000
    assert peak - baseline < 24 * 1024, (peak, baseline)  # KiB: far below the 48 MB printed


@pytest.mark.timeout(40)
@pytest.mark.parametrize("where", ["/", "/etc", "../outside"])
def test_a_backend_path_outside_the_project_is_refused(tmp_path: Path, where: str) -> None:
    pytest.importorskip("build")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "evil_backend.py").write_text("raise SystemExit('must never run')\n")
    project = _project(
        tmp_path,
        f"""\
        [build-system]
        requires = []
        build-backend = "evil_backend"
        backend-path = ["{where}"]
        """,
    )
    result = run_cli_process(
        ["training", "j1", "--region", "us-central1", "--runtime-version", "2.11", "--python-version", "3.7",
         "--package-path", str(project / "trainer"), "--module-name", "trainer.task",
         "--staging-bucket", "gs://my-bucket", "--dry-run", "--format", "json"],
        cwd=project,
        timeout=30,
    )  # fmt: skip
    assert result.returncode == 2, result.stderr[-2000:]
    assert "Traceback" not in result.stderr and "must never run" not in result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert "backend-path" in last and "pyproject.toml" in last, last


# --- jobs cancel while the service does not answer -----------------------------------------------------------


def _silent(request: RawRequest, sock: socket.socket, stop: threading.Event) -> bool:
    stop.wait(60)  # reads the request, never answers
    return False


@pytest.mark.timeout(40)
@pytest.mark.parametrize("command", [["jobs", "cancel", "j1"], ["jobs", "describe", "j1"]])
def test_sigterm_ends_a_command_waiting_on_a_silent_service(tmp_path: Path, command: list[str]) -> None:
    with HostileServer(_silent) as server:
        proc = subprocess.Popen(
            [sys.executable, "-m", "mlsubmit", *command],
            cwd=tmp_path,
            env={**os.environ, "PYTHONPATH": str(REPO), "CLOUDSDK_AUTH_ACCESS_TOKEN": "fake",
                 "CLOUDSDK_CORE_PROJECT": "p", "CLOUDSDK_API_ENDPOINT_OVERRIDES_ML": server.url},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        with reaped(proc):
            assert wait_for(lambda: bool(server.requests), timeout=20), (
                "the command never reached the service"
            )
            proc.send_signal(signal.SIGTERM)
            start = time.monotonic()
            _, err = proc.communicate(timeout=10)
        took = time.monotonic() - start
    assert proc.returncode == 130, err[-2000:]
    assert "Traceback" not in err and took < 5, (took, err[-500:])


# --- one enormous log line -------------------------------------------------------------------------------------


@pytest.mark.timeout(60)
@pytest.mark.parametrize("size", [1 << 20, 4 << 20], ids=["1 MiB", "4 MiB"])
def test_one_enormous_log_line_is_cut_not_printed_whole(
    monkeypatch: pytest.MonkeyPatch, fake_apis: FakeGoogleApis, size: int
) -> None:
    point_cli_at(monkeypatch, fake_apis)
    seed_job(fake_apis, "j1", ["RUNNING", "SUCCEEDED"])
    fake_apis.add_log_lines("j1", ["before", "y" * size, "after"], when_state="RUNNING")
    result = run_cli(["jobs", "stream-logs", "j1"])
    assert result.exit_code == 0, result.stderr[-2000:]
    assert len(result.stdout) < 1 << 20
    lines = result.stdout.splitlines()
    assert lines[0].endswith("\tbefore") and lines[-1].endswith("\tafter")
    assert "more characters" in lines[1]
