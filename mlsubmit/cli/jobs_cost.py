"""The run ledger's commands (docs/cost.md): `jobs rerun JOB [NEW_JOB]`, `jobs cost`, and the lines a submit and
a job's end add to it. A ledger that cannot be written never fails a submit: it is a warning (the job exists)."""

from __future__ import annotations

import copy
import os
import sys
from collections.abc import Mapping
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any

import click

from mlsubmit.api.handle import Connection
from mlsubmit.cli.flagtypes import Duration, KeyValues
from mlsubmit.cli.options import connection_options, dry_run_option, format_option
from mlsubmit.cli.output import emit, status, warn
from mlsubmit.errors import LedgerError, MlsubmitError, UsageError
from mlsubmit.job.values import url_value_problem
from mlsubmit.services import ledger
from mlsubmit.services.backends import TERMINAL_STATES

if TYPE_CHECKING:
    from pathlib import Path

    from mlsubmit.job.validate import TrainingRequest
    from mlsubmit.submit.plan import Plan
    from mlsubmit.submit.run import Submitted

NO_GCS_MANIFEST = "MLSUBMIT_NO_GCS_MANIFEST"  # =1: keep the manifest in the local ledger only


def manifest(plan: Plan, done: Submitted, request: TrainingRequest, argv: list[str]) -> dict[str, Any]:
    """The ``submit`` line: what was sent, from where, at what estimated price."""
    from pathlib import Path

    from mlsubmit import __version__
    from mlsubmit.sdist.digest import digests_of

    body = done.sent if done.sent is not None else plan.body
    regions = [a.get("region") for a in done.attempts if a.get("region")] or [plan.region]
    return {
        "format": ledger.FORMAT,
        "kind": "submit",
        "time": ledger.now(),
        "jobId": done.job_id,
        "mlsubmitVersion": __version__,
        "argv": ledger.scrub_argv(argv),
        "git": ledger.git_state(Path(request.package_path or ".").resolve()),
        "configHash": ledger.file_hash(request.config),
        "flagsHash": ledger.canonical_hash(dict(request.flags.given)),
        "packages": [
            {"uri": s.uri, "sha256": (s.digests or digests_of(s.local)).sha256 if s.local else None}
            for s in plan.staged
        ],
        "images": ledger.images_of(body),
        "target": plan.target,
        "service": plan.service,
        "collection": plan.collection,
        "project": done.settings.project(),
        # failover: the body recorded is the job as written, so a rerun sends it to the job's own region
        "region": plan.region if done.sent is None else (done.settings.region or plan.region),
        "regions": regions,
        "attempts": done.attempts,
        "pricesRead": plan.cost.table_read if plan.cost else None,
        "estimate": plan.cost.as_dict() if plan.cost else None,
        "bodyHash": ledger.canonical_hash(body),
        "body": body,
    }


def record_submit(plan: Plan, done: Submitted, request: TrainingRequest) -> None:
    """Add the manifest to the local ledger and beside the staged packages; a problem is a warning."""
    argv = click.get_current_context().meta.get("argv") or list(sys.argv)
    try:
        record = manifest(plan, done, request, argv)
    # the job exists: a ledger that cannot describe it must not turn that into a failure
    except Exception as err:
        status(f"WARNING: the run ledger could not describe job {done.job_id}: {err!r}")
        return
    _append(ledger.ledger_path(request.env), record, "; the job was submitted all the same")
    prefix = plan.prepared.staging_prefix
    if not prefix or not plan.uploads or request.env.get(NO_GCS_MANIFEST) == "1":
        return
    import json
    import tempfile
    from pathlib import Path

    from mlsubmit.services.staging import StagedFile
    from mlsubmit.services.storage import upload

    uri = f"{prefix.rstrip('/')}/mlsubmit-manifest-{done.job_id}.json"
    with tempfile.TemporaryDirectory(prefix="mlsubmit-manifest-") as folder:
        local = Path(folder) / "manifest.json"
        local.write_text(json.dumps(record, indent=1, sort_keys=True, default=str), encoding="utf-8")
        try:
            upload([StagedFile(local, uri)], done.settings.storage(), retry=done.settings.storage_retry)
        except MlsubmitError as err:
            status(
                f"WARNING: the manifest could not be put at {uri}: {err}; the job was submitted all the same"
            )


def record_end(job_id: str, job: Mapping[str, Any]) -> None:
    """Add a job's ``end`` line once it has ended (`--wait`, `jobs describe`, `jobs wait`); once per state."""
    from mlsubmit.services.poll import state_of

    path = ledger.ledger_path(dict(os.environ))
    if path is None or state_of(job) not in TERMINAL_STATES:  # the ml-style states every backend reports
        return
    try:
        records, _notes = ledger.read(path)
        if (manifest := ledger.latest(records, job_id, "submit")) is None:
            return  # not submitted from here: nothing to price it by
        line = ledger.end_record(job_id, job, manifest)
        last = ledger.latest(records, job_id, "end")
        if not last or any(last.get(k) != line[k] for k in ("state", "startTime", "endTime")):
            ledger.append(path, line)
    except LedgerError as err:
        status(f"WARNING: {err}")


def _append(path: Path | None, line: dict[str, Any], more: str = "") -> None:
    """Add ``line`` to the ledger (when there is one); a ledger that cannot be written is a warning."""
    try:
        if path is not None:
            ledger.append(path, line)
    except LedgerError as err:
        status(f"WARNING: {err}{more}")


