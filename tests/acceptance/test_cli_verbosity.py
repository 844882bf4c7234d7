"""`--verbosity debug` shows what mlsubmit does, and never the access token (docs/security.md)."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mlsubmit.cli.logsetup import RedactSecrets
from tests.fakes.api_server import FakeGoogleApis
from tests.fakes.cli import run_cli_process

TOKEN = "ya29.a0-very-secret-token-value"
REPO = Path(__file__).resolve().parents[2]
TRAINER = REPO / "examples" / "trainer_basic" / "trainer"


def test_debug_output_shows_the_work_but_not_the_token(fake_apis: FakeGoogleApis, tmp_path: Path) -> None:
    env = {
        "CLOUDSDK_AUTH_ACCESS_TOKEN": TOKEN,
        "CLOUDSDK_CORE_PROJECT": "p",
        "CLOUDSDK_API_ENDPOINT_OVERRIDES_ML": fake_apis.url,
        "STORAGE_EMULATOR_HOST": fake_apis.url.rstrip("/"),
    }
    proc = run_cli_process(
        ["--verbosity", "debug", "training", "verbose_job",
         "--region", "us-central1", "--package-path", str(TRAINER), "--staging-bucket", "gs://bkt",
         "--module-name", "trainer.task", "--runtime-version", "2.11"],
        env=env, cwd=tmp_path, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "DEBUG: job body: " in proc.stderr
    assert "INFO: package " in proc.stderr
    assert TOKEN not in proc.stderr + proc.stdout
    # The token really was used: the server saw it.
    assert any(r.headers.get("authorization") == f"Bearer {TOKEN}" for r in fake_apis.requests)


@pytest.mark.parametrize(
    "message",
    [f"header Authorization: Bearer {TOKEN}", f"token={TOKEN}", "Bearer abc.def-ghi"],
)
def test_redaction_filter_removes_tokens(message: str) -> None:
    record = logging.LogRecord("x", logging.DEBUG, __file__, 1, "%s", (message,), None)
    assert RedactSecrets([TOKEN]).filter(record)
    text = record.getMessage()
    assert TOKEN not in text and "abc.def-ghi" not in text
    assert "<redacted>" in text


def test_default_verbosity_hides_debug(fake_apis: FakeGoogleApis) -> None:
    proc = run_cli_process(
        ["training", "quiet_job", "--region", "us-central1",
         "--packages", "gs://bkt/t.tar.gz", "--module-name", "trainer.task", "--runtime-version", "2.11",
         "--dry-run"],
        timeout=60,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "DEBUG" not in proc.stderr


def test_a_dry_run_loads_no_logging_yet_a_note_is_still_a_warning_line(tmp_path: Path) -> None:
    """Logging is set up when a module first loads it (cli.configure_logging), so a clean dry run never pays
    for it, and a note still comes out as ``WARNING: file:line: ...``."""
    flags = ["--region", "us-central1", "--module-name", "trainer.task", "--runtime-version", "2.11"]
    args = ["training", "j1", "--packages", "gs://bkt/t.tar.gz", "--dry-run", "--format", "json"]
    probe = (
        "import runpy, sys\n"
        f"sys.argv = ['mlsubmit', *{[*args, *flags]!r}]\n"
        "try:\n    runpy.run_module('mlsubmit', run_name='__main__')\n"
        "except SystemExit as end:\n    assert end.code in (0, None), end.code\n"
        "print('logging loaded:', 'logging' in sys.modules, file=sys.stderr)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    clean = subprocess.run(
        [sys.executable, "-c", probe], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert clean.stderr.strip().splitlines()[-1] == "logging loaded: False", clean.stderr

    config = tmp_path / "note.yaml"
    config.write_text(
        "trainingInput:\n  region: us-central1\n  runtimeVersion: '2.11'\n  pythonModule: trainer.task\n"
        "  scaleTier: CUSTOM\n  masterType: n1-standard-4\n  workerType: n1-standard-4\n  workerCount: 010\n"
    )
    noted = run_cli_process(
        [*args, "--config", str(config)], env={"CLOUDSDK_AUTH_ACCESS_TOKEN": TOKEN}, cwd=tmp_path
    )
    assert noted.returncode == 0, noted.stderr
    assert noted.stderr.startswith(
        f"WARNING: {config}:8: $.trainingInput.workerCount: 010 is an octal number"
    )
