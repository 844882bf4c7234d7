"""Slow work a module fixture only reads, started in a background process as soon as the session's tests are
collected: pytest runs one test at a time, so the machine's other core does it while the tests before that
module run, and the fixture mostly finds it done (the gcloud oracle batches, gcloud's stream-logs, which sleeps
ten seconds before it notices the job ended, and the ``local train --from-package`` runs).

    @early
    def corpus_bodies(start: Start) -> dict[str, Any]:
        with FakeGoogleApis() as server:
            return ... run_gcloud_batch(..., base_env=start.env, workers=EARLY_WORKERS) ...

    @pytest.fixture(scope="module")
    def gcloud_bodies(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
        return corpus_bodies.result(tmp_path_factory)

A process, not a thread: a test that runs ``local train`` in process kills, as the CLI does, every child of
the test process started during the run (``mlsubmit.proc.processes.reaping``), which would include the
commands of work running beside it; the worker process itself was started before any test. The work may only
depend on what no test changes: ``Start.env`` (the environment before the first test, isolated as every test's
is) and folders of its own from ``Start.tmp``; what it returns or raises must pickle. A module that is not
selected starts nothing; without the hooks (or under ``--collect-only``) ``result`` does the work there and
then. tests/conftest.py calls :func:`start_early` and :func:`stop_early`.
"""

from __future__ import annotations

import importlib
import multiprocessing
import os
import tempfile
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, TypeVar

import pytest

from tests.fakes.isolation import isolated

T = TypeVar("T")

#: gcloud processes an early batch runs at once: one, so the tests running beside it keep a core of their own.
EARLY_WORKERS = 1


@dataclass(frozen=True)
class Folders:
    """New folders under ``root`` (what ``tmp_path_factory.mktemp`` gives a test, for the worker process)."""

    root: Path

    def mktemp(self, name: str) -> Path:
        return Path(tempfile.mkdtemp(prefix=name, dir=self.root))


@dataclass(frozen=True)
class Start:
    """What early work may use: the isolated environment before the first test, and folders of its own."""

    env: dict[str, str]
    tmp: Folders


def _start(tmp: pytest.TempPathFactory) -> Start:
    folders = Folders(tmp.mktemp("early"))
    return Start(isolated(os.environ, folders.mktemp("home")), folders)


def _run(module: str, name: str, start: Start) -> tuple[str, object]:
    """In the worker: the registered work ``module.name``, done; a skip comes back as its reason."""
    work = getattr(importlib.import_module(module), name)
    try:
        return "done", work.work(start)
    except pytest.skip.Exception as skipped:
        return "skipped", skipped.msg


class Early(Generic[T]):
    """Work registered with :func:`early`; ``result`` waits for it (and re-raises what it raised)."""

    def __init__(self, work: Callable[[Start], T]) -> None:
        self.work = work
        self.module = work.__module__
        self.future: Future[tuple[str, object]] | None = None

    def result(self, tmp: pytest.TempPathFactory) -> T:
        """The work's result: started early by :func:`start_early`, else done now."""
        if self.future is None:
            return self.work(_start(tmp))
        outcome, value = self.future.result()
        if outcome == "skipped":
            pytest.skip(str(value))
        return value  # type: ignore[return-value]


_REGISTERED: list[Early[object]] = []
_POOL: list[ProcessPoolExecutor] = []


def early(work: Callable[[Start], T]) -> Early[T]:
    """Register ``work`` to start once the tests are collected, when a test of its module is selected; it must
    be a module-level function, registered under its own name (the worker finds it by that name)."""
    registered = Early(work)
    _REGISTERED.append(registered)  # type: ignore[arg-type]
    return registered


def start_early(session: pytest.Session) -> None:
    """Start the work of every selected module, in the order the modules were collected, one at a time."""
    if session.config.option.collectonly:
        return
    selected = {item.module.__name__ for item in session.items if isinstance(item, pytest.Function)}
    todo = [work for work in _REGISTERED if work.module in selected and work.future is None]
    if not todo:
        return
    start = _start(session.config._tmp_path_factory)  # the tmp_path_factory fixture's own object
    # fork: the worker has every collected module already, and starts now, before the first test
    pool = ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("fork"))
    _POOL.append(pool)
    for work in todo:
        work.future = pool.submit(_run, work.module, work.work.__name__, start)


def stop_early() -> None:
    """Drop what has not started (the session ended early) and wait for what runs."""
    while _POOL:
        _POOL.pop().shutdown(wait=True, cancel_futures=True)
