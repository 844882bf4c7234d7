"""The image options of `training` and `export` (README "Containers"), declared once, and the step they make."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import click

IMAGE_OPTIONS: tuple[tuple[str, dict[str, Any]], ...] = (
    (
        "--build-image",
        {
            "is_flag": True,
            "default": None,
            "help": "Build the trainer into an image (content-tagged, reused when unchanged) and run the job in it, "
            "pinned by digest (vertex.buildImage in the config).",
        },
    ),
    (
        "--output-image-uri",
        {
            "metavar": "REGISTRY/PATH/NAME",
            "help": "With --build-image: where the image goes, no tag (default "
            "REGION-docker.pkg.dev/PROJECT/mlsubmit/PACKAGE).",
        },
    ),
    (
        "--base-image",
        {
            "metavar": "IMAGE",
            "help": "With --build-image: the image to build on (default: from the runtime).",
        },
    ),
    (
        "--builder",
        {
            "type": click.Choice(["auto", "cloud-build", "docker", "podman", "buildah"]),
            "default": "auto",
            "show_default": True,
            "help": "With --build-image: who builds (auto: a local engine that answers, else Cloud Build).",
        },
    ),
)


def image_options(f: Any) -> Any:
    """Add the image options to a command."""
    for flag, kwargs in reversed(IMAGE_OPTIONS):
        f = click.option(flag, **kwargs)(f)
    return f


def image_step(opts: Mapping[str, Any], *, cancel_on_interrupt: bool = False) -> Any:
    """The ``--build-image`` step (``follow.image_step.JobImageStep``) for these options; status on stderr."""
    from mlsubmit.cli.output import status
    from mlsubmit.follow.image_step import ImageOptions, JobImageStep

    options = ImageOptions(
        output_image_uri=opts.get("output_image_uri"),
        base_image=opts.get("base_image"),
        builder=str(opts.get("builder") or "auto"),
    )
    return JobImageStep(
        options,
        notify=status,
        emit=lambda line: status(f"[build] {line}"),
        cancel_on_interrupt=cancel_on_interrupt,
    )


def dry_run_with_image(request: Any, opts: Mapping[str, Any]) -> Any:
    """``training --dry-run --target vertex``: the Vertex AI body; with ``--build-image`` ``{"image": ..., "job":
    ...}``, the image being the Dockerfile, content tag, name and Cloud Build request. No network."""
    from pathlib import Path

    from mlsubmit.cli.output import status
    from mlsubmit.processes import temporary_directory
    from mlsubmit.services.connection import resolve_project
    from mlsubmit.submit import plan
    from mlsubmit.targets.hptuning import vertex_body_for

    step = image_step(opts)
    with temporary_directory("mlsubmit-") as tmp:
        mat = plan(request, Path(tmp))
        tagged = step.plan(
            mat.body,
            local=[s.local for s in mat.uploads if s.local is not None],
            remote_packages=request.remote_packages,
            staging_prefix=mat.prepared.staging_prefix,
            project=lambda: resolve_project(opts.get("project"), request.env),
            workdir=Path(tmp),
        )
        view = step.view() if tagged else None
    body, warnings, _ = vertex_body_for(
        mat.body, executor_image_uri=opts.get("executor_image_uri"), built_image=tagged
    )
    for warning in warnings:
        status(f"WARNING: {warning}")
    return {"image": view, "job": body} if view is not None else body


def stage_or_build(request: Any, opts: Mapping[str, Any]) -> tuple[dict[str, Any], str | None]:
    """``export`` with local packages: the job body with the packages staged, as ``training`` stages them, or
    with ``--build-image`` the image built (the body, the pinned image)."""
    from pathlib import Path

    from mlsubmit.cli.output import status
    from mlsubmit.processes import temporary_directory
    from mlsubmit.services.settings import Settings
    from mlsubmit.submit import plan, stage

    made: list[Settings] = []

    def settings() -> Settings:
        if not made:
            made.append(Settings.from_flags(request.env, project=opts.get("project"), notify=status))
        return made[0]

    step = image_step(opts)
    with temporary_directory("mlsubmit-") as tmp:
        mat = plan(request, Path(tmp))
        tagged = step.plan(
            mat.body,
            local=[s.local for s in mat.uploads if s.local is not None],
            remote_packages=request.remote_packages,
            staging_prefix=mat.prepared.staging_prefix,
            project=lambda: settings().project(),
            workdir=Path(tmp),
        )
        if tagged is not None:
            return mat.body, step.ensure(settings())
        sent = stage(mat, settings())
        status(f"Staged {len(mat.uploads)} package(s) ({sent} bytes sent).")
        return mat.body, None