def _records() -> tuple[list[dict[str, Any]], list[str]]:
    path = ledger.ledger_path(dict(os.environ))
    if path is None:
        raise UsageError("no run ledger: set HOME or XDG_STATE_HOME (docs/cost.md)")
    records, notes = ledger.read(path)
    warn(notes)
    return records, notes


def renamed(body: dict[str, Any], new_id: str, service: str) -> dict[str, Any]:
    """The body under a new id (ml's ``jobId``; Vertex AI's ``displayName`` and id label), nothing else."""
    from mlsubmit.job.vocab import JOB_ID_LABEL, job_id_label

    out = copy.deepcopy(body)
    if service == "ml":
        out["jobId"] = new_id
    else:
        out["displayName"] = new_id
        labels = out.get("labels")
        if isinstance(labels, dict) and JOB_ID_LABEL in labels:
            labels[JOB_ID_LABEL] = job_id_label(new_id)
    return out


@click.command()
@click.argument("job")
@click.argument("new_job", required=False)
@dry_run_option(help="Print the body the rerun would send; create nothing.")
@connection_options
@format_option
def rerun(job: str, new_job: str | None, dry_run: bool, fmt: str, **connection: Any) -> None:
    """Submit JOB's exact body again (same packages and image by digest, same args) as NEW_JOB."""
    records, _notes = _records()
    found = ledger.latest(records, job, "submit")
    if found is None or not isinstance(found.get("body"), dict):
        raise UsageError(
            f"JOB: no submit of {job!r} in the run ledger (`mlsubmit jobs cost` lists what it knows)"
        )
    new_id = new_job or f"{job[:100]}_rerun_{datetime.now(timezone.utc):%Y%m%d_%H%M%S}"
    if problem := url_value_problem("job id", new_id):
        raise UsageError(f"NEW_JOB: {problem}.")
    service = str(found.get("service") or "ml")
    body = renamed(found["body"], new_id, service)
    if dry_run:
        emit(body, fmt)
        return
    link = Connection(connection["access_token_file"], connection["api_endpoint"])
    project = connection["project"] or found.get("project")
    settings = link.settings(service, project, found.get("region"), status)
    click.get_current_context().call_on_close(settings.close)
    backend = settings.jobs_backend(collection=str(found.get("collection") or "jobs"))
    result = backend.create(body, new_id)
    argv = ledger.scrub_argv(["mlsubmit", "jobs", "rerun", job, new_id])
    line = {**found, "time": ledger.now(), "jobId": new_id, "argv": argv, "rerunOf": job, "attempts": []}
    _append(
        ledger.ledger_path(dict(os.environ)), line | {"bodyHash": ledger.canonical_hash(body), "body": body}
    )
    status(f"Job [{new_id}] submitted successfully (a rerun of {job}).")
    emit({"jobId": new_id, "state": result.job.get("state", "QUEUED")} if fmt == "text" else result.job, fmt)


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


@click.command()
@click.option("--since", type=Duration(), metavar="D", help="Only jobs submitted in the last D (7d).")
@click.option("--label", type=KeyValues(), multiple=True, help="Only jobs with these labels: k=v[,k=v].")
@format_option
def cost(since: float | None, label: tuple[dict[str, str], ...], fmt: str) -> None:
    """What the run ledger knows jobs cost: per job (from its start and end, else its estimate) and in total."""
    records, notes = _records()
    wanted = {k: v for part in label for k, v in part.items()}
    by_job: dict[str, dict[str, Any]] = {}  # a job submitted twice counts once: the last
    start = datetime.now(timezone.utc) - timedelta(seconds=since or 0)
    limit = start.strftime("%Y-%m-%dT%H:%M:%SZ") if since is not None else ""
    for submit in (r for r in records if r.get("kind") == "submit" and str(r.get("time") or "") >= limit):
        labels = _dict(_dict(submit.get("body")).get("labels"))
        if any(labels.get(k) != v for k, v in wanted.items()):
            continue
        job_id = str(submit["jobId"])
        ended = ledger.latest(records, job_id, "end") or {}
        end = {k: ended.get(k) for k in ("state", "hours", "cost")}
        estimate = {k: _dict(submit.get("estimate")).get(k) for k in ("usdPerHour", "upperBound")}
        by_job[job_id] = {"jobId": job_id, "submitted": submit.get("time"), **end, **estimate}
    rows = list(by_job.values())
    total = round(sum(r["cost"] for r in rows if isinstance(r["cost"], (int, float))), 2)
    unpriced = [r["jobId"] for r in rows if r["cost"] is None]
    if fmt != "text":
        emit({"jobs": rows, "total": total, "notCosted": unpriced, "skippedLines": notes}, fmt)
        return
    click.echo(f"{'JOB_ID':40s} {'STATE':10s} {'HOURS':>8s} {'COST':>10s} {'UPPER_BOUND':>12s}")
    for row in rows:
        hours = f"{row['hours']:.2f}" if isinstance(row["hours"], (int, float)) else "-"
        spent = f"${row['cost']:,.2f}" if isinstance(row["cost"], (int, float)) else "-"
        bound = f"${row['upperBound']:,.2f}" if isinstance(row["upperBound"], (int, float)) else "-"
        click.echo(f"{row['jobId'][:40]:40s} {row['state'] or '-':10s} {hours:>8s} {spent:>10s} {bound:>12s}")
    more = f" ({len(unpriced)} not yet ended or priced)" if unpriced else ""
    click.echo(f"TOTAL ${total:,.2f} over {len(rows)} jobs{more}")
