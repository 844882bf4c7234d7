"""cli/output: ``jobs list`` streaming output (the same bytes as printing the whole list, with flat memory), and
the upload progress bar (only on a terminal, one line, redrawn only when the percentage moves)."""

from __future__ import annotations

import contextlib
import io
import json
import os
import tracemalloc
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from mlsubmit.cli.output import ProgressBar, emit, progress_bar_for, write_jobs
from mlsubmit.follow.trials import is_tuning_job


def table_at_once(jobs: list[dict[str, Any]]) -> str:
    """The table as `jobs list` printed it before it streamed (the whole list in memory)."""
    rows = [("JOB_ID", "STATUS", "CREATED")]
    rows += [(str(j.get("jobId", "")), str(j.get("state", "")), str(j.get("createTime", ""))) for j in jobs]
    widths = [max(len(row[i]) for row in rows) for i in range(2)]
    table = "\n".join(f"{r[0]:<{widths[0]}}  {r[1]:<{widths[1]}}  {r[2]}".rstrip() for r in rows)
    if not any(is_tuning_job(j) for j in jobs):
        return table
    lines = table.split("\n")
    width = max(len(line) for line in lines)
    marks = ["TUNING", *("yes" if is_tuning_job(j) else "" for j in jobs)]
    return "\n".join(f"{line:<{width}}  {mark}".rstrip() for line, mark in zip(lines, marks, strict=True))


JOBS: list[dict[str, Any]] = [
    {"jobId": "a", "state": "RUNNING", "createTime": "2026-01-01T00:00:00Z", "labels": {"k": "v"}},
    {"jobId": "a_much_longer_job_id_é", "state": "SUCCEEDED", "trainingInput": {"args": ["--x", "ü\n"]}},
    {
        "jobId": "t",
        "state": "FAILED",
        "createTime": "x",
        "trainingInput": {"hyperparameters": {"goal": "MAXIMIZE"}},
    },
    {"state": "QUEUED", "text": "y" * 200},
]
CASES = [
    json.loads(json.dumps(c)) for c in (JOBS, JOBS[:1], JOBS[:2], JOBS * 150)
]  # as parsed: nothing shared; "many" spans more than one BLOCK of text lines


@pytest.mark.parametrize("jobs", CASES, ids=["tuning", "one", "two", "many"])
@pytest.mark.parametrize("fmt", ["json", "yaml", "text"])
def test_the_stream_is_byte_identical_to_the_whole_list(
    jobs: list[dict[str, Any]], fmt: str, capsys: pytest.CaptureFixture[str]
) -> None:
    write_jobs(iter(jobs), fmt)
    out = capsys.readouterr().out
    emit(jobs, fmt)  # the whole list at once
    expected = table_at_once(jobs) + "\n" if fmt == "text" else capsys.readouterr().out
    assert out == expected
    if fmt == "json":
        assert json.loads(out) == jobs
    if fmt == "yaml":
        assert yaml.safe_load(out) == jobs


@pytest.mark.parametrize(
    ("fmt", "out", "err"), [("json", "[]\n", ""), ("yaml", "[]\n", ""), ("text", "", "Listed 0 items.\n")]
)
def test_no_jobs(fmt: str, out: str, err: str, capsys: pytest.CaptureFixture[str]) -> None:
    write_jobs(iter([]), fmt)
    assert capsys.readouterr() == (out, err)


def many(n: int) -> Iterator[dict[str, Any]]:
    for i in range(n):
        yield {"jobId": f"job_{i:06d}", "state": "SUCCEEDED", "createTime": "2026-01-01T00:00:00Z",
               "trainingInput": {"args": [f"--arg-{k}={'v' * 40}" for k in range(40)]}}  # fmt: skip


@pytest.mark.parametrize("fmt", ["json", "yaml", "text"])
def test_memory_stays_flat_for_many_jobs(fmt: str) -> None:
    # Small enough to run in well under a second under tracemalloc, large enough that holding the jobs (or
    # their output) at once would cost three times the bound.
    held = sum(len(json.dumps(j)) for j in many(300))
    assert held > 600_000
    with open(os.devnull, "w") as sink, contextlib.redirect_stdout(sink):
        tracemalloc.start()
        try:
            write_jobs(many(300), fmt)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert peak < held // 3


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_no_progress_bar_when_stderr_is_not_a_terminal() -> None:
    assert progress_bar_for(io.StringIO()) is None


def test_progress_bar_on_a_terminal_draws_one_line_ending_at_100_percent() -> None:
    terminal = FakeTerminal()
    bar = progress_bar_for(terminal)
    assert isinstance(bar, ProgressBar)

    mb = 1024 * 1024
    for done in (0, 50 * mb, 50 * mb + 1, 100 * mb):
        bar("gs://b/job/abc/trainer-0.0.0.tar.gz", done, 100 * mb)

    frames = terminal.getvalue().split("\r")[1:]
    assert len(frames) == 3, "a redraw without progress in whole percent is skipped"
    assert frames[1].startswith("Uploading trainer-0.0.0.tar.gz [###############...............]  50%")
    assert frames[-1] == f"Uploading trainer-0.0.0.tar.gz [{'#' * 30}] 100% 100.0/100.0 MB\n"
    assert terminal.getvalue().count("\n") == 1


def test_empty_file_counts_as_complete() -> None:
    terminal = FakeTerminal()
    ProgressBar(terminal)("gs://b/x/empty.tar.gz", 0, 0)

    assert "100%" in terminal.getvalue()
