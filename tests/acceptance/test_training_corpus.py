"""The config corpus (tests/corpus/): one config per shape people write, each checked as tests/corpus/cases.yaml says.

* every config: a dry run ends with exit 0 or 2, no traceback, only ``ERROR:``/``WARNING:`` lines on stderr and
  not one network connection;
* ``expect: gcloud``: the body equals, in meaning, the body the real gcloud sends for the same command line (all
  gcloud runs at once, in parallel, against one loopback recorder);
* ``expect: refused``: exactly the ERROR lines listed; ``expect: accepted``: the body holds the fields listed.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from mlsubmit.cli import cli
from tests.fakes.api_server import FakeGoogleApis
from tests.fakes.compare import normalize_job_body
from tests.fakes.early import EARLY_WORKERS, Start, early
from tests.fakes.gcloud_oracle import gcloud_available, run_gcloud_batch

CORPUS = Path(__file__).resolve().parents[1] / "corpus"
CASES: dict[str, dict[str, Any]] = yaml.safe_load((CORPUS / "cases.yaml").read_text(encoding="utf-8"))
DEFAULT_FLAGS = ["--module-name", "trainer.task", "--packages", "gs://corpus-bucket/trainer-0.1.tar.gz"]
PROJECT = "corpusproj"


def flags_of(name: str) -> list[str]:
    flags = CASES[name].get("flags", DEFAULT_FLAGS)
    return [str(f) for f in flags]


def job_id(name: str) -> str:
    return "corpus_" + name.replace(".", "_").replace("-", "_")


def command(name: str) -> list[str]:
    return [job_id(name), "--region", "us-central1", "--config", name, *flags_of(name)]


@dataclass
class DryRun:
    exit_code: int
    stdout: str
    stderr: str
    connections: list[Any]


@pytest.fixture(scope="module")
def dry_runs() -> dict[str, DryRun]:
    """`mlsubmit training ... --dry-run --format json` for every config, with every socket connection refused."""
    out: dict[str, DryRun] = {}
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(CORPUS)
        mp.setenv("CLOUDSDK_CORE_PROJECT", PROJECT)
        mp.setenv("CLOUDSDK_AUTH_ACCESS_TOKEN", "corpus-never-used")
        mp.setenv(
            "MLSUBMIT_TARGET", "ml"
        )  # the suite's choice (tests/conftest.py; a module fixture runs first)
        attempts: list[Any] = []

        def no_network(_sock: socket.socket, address: Any) -> None:
            attempts.append(address)
            raise OSError("a dry run must not connect anywhere")

        mp.setattr(socket.socket, "connect", no_network)
        mp.setattr(socket.socket, "connect_ex", no_network)
        for name in CASES:
            attempts.clear()
            result = CliRunner().invoke(cli, ["training", *command(name), "--dry-run", "--format", "json"])
            if result.exception is not None and not isinstance(result.exception, SystemExit):
                raise AssertionError(f"{name}: {result.exception!r}") from result.exception
            out[name] = DryRun(result.exit_code, result.stdout, result.stderr, list(attempts))
    return out


@early
def corpus_gcloud_bodies(start: Start) -> dict[str, dict[str, Any]]:
    """The body the real gcloud sends for every `expect: gcloud` config (one batch, started before the first
    test: tests/fakes/early.py)."""
    if not gcloud_available():
        pytest.skip("needs the gcloud CLI (parity oracle)")
    names = [name for name, case in CASES.items() if case["expect"] == "gcloud"]
    with FakeGoogleApis(project=PROJECT) as server:
        runs = run_gcloud_batch(
            [["ai-platform", "jobs", "submit", "training", *command(name)] for name in names],
            server,
            cwd=CORPUS,
            workers=EARLY_WORKERS,
            base_env=start.env,
        )
    bodies = {}
    for name, run in zip(names, runs, strict=True):
        assert run.returncode == 0, f"{name}: gcloud failed: {run.stderr}"
        bodies[name] = run.job_body
    return bodies


@pytest.fixture(scope="module")
def gcloud_bodies(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    return corpus_gcloud_bodies.result(tmp_path_factory)


def test_every_corpus_file_has_a_case_and_every_case_a_file() -> None:
    files = {p.name for p in CORPUS.iterdir() if p.suffix in (".yaml", ".json") and p.name != "cases.yaml"}
    assert files == set(CASES)
    assert {case["expect"] for case in CASES.values()} == {"gcloud", "refused", "accepted"}


@pytest.mark.parametrize("name", list(CASES))
def test_dry_run_ends_cleanly_without_network(name: str, dry_runs: dict[str, DryRun]) -> None:
    run = dry_runs[name]
    assert run.exit_code in (0, 2), run.stderr
    assert "Traceback" not in run.stderr + run.stdout
    assert all(line.startswith(("ERROR: ", "WARNING: ")) for line in run.stderr.splitlines()), run.stderr
    assert run.connections == []
    warnings = [
        line.removeprefix("WARNING: ") for line in run.stderr.splitlines() if line.startswith("WARNING: ")
    ]
    assert warnings == CASES[name].get("warnings", [])


def _gcloud_cases() -> Iterator[str]:
    return (name for name, case in CASES.items() if case["expect"] == "gcloud")


@pytest.mark.gcloud
@pytest.mark.parametrize("name", list(_gcloud_cases()))
def test_body_equals_what_gcloud_sends(
    name: str, dry_runs: dict[str, DryRun], gcloud_bodies: dict[str, dict[str, Any]]
) -> None:
    run = dry_runs[name]
    assert run.exit_code == 0, run.stderr
    assert normalize_job_body(json.loads(run.stdout)) == normalize_job_body(gcloud_bodies[name])


@pytest.mark.parametrize("name", [n for n, c in CASES.items() if c["expect"] == "refused"])
def test_refused_with_exactly_these_errors(name: str, dry_runs: dict[str, DryRun]) -> None:
    run = dry_runs[name]
    assert run.exit_code == 2 and run.stdout == ""
    assert run.stderr.splitlines() == [f"ERROR: {line}" for line in CASES[name]["errors"]]


def _subset(expected: Any, actual: Any) -> bool:
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(
            k in actual and _subset(v, actual[k]) for k, v in expected.items()
        )
    return bool(expected == actual)


@pytest.mark.parametrize("name", [n for n, c in CASES.items() if c["expect"] == "accepted"])
def test_accepted_where_the_schema_wants_text(name: str, dry_runs: dict[str, DryRun]) -> None:
    run = dry_runs[name]
    assert run.exit_code == 0, run.stderr
    body = json.loads(run.stdout)
    assert _subset(CASES[name]["body"], body), json.dumps(body, indent=1)
