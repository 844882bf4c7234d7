"""``jobs list`` output written as the pages arrive (memory stays flat): the bytes of printing the whole list at
once, and nothing before the first page, so a refused first call leaves stdout empty."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from itertools import chain
from typing import Any

import click

from mlsubmit.cli.output import emit, status
from mlsubmit.cli.serialize import json_text, yaml_text
from mlsubmit.services.answers import neutralize

BLOCK = 500  # lines per write


def _json(first: dict[str, Any], rest: Iterator[dict[str, Any]]) -> Iterator[str]:
    for i, job in enumerate(chain([first], rest)):
        yield ("[\n" if i == 0 else ",\n") + "  " + json_text(job).replace("\n", "\n  ")
    yield "\n]\n"


def _yaml(first: dict[str, Any], rest: Iterator[dict[str, Any]]) -> Iterator[str]:
    return (yaml_text([one]) for one in chain([first], rest))


def _table(first: dict[str, Any], rest: Iterator[dict[str, Any]]) -> Iterator[str]:
    from mlsubmit.follow.trials import is_tuning_job

    rows: list[tuple[str, str, str, bool]] = [("JOB_ID", "STATUS", "CREATED", False)]
    for one in chain([first], rest):
        # The service's text, neutralised as stream-logs does (docs/security.md).
        row = tuple(neutralize(str(one.get(key, ""))) for key in ("jobId", "state", "createTime"))
        rows.append((row[0], row[1], row[2], is_tuning_job(one)))
    widths = [max(len(r[0]) for r in rows), max(len(r[1]) for r in rows)]
    lines = [f"{r[0]:<{widths[0]}}  {r[1]:<{widths[1]}}  {r[2]}".rstrip() for r in rows]
    if any(r[3] for r in rows):
        width = max(len(line) for line in lines)
        marks = ["TUNING", *("yes" if r[3] else "" for r in rows[1:])]
        lines = [f"{line:<{width}}  {mark}".rstrip() for line, mark in zip(lines, marks, strict=True)]
    for start in range(0, len(lines), BLOCK):
        yield "\n".join(lines[start : start + BLOCK]) + "\n"


def write_jobs(jobs: Iterable[dict[str, Any]], fmt: str) -> None:
    """Write ``jobs`` to stdout in ``fmt`` as they come (module docstring); "Listed 0 items." for none in text."""
    found = iter(jobs)
    first = next(found, None)
    if first is None:
        if fmt == "text":
            status("Listed 0 items.")
        else:
            emit([], fmt)
        return
    writer = {"json": _json, "yaml": _yaml}.get(fmt, _table)
    for text in writer(first, found):
        click.echo(text, nl=False)
