"""The plan request the image options of `training` and `export` feed (docs/containers.md; the options are the
image group of ``cli/options.py``), and `export`'s plan made real."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mlsubmit.targets.translate import Kind


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


def export_plan(request: Any, opts: Mapping[str, Any], *, kind: Kind) -> tuple[Any, Any]:
    """``export``'s plan and what to print of it. With local packages it is made real first, as ``training``
    makes it: the packages staged, or with ``--build-image`` the image ensured (the body then runs it pinned by
    digest). No job. ``--dry-run`` (or nothing local): offline, no credentials; a dry run prints
    :meth:`Plan.printed`, as ``training --dry-run`` does (made while the image's context exists)."""
    from contextlib import ExitStack

    from mlsubmit.cli.output import status
    from mlsubmit.services.settings import Settings
    from mlsubmit.submit.plan import planned
    from mlsubmit.submit.run import realize

    with ExitStack() as command, planned(plan_request(request, opts, target=kind)) as plan:
        if opts.get("dry_run"):
            return plan, plan.printed()  # nothing uploaded, built or asked of a service
        if not plan.uploads and plan.image is None:
            return plan, plan.body  # only gs:// packages or a container: nothing to do before printing
        connection = {k: opts.get(k) for k in ("project", "access_token_file", "api_endpoint")}
        settings = command.enter_context(Settings.for_job(plan, request.env, **connection, notify=status))
        done, sent = realize(plan, settings)
        if plan.image is None:
            status(f"Staged {len(plan.uploads)} package(s) for the export ({sent} bytes sent).")
        return done, done.body
