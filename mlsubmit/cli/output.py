"""Reporters: results on stdout (text, JSON or YAML; `jobs list` as its pages arrive), diagnostics on stderr, a dry
run's cost, the preflight's report (`preflight`, `training --dry-run --preflight`) and the upload's progress bar."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from itertools import chain
from typing import TYPE_CHECKING, Any, TextIO

import click

from mlsubmit.cli.serialize import json_text, yaml_text
from mlsubmit.errors import MlsubmitError, PreflightRefused

if TYPE_CHECKING:
    from mlsubmit.api import Call
    from mlsubmit.console import Console
    from mlsubmit.submit.plan import Plan

FORMATS = ("text", "json", "yaml")
_MB = 1024 * 1024
BLOCK = 500  # lines per write of `jobs list`


def emit(data: Any, fmt: str) -> None:
    """A result on stdout (``text`` is YAML, as gcloud), read back exactly (``cli.serialize``)."""
    click.echo(json_text(data) if fmt == "json" else yaml_text(data).rstrip("\n"))


def show_job(job: dict[str, Any], fmt: str, preflight: dict[str, Any] | None = None) -> None:
    """The job on stdout (with the preflight report, when one ran): whole in json/yaml, its summary in text."""
    from mlsubmit.services.poll import job_summary

    job = job if preflight is None else {**job, "preflight": preflight}
    emit(job if fmt != "text" else job_summary(job), fmt)


def status(message: str) -> None:
    """Print a diagnostic or progress line on stderr (control characters neutralised: it may quote a server)."""
    from mlsubmit.services.answers import neutralize

    click.echo(neutralize(message, keep_newlines=True), err=True)


def warn(notes: Iterable[object]) -> None:
    """Each of ``notes`` as a ``WARNING:`` line on stderr."""
    for note in notes:
        status(f"WARNING: {note}")


def _json(jobs: Iterator[dict[str, Any]]) -> Iterator[str]:
    for i, job in enumerate(jobs):
        yield ("[\n" if i == 0 else ",\n") + "  " + json_text(job).replace("\n", "\n  ")
    yield "\n]\n"


def _yaml(jobs: Iterator[dict[str, Any]]) -> Iterator[str]:
    return (yaml_text([one]) for one in jobs)


def _table(jobs: Iterator[dict[str, Any]]) -> Iterator[str]:
    from mlsubmit.follow.trials import is_tuning_job
    from mlsubmit.services.answers import neutralize

    rows: list[tuple[str, str, str, bool]] = [("JOB_ID", "STATUS", "CREATED", False)]
    for one in jobs:
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
    """``jobs list``: ``jobs`` on stdout in ``fmt`` as the pages arrive (memory stays flat), the bytes of printing
    the whole list at once, and nothing before the first page (a refused first call leaves stdout empty);
    "Listed 0 items." for none in text."""
    found = iter(jobs)
    first = next(found, None)
    if first is None:
        if fmt == "text":
            status("Listed 0 items.")
        else:
            emit([], fmt)
        return
    writer = {"json": _json, "yaml": _yaml}.get(fmt, _table)
    for text in writer(chain([first], found)):
        click.echo(text, nl=False)


def show_checkup(made: Call, plan: Plan) -> None:
    """The image the plan builds, on which base and why; then what the trainer checkup finds (docs/migrate.md)."""
    if plan.image is not None:  # a default TensorFlow says which one: Keras 3 or not
        spec = plan.image.spec
        status(f"Image {spec.tagged}: on {spec.base} ({spec.base_reason})")
    warn(made.trainer_warnings(plan))


def print_checks(checks: Iterable[Any], fmt: str) -> None:
    """Each check as one line on stdout, or the JSON/YAML report."""
    from mlsubmit.services.preflight import report

    found = list(checks)
    if fmt != "text":
        emit(report(found), fmt)
        return
    for check in found:
        click.echo(check.line())


def preflight_alone(made: Call, *, fmt: str, then_emit_body: bool = False) -> dict[str, Any]:
    """The Vertex AI preflight of the job (``then_emit_body``: then the plan); returns the report."""
    from mlsubmit.submit.preflight import check, judged, plan_checks

    with made.planned("vertex") as plan:
        if then_emit_body:
            show_checkup(made, plan)
        warn(plan.warnings)
        with made.settings(plan, status) as settings:
            if then_emit_body:
                whole = refused_report(lambda: check(plan, settings), fmt)
                emit(plan.printed(), fmt)
                return dict(whole)
            checks = plan_checks(plan, settings)
            print_checks(checks, fmt)
    return dict(judged(checks))


def refused_report(step: Callable[[], Any], fmt: str) -> Any:
    """Run ``step``; a refused preflight prints its report on stdout (json/yaml), then goes on."""
    try:
        return step()
    except PreflightRefused as err:
        if fmt != "text" and err.report is not None:
            emit(err.report, fmt)
        raise


def show_cost(plan: Plan, opts: dict[str, Any], result: Any, fmt: str) -> None:
    """A dry run's stdout: ``result`` with its cost (text: as YAML comments; json/yaml: when asked)."""
    cost = plan.cost
    asked = any(v is not None for v in (opts.get("max_cost"), opts.get("expected_hours"), plan.budget))
    if asked:
        warn_if_stale(plan)  # nothing to say without a cost
    others = [(c, e) for c, e in plan.candidate_costs if c.number != 0]  # failover candidates
    if cost is None or fmt == "text" or not asked:
        emit(result, fmt)
        if cost is not None and fmt == "text":
            click.echo(f"# {cost.line()}")
            for candidate, found in others:
                click.echo(f"# candidate {candidate.number} ({candidate.region}): {found.line()}")
        return
    # the whole plan ({job, image, candidates, uploads}), or the body as its job
    shown = dict(result) if result is not plan.body else {"job": result}
    shown["cost"] = cost.as_dict()
    if others:
        shown["cost"]["candidates"] = [
            {"candidate": c.number, "region": c.region, **e.as_dict()} for c, e in others
        ]
    emit(shown, fmt)


