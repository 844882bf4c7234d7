"""`mlsubmit preflight JOB [training flags]`: the read-only checks a submit runs first, alone, each one line
(docs/getting-jobs-to-start.md; `--target kubernetes`: the cluster's, docs/kubernetes.md). Nothing is uploaded or
created. Exit 0 when every check ran and none refused, 2 when one refused, 1 when one could not run."""

from __future__ import annotations

import sys
from typing import Any

import click

from mlsubmit.cli.job_options import build_request, job_command, job_command_options
from mlsubmit.cli.options import connection_options, format_option, kubernetes_options, target_option
from mlsubmit.cli.preflight_report import preflight_alone
from mlsubmit.errors import MlsubmitError, UsageError

__all__ = ["preflight"]


def _preflight(ctx: click.Context, /, job: str, **opts: Any) -> None:
    """Run the preflight of a Vertex AI job, or of a TFJob on a cluster, alone (module docstring)."""
    fmt = opts["fmt"].lower()
    if opts["target"].lower() == "kubernetes":  # the request as `training --target kubernetes` builds it
        from mlsubmit.cli.kubernetes import preflight_kubernetes

        whole = preflight_kubernetes(build_request(ctx, job, target="kubernetes"), fmt=fmt)
    else:
        if any(opts.get(k) for k in ("context", "namespace", "queue")):
            raise UsageError("--context, --namespace and --queue are for --target kubernetes.")
        made = build_request(ctx, job, exclude=("target", "context", "namespace", "queue"), target="vertex")
        whole = preflight_alone(made, fmt=fmt)
    sys.stdout.flush()
    if not whole["ok"]:  # nothing refused (that raised), but some check could not run: not a pass
        unchecked = sum(c["status"] == "unchecked" for c in whole["checks"])
        raise MlsubmitError(  # exit 1: it cannot say the job will start
            f"preflight: {unchecked} of {len(whole['checks'])} check(s) could not run, so the job is not known to "
            "start; fix what those lines say (network, permissions) and run it again."
        )


# `training`'s job groups without following or failover (it starts jobs; the quota check skips candidates);
# the connection group for the APIs the checks read, the Kubernetes group for the cluster's.
preflight = job_command(
    "preflight",
    _preflight,
    job_command_options(follow=False, failover=False),
    target_option(
        default="vertex",
        choices=("vertex", "kubernetes"),  # ml v1 has no preflight: the service runs no new jobs
        shown="vertex, or kubernetes with $MLSUBMIT_TARGET=kubernetes",
        help="vertex: a Vertex AI CustomJob; kubernetes: a TFJob on the kubeconfig's cluster (docs/kubernetes.md).",
    ),
    kubernetes_options,
    connection_options,
    format_option,
)
