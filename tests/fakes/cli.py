"""The one way tests run the real CLI: ``run_cli`` in process, ``run_cli_process`` as ``python -m mlsubmit``.

Both return the exit status, stdout and stderr apart, and never swallow an exception: an unexpected traceback
is a test failure, not an exit code. ``run_cli`` is also the ``run_cli`` fixture (tests/conftest.py).

In process (fast; most tests)::

    result = run_cli(["training", "j", "--dry-run"], env={"CLOUDSDK_CORE_PROJECT": "p"})
    assert result.exit_code == 2 and result.stdout == "" and "ERROR: " in result.stderr

As a user's shell would (the installed entry point, signals, real stdin/stdout, child processes)::

    done = run_cli_process(["local", "train", ...], cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr

Signalled (``start_cli_process``): the running child, e.g. to send it SIGINT as Ctrl-C would.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Protocol

from click.testing import CliRunner, Result

import mlsubmit
from mlsubmit.cli import cli

# The folder holding the mlsubmit the tests import (a checkout or site-packages): a subprocess runs that one too.
MLSUBMIT_ROOT = Path(mlsubmit.__file__).resolve().parents[1]


def run_cli(
    args: Sequence[str], *, env: Mapping[str, str | None] | None = None, input: str | bytes | None = None
) -> Result:
    """``mlsubmit ARGS`` in process with click's runner.

    ``env`` adds to the test's environment for the call (a ``None`` value removes a variable); the test's own
    environment is already isolated (tests/conftest.py). The result has ``exit_code``, ``stdout``, ``stderr``
    (kept apart) and ``output`` (both, interleaved as a terminal would show them).
    """
    return CliRunner().invoke(
        cli, list(args), env=dict(env) if env else None, input=input, catch_exceptions=False
    )


def run_cli_process(
    args: Sequence[str],
    *,
    cwd: Path | str | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    """``python -m mlsubmit ARGS`` in a child process, stdin closed, output captured as text.

    ``env`` adds to the test's environment; the child imports the same mlsubmit as the tests. Result:
    ``returncode``, ``stdout``, ``stderr``.
    """
    return subprocess.run(
        [sys.executable, "-m", "mlsubmit", *args],
        cwd=cwd,
        env=_child_env(env),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def start_cli_process(
    args: Sequence[str], *, cwd: Path | str | None = None, env: Mapping[str, str] | None = None
) -> subprocess.Popen[str]:
    """:func:`run_cli_process` without waiting: the running child, to signal it (Ctrl-C is SIGINT) and then
    ``communicate(timeout=...)``. The caller kills it if it is still running when the test ends."""
    return subprocess.Popen(
        [sys.executable, "-m", "mlsubmit", *args],
        cwd=cwd,
        env=_child_env(env),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _child_env(env: Mapping[str, str] | None) -> dict[str, str]:
    """The test's environment plus ``env``, importing the same mlsubmit as the tests."""
    full_env = {**os.environ, **(env or {})}
    full_env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(MLSUBMIT_ROOT), full_env.get("PYTHONPATH")]))
    return full_env


def local_args(command: str, package: Path | str, config: Path | str, *extra: str) -> list[str]:
    """The arguments of ``mlsubmit local COMMAND`` (``train`` or ``tune``) for the module ``trainer.task`` of
    the package folder ``package`` and the job file ``config``."""
    return [
        "local",
        command,
        "--package-path",
        str(package),
        "--module-name",
        "trainer.task",
        "--config",
        str(config),
        *extra,
    ]


def local_tune_args(trainer: Path, config: Path, job_dir: Path | str, *extra: str) -> list[str]:
    """The arguments of ``mlsubmit local tune`` for the module ``trainer.task`` of the package ``trainer``."""
    return local_args("tune", trainer, config, "--job-dir", str(job_dir), *extra)


class RunCli(Protocol):
    """The type of the ``run_cli`` fixture (for annotations in tests)."""

    def __call__(
        self,
        args: Sequence[str],
        *,
        env: Mapping[str, str | None] | None = None,
        input: str | bytes | None = None,
    ) -> Result: ...