def warn_if_stale(plan: Plan) -> None:
    """A WARNING when the plan was priced from a table read over 90 days ago."""
    from datetime import date

    from mlsubmit.targets.prices import stale_warning

    if plan.cost is not None and (stale := stale_warning(plan.cost.table_read, date.today())):
        status(f"WARNING: {stale}")


def report_error(err: MlsubmitError) -> None:
    """An error as gcloud prints it: ``ERROR: ...`` lines on stderr, control characters neutralised."""
    for line in err.report_lines():
        status(line)


def make_console(*, logs_to: str = "stderr") -> Console:
    """The console: status on stderr, log lines on ``logs_to``, children's bytes on our streams."""
    import sys

    from mlsubmit.console import Console, bytes_of

    return Console(
        notify=status,
        emit=lambda line: click.echo(line, err=logs_to == "stderr"),
        stdout=bytes_of(sys.stdout),
        stderr=bytes_of(sys.stderr),
        interactive=sys.stderr.isatty(),
    )


class ProgressBar:
    """Draws `name [#####.....]  45%  90.0/200.0 MB` on one line, redrawn only when the percentage moves."""

    def __init__(self, stream: TextIO, width: int = 30) -> None:
        self._stream = stream
        self._width = width
        self._last: tuple[str, int] | None = None

    def __call__(self, uri: str, done: int, total: int) -> None:
        """Report that `done` of `total` bytes of `uri` have been handed to the network."""
        percent = 100 if total <= 0 else min(100, done * 100 // total)
        name = uri.rsplit("/", 1)[-1]
        if self._last == (uri, percent):
            return
        self._last = (uri, percent)
        filled = self._width * percent // 100
        bar = "#" * filled + "." * (self._width - filled)
        line = f"\rUploading {name} [{bar}] {percent:3d}% {done / _MB:.1f}/{total / _MB:.1f} MB"
        self._stream.write(line + ("\n" if percent == 100 else ""))
        self._stream.flush()


def progress_bar_for(stream: TextIO) -> ProgressBar | None:
    """A ProgressBar on `stream` if it is a terminal, else None (no progress output at all)."""
    return ProgressBar(stream) if getattr(stream, "isatty", lambda: False)() else None
