"""The table-driven rule cases' vocabulary: config snippets, flags, the `training --dry-run` runner and the
expected refusals and acceptances (tests/unit/job/test_rules.py)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result

from tests.fakes.cli import run_cli

JOB = "my_job"


CONFIG = "config.yaml"


# A valid runtime-version job; cases append lines below it (inside trainingInput when indented by two spaces).
BASE = """\
trainingInput:
  region: us-central1
  runtimeVersion: "2.11"
  pythonVersion: "3.7"
  pythonModule: trainer.task
  packageUris:
  - gs://my-bucket/trainer-0.1.tar.gz
"""


# The same job without a runtime, package or module: a custom container job once an image is given.
BARE = """\
trainingInput:
  region: us-central1
"""


CONTAINER = """\
trainingInput:
  region: us-central1
  masterConfig:
    imageUri: gcr.io/my-project/trainer:1
"""


# Flags that complete a job given without a config file.
JOB_FLAGS = (
    "--region",
    "us-central1",
    "--runtime-version",
    "2.11",
    "--module-name",
    "trainer.task",
    "--packages",
    "gs://my-bucket/trainer-0.1.tar.gz",
)


NO_PACKAGES = ("--region", "us-central1", "--runtime-version", "2.11", "--module-name", "t.m")


CUSTOM = ("--scale-tier", "custom", "--master-machine-type", "n1-standard-4")


def cfg(extra: str = "", base: str = BASE) -> str:
    """``base`` followed by ``extra``, written as it stands in the file (two spaces: inside trainingInput)."""
    return base + extra


@dataclass(frozen=True)
class At:
    """The file line holding ``snippet`` (which must occur on exactly one line of the config)."""

    snippet: str


@dataclass(frozen=True)
class Refused:
    config: str | None
    flags: tuple[str, ...]
    where: At | str  # At(...) for a file value, the flag (or "JOB argument") for a flag value, "" for neither
    path: str
    message: str
    env: dict[str, str] = field(default_factory=dict)
    job: str = JOB


@dataclass(frozen=True)
class Accepted:
    config: str | None
    flags: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    job: str = JOB


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A working directory with a trainer package, a folder that is not a package and local package files."""
    (tmp_path / "trainer").mkdir()
    (tmp_path / "trainer" / "__init__.py").write_text("")
    (tmp_path / "trainer" / "task.py").write_text("print('hi')\n")
    (tmp_path / "notpkg").mkdir()
    (tmp_path / "notpkg" / "task.py").write_text("")
    for sub in ("a", "b"):
        (tmp_path / sub).mkdir()
        (tmp_path / sub / "extra-1.0.tar.gz").write_bytes(b"not really a tarball")
    monkeypatch.chdir(tmp_path)
    yield tmp_path


def invoke(
    config: str | None, flags: tuple[str, ...], job: str = JOB, env: dict[str, str] | None = None
) -> Result:
    args = ["training", job, "--dry-run", "--format", "json"]
    if config is not None:
        Path(CONFIG).write_text(config, encoding="utf-8")
        args += ["--config", CONFIG]  # before the flags: they may end with `-- USER_ARGS`
    return run_cli([*args, *flags], env=env)


def location(where: At | str, config: str | None) -> str:
    if isinstance(where, At):
        assert config is not None
        hits = [n for n, text in enumerate(config.splitlines(), 1) if where.snippet in text]
        assert len(hits) == 1, f"snippet {where.snippet!r} must be on exactly one line, found {hits}"
        return f"{CONFIG}:{hits[0]}: "
    return f"{where}: " if where else ""


def error_lines(result: Result) -> list[str]:
    return [line for line in result.stderr.splitlines() if line.startswith("ERROR: ")]


def assert_refused(result: Result, case: Refused) -> None:
    assert result.exit_code == 2, (result.exit_code, result.stdout, result.stderr)
    assert "Traceback" not in result.output
    assert result.stdout == "", "nothing goes to stdout when the job is refused"
    prefix = f"ERROR: {location(case.where, case.config)}{case.path}: "
    hits = [line for line in error_lines(result) if line.startswith(prefix) and case.message in line]
    assert hits, f"no error line starting {prefix!r} and containing {case.message!r} in:\n{result.stderr}"


def assert_accepted(result: Result) -> dict[str, Any]:
    assert result.exit_code == 0, result.stderr
    assert result.stderr == ""
    body: dict[str, Any] = json.loads(result.stdout)
    return body


def refused(id: str, *args: Any, **kwargs: Any) -> Any:
    return pytest.param(Refused(*args, **kwargs), id=id)


def accepted(id: str, *args: Any, **kwargs: Any) -> Any:
    return pytest.param(Accepted(*args, **kwargs), id=id)
