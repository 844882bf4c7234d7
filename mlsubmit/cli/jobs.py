"""`mlsubmit jobs describe|list|cancel|stream-logs|wait` on ml, Vertex AI or a cluster: results on stdout
(``--format json`` always carries ``jobId`` and ``state``), progress on stderr. Exit 0 when the job SUCCEEDED (or
the command did its job), 1 when it FAILED, was CANCELLED, the API failed or ``wait --timeout`` expired; 2 usage."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import click

from mlsubmit.api.handle import Connection, vertex_ref
from mlsubmit.cli.flagtypes import Duration
from mlsubmit.cli.jobs_cost import cost, record_end, rerun
from mlsubmit.cli.options import (
    KUBERNETES_OPTIONS,
    compose,
    connection_options,
    fallback_regions_option,
    format_option,
    interrupt_option,
    option_table,
    region_option,
    target_option,
)
from mlsubmit.cli.output import emit, make_console, show_job, status, write_jobs
from mlsubmit.errors import FollowInterrupted, UsageError, WaitTimeoutError
from mlsubmit.job.values import url_value_problem
from mlsubmit.services.poll import cancel_job, raise_for_outcome

if TYPE_CHECKING:
    from mlsubmit.follow.session import FollowMode
    from mlsubmit.services.settings import Settings
    from mlsubmit.submit.kubernetes import Where as Place

CONSOLE = "https://console.cloud.google.com"


@dataclass(frozen=True)
class Where:
    """Where a jobs command looks (target, region, project, connection, a cluster's) and its format."""

    target: str
    region: str | None
    project: str | None
    fmt: str
    connection: Connection
    context: str | None = None
    namespace: str | None = None

    @functools.cached_property
    def settings(self) -> Settings:
        """The connection settings (these flags, then the environment), closed when the command ends."""
        settings = self.connection.settings(self.target, self.project, self.region, status)
        click.get_current_context().call_on_close(settings.close)
        return settings

    @property
    def place(self) -> Place:
        """A cluster's ``--context`` and ``--namespace`` (docs/kubernetes.md)."""
        from mlsubmit.submit.kubernetes import Where as Place

        return Place.of({"context": self.context, "namespace": self.namespace})

    def backend(self, job: str | None = None) -> Any:
        """The target's jobs backend, ``job`` checked first (docs/security.md): Google's (retries never wait longer
        than the poll interval) or the cluster's (where JOB is a job id or the TFJob's own name)."""
        problem = url_value_problem("job id", job) if job is not None else None
        vertex = self.target == "vertex"
        if self.target == "kubernetes":
            from mlsubmit.cli.kubernetes import name_of, open_cluster
            from mlsubmit.services.kubernetes.kubeconfig import DNS_LABEL

            if job is not None and problem is not None and not DNS_LABEL.fullmatch(job):
                raise UsageError(f"JOB: {job[:80]!r} is neither a job id nor a TFJob name.")
            backend = open_cluster(self.place, dict(os.environ))
            backend.name_of = name_of
            return backend
        if job is not None and problem is not None and not (vertex and vertex_ref(job)):
            more = "; or pass the numeric id or projects/P/locations/R/customJobs/N" if vertex else ""
            raise UsageError(f"JOB: {problem}{more}.")
        return self.settings.jobs_backend(following=True)


def target_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """The options of every jobs command, given to it as one ``where``."""

    @functools.wraps(command)
    def with_where(*args: Any, target: str, fmt: str, **kw: Any) -> Any:
        link = Connection(kw.pop("access_token_file"), kw.pop("api_endpoint"))
        place = {k: kw.pop(k) for k in ("region", "project", "context", "namespace")}
        return command(*args, where=Where(target, fmt=fmt, connection=link, **place), **kw)

    return compose(
        target_option(
            help="Service the job runs on: AI Platform Training (ml), Vertex AI custom jobs (vertex) or TFJobs on "
            "a cluster (kubernetes)."
        ),
        region_option(help="Vertex AI region (else CLOUDSDK_COMPUTE_REGION); ignored by --target ml."),
        connection_options,
        format_option,
        option_table(KUBERNETES_OPTIONS[:2]),  # --context, --namespace (a queue is for submits)
    )(with_where)


def _show_trials(job: dict[str, Any], fmt: str, *, table: bool) -> None:
    """Text output of a tuning job ends with its trials table (``table``) and best trial."""
    from mlsubmit.follow.trials import trials_text

    if fmt == "text" and (text := trials_text(job, table=table)):
        click.echo(text)


@click.group()
def jobs() -> None:
    """See, stop and follow training jobs (AI Platform Training or Vertex AI)."""


@jobs.command()
@click.argument("job")
@target_options
@fallback_regions_option(
    help="Vertex: also look there for the job's failover attempts (docs/getting-jobs-to-start.md)."
)
def describe(job: str, where: Where, fallback_regions: list[str] | None) -> None:
    """Show a job (the whole resource)."""
    backend = where.backend(job)
    found = backend.get(job)
    if where.target != "kubernetes":
        if where.target == "vertex" and not (job.isdigit() or job.startswith("projects/")):
            found = _with_attempts(found, job, where.settings, fallback_regions or [])
        record_end(job, found)  # the run ledger (docs/cost.md)
    emit(found, where.fmt)
    _show_trials(found, where.fmt, table=True)
    if where.target == "ml":
        project = f"project={backend.project}"
        status(f"\nView job in the Cloud Console at:\n{CONSOLE}/ai-platform/jobs/{job}?{project}")
        status(f"\nView logs at:\n{CONSOLE}/logs?resource=ml_job%2Fjob_id%2F{job}&{project}")


def _with_attempts(found: dict[str, Any], job: str, settings: Settings, regions: list[str]) -> dict[str, Any]:
    """The job with ``attempts`` (each job submitted as ``job`` there and in ``regions``) if several."""
    from mlsubmit.services.vertex import VertexJobs
    from mlsubmit.submit.failover import attempts_of

    seen: list[tuple[str, dict[str, Any]]] = []
    for where in dict.fromkeys([settings.require_region(), *regions]):
        backend = settings.in_region(where).jobs_backend(following=True, collection="customJobs")
        if isinstance(backend, VertexJobs):  # find_all looks in both collections
            seen += [(where, j) for j in backend.find_all(job)]
    return {**found, "attempts": attempts_of(seen)} if len(seen) > 1 or regions else found


@jobs.command(name="list")
@click.option("--filter", "filter_", metavar="EXPR", help="Service-side filter, e.g. 'state=FAILED'.")
@click.option("--limit", type=click.IntRange(min=1), help="Show at most N jobs.")
@target_options
def list_(filter_: str | None, limit: int | None, where: Where) -> None:
    """List the project's jobs."""
    backend = where.backend()
    pages = getattr(backend, "iter_list", None)  # ml streams its pages; Vertex AI merges two collections
    write_jobs(pages(filter_, limit) if pages else backend.list(filter_, limit), where.fmt)


@jobs.command()
@click.argument("job")
@target_options
def cancel(job: str, where: Where) -> None:
    """Cancel a job. A job that has already ended is left as it is (exit 0), as gcloud does."""
    backend = where.backend(job)
    cluster = where.target == "kubernetes"
    check = f"`mlsubmit jobs describe {job}{(where.place if cluster else where.settings).hint_flags}`"
    try:
        found, sent = cancel_job(backend, job)
    except KeyboardInterrupt:  # Ctrl-C or SIGTERM while the cancel is in flight: say what may have happened
        raise FollowInterrupted(
            f"interrupted while asking the service to cancel job [{job}]; the request may have reached it. "
            f"Check with {check}, and cancel again if it still runs."
        ) from None
    if sent and cluster:
        status(f"Deletion of TFJob {backend.name_of(job)} requested (Foreground: its pods go first).")
    elif sent:
        status(f"Cancellation of job [{job}] requested; it is {found.get('state')}.")
        status(f"Check it with {check}.")
    else:
        status(f"Job [{job}] has already ended ({found.get('state')}); nothing to cancel.")
    show_job(found, where.fmt)


@jobs.command(name="stream-logs")
@click.argument("job")
@click.option("--task-name", help="Show only this task's logs, e.g. master-replica-0.")
@click.option(
    "--allow-multiline-logs", "allow_multiline", is_flag=True, help="Print multi-line messages as one record."
)
@click.option(
    "--polling-interval",
    type=click.IntRange(min=1),
    metavar="SECONDS",
    help="Fixed seconds between polls (default: 5 s, backing off to 30 s while nothing happens).",
)
@interrupt_option()
@target_options
def stream_logs(job: str, cancel_on_interrupt: bool, where: Where, **how: Any) -> None:
    """Print a job's logs until it ends; exit 0 only if it SUCCEEDED.

    With --format text the log lines go to stdout; with json or yaml they go to stderr and stdout gets the
    final job. Vertex AI jobs print gcloud ai custom-jobs' columns (no trial id).
    """
    _follow(job, where, "stream-logs", cancel_on_interrupt, **how)


@jobs.command()
@click.argument("job")
@click.option(
    "--timeout",
    type=Duration(),
    metavar="D",
    help="Give up after D (30m, 2h, 3600s or seconds): exit 1, the job keeps running.",
)
@interrupt_option()
@target_options
def wait(job: str, timeout: float | None, cancel_on_interrupt: bool, where: Where) -> None:
    """Wait for a job to end, printing each state change; exit 0 only if it SUCCEEDED."""
    _follow(job, where, "wait", cancel_on_interrupt, timeout=timeout)


def _follow(job: str, where: Where, mode: FollowMode, cancel_on_interrupt: bool, **options: Any) -> None:
    """`wait`, `stream-logs`: follow the job to its end, record its end (`wait`), exit with its outcome."""
    from mlsubmit.follow.session import Following, follow, sigterm_as_interrupt
    from mlsubmit.services.retry import PollPolicy

    backend = where.backend(job)
    logs_to = "stdout" if mode == "stream-logs" and where.fmt == "text" else "stderr"
    try:
        if where.target == "kubernetes":  # a TFJob (cli/kubernetes.py)
            from mlsubmit.cli.kubernetes import follow_job

            if cancel_on_interrupt:
                status(
                    "WARNING: --cancel-on-interrupt deletes only a TFJob the same run created (`training --target "
                    "kubernetes`); on Ctrl-C this one keeps running."
                )
            how: dict[str, Any] = {k: options.get(k) for k in ("timeout", "task_name", "polling_interval")}
            how |= {"hint_flags": where.place.hint_flags, "env": dict(os.environ), "logs_to": logs_to}
            final = follow_job(backend, job, logs=mode != "wait", cancel=False, **how)
        else:
            interval = options.pop("polling_interval", None)
            poll = PollPolicy.fixed(interval) if interval else None
            with sigterm_as_interrupt():
                following = Following(mode, cancel_on_interrupt, poll=poll, **options)
                final = follow(backend, job, where.settings, make_console(logs_to=logs_to), following)
    except WaitTimeoutError as err:
        show_job(err.job, where.fmt)
        raise
    if mode == "wait" and where.target != "kubernetes":
        record_end(job, final)  # the run ledger (docs/cost.md)
    if mode == "wait" or where.fmt != "text":
        show_job(final, where.fmt)
    _show_trials(final, where.fmt, table=False)
    raise_for_outcome(final)


jobs.add_command(rerun)  # `jobs rerun` and `jobs cost`: the run ledger (docs/cost.md)
jobs.add_command(cost)
