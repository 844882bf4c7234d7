"""The image options of `training` and `export` (docs/containers.md), declared once, and the plan request they
feed."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import click

from mlsubmit.cli.options import F, base_image_option, builder_option, output_image_uri_option
from mlsubmit.targets.translate import Kind


def image_options(f: F) -> F:
    """Add the image options to a command."""
    f = builder_option(
        help="With --build-image: who builds (auto: a local engine that answers, else Cloud Build)."
    )(f)
    f = base_image_option(help="With --build-image: the image to build on (default: from the runtime).")(f)
    f = output_image_uri_option(
        help="With --build-image: where the image goes, no tag (default "
        "REGION-docker.pkg.dev/PROJECT/mlsubmit/PACKAGE)."
    )(f)
    return click.option(
        "--build-image",
        is_flag=True,
        default=None,
        help="Build the trainer into an image (content-tagged, reused when unchanged) and run the job in it, "
        "pinned by digest (vertex.buildImage in the config).",
    )(f)


def plan_request(request: Any, opts: Mapping[str, Any], *, target: Kind) -> Any:
    """The ``submit.PlanRequest`` of a command's parsed options: its target, executor image, namespace, the
    image options (``--build-image`` itself is ``vertex.buildImage`` in the request), and the token file."""
    from mlsubmit.job.imageref import ImageOptions
    from mlsubmit.submit.plan import PlanRequest

    image = ImageOptions(
        output_image_uri=opts.get("output_image_uri"),
        base_image=opts.get("base_image"),
        builder=str(opts.get("builder") or "auto"),
    )
    return PlanRequest(
        request,
        target,
        executor_image_uri=opts.get("executor_image_uri"),
        namespace=opts.get("namespace"),
        image=image,
        token_file=opts.get("access_token_file"),
    )


def export_plan(request: Any, opts: Mapping[str, Any], *, kind: Kind) -> Any:
    """``export``'s plan. With local packages it is made real first, as ``training`` makes it: the packages
    staged, or with ``--build-image`` the image ensured (the body then runs it pinned by digest). No job."""
    from contextlib import ExitStack

    from mlsubmit.cli.output import status
    from mlsubmit.services.settings import Settings
    from mlsubmit.submit.plan import planned
    from mlsubmit.submit.run import realize

    with ExitStack() as command, planned(plan_request(request, opts, target=kind)) as plan:
        if not plan.uploads and plan.image is None:
            return plan  # only gs:// packages or a container: nothing to do before printing
        settings = command.enter_context(
            Settings.for_job(plan, request.env, project=opts.get("project"), notify=status)
        )
        done, sent = realize(plan, settings)
        if plan.image is None:
            status(f"Staged {len(plan.uploads)} package(s) for the export ({sent} bytes sent).")
        return done
