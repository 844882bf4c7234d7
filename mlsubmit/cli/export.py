"""`mlsubmit export --format customjob|hptuningjob|tfjob JOB [training flags] -- USER_ARGS`: print the job for today's engines.

The job is merged and validated exactly like `mlsubmit training` (same flags, same config file), then printed
as a Vertex AI CustomJob or HyperparameterTuningJob body, or a Kubernetes TFJob manifest (``kubectl apply -f -``).
No job is created; local packages are staged as `training` stages them (so the output never names code that is
not uploaded), or with ``--build-image`` built into the image the output runs, pinned by digest. Warnings about
what the target cannot express go to stderr.
"""

from __future__ import annotations

from typing import Any

import click

from mlsubmit.cli.training import build_request, with_training_flags

# training options about submitting and following (or spelled differently here): not copied
NOT_COPIED = frozenset(
    {
        "fmt",
        "dry_run",
        "async_",
        "stream_logs",
        "wait",
        "cancel_on_interrupt",
        "target",
        "access_token_file",
        "api_endpoint",
        "preflight",
        "fallback_regions",  # failover is about starting a job (docs/getting-jobs-to-start.md)
        "max_queue_wait",
        # --target kubernetes reaches a cluster (docs/kubernetes.md); export keeps its own --namespace
        "context",
        "namespace",
        "queue",
    }
)
OWN_OPTIONS = ("export_format", "output", "namespace")


def yaml_text(data: Any) -> str:
    """Safe YAML that prints multi-line strings (the TFJob's shell script) as readable ``|`` blocks."""
    from mlsubmit.cli.serialize import yaml_text as safe_yaml

    return safe_yaml(data, literal_blocks=True)


def render(data: Any, output: str) -> str:
    """``data`` as YAML (readable scripts) or JSON, ending in one newline."""
    if output == "json":
        from mlsubmit.cli.serialize import json_text

        return json_text(data) + "\n"
    return yaml_text(data)


def _export(ctx: click.Context, job: str, **opts: Any) -> None:
    """Print the job as a Vertex AI CustomJob or HyperparameterTuningJob body, or a Kubernetes TFJob manifest:
    the plan's body, merged, checked and translated exactly as `training` does."""
    from mlsubmit.cli.image_options import export_plan
    from mlsubmit.cli.output import status

    request = build_request(ctx, job, opts, exclude=OWN_OPTIONS)
    done = export_plan(request, opts, kind=opts["export_format"].lower())
    for message in done.warnings:
        status(f"WARNING: {message}")
    click.echo(render(done.body, opts["output"].lower()), nl=False)


def _build() -> click.Command:
    own = (
        click.Option(
            ["--format", "export_format"],
            type=click.Choice(["customjob", "hptuningjob", "tfjob"], case_sensitive=False),
            required=True,
            help="customjob: a Vertex AI CustomJob body; hptuningjob: a Vertex AI HyperparameterTuningJob "
            "body (for configs with hyperparameters); tfjob: a Kubeflow TFJob manifest.",
        ),
        click.Option(
            ["--output"],
            type=click.Choice(["yaml", "json"], case_sensitive=False),
            default="yaml",
            show_default=True,
            help="Serialisation on stdout.",
        ),
        click.Option(
            ["--executor-image-uri"],
            default=None,
            metavar="IMAGE",
            help="A Vertex AI prebuilt training image for Python package jobs (any other image: --build-image).",
        ),
        click.Option(["--namespace"], default=None, help="Kubernetes namespace of the TFJob (tfjob only)."),
    )
    return with_training_flags(
        "export",
        _export,
        help=(
            "Print the job as a Vertex AI CustomJob or HyperparameterTuningJob, or a Kubernetes TFJob: "
            "mlsubmit export --format customjob|hptuningjob|tfjob JOB [training flags] -- [USER_ARGS]."
        ),
        drop=NOT_COPIED,
        own=own,  # training may already offer --executor-image-uri
    )


export = _build()
