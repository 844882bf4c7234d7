"""The image options of `training` and `export` (docs/containers.md), declared once, and the step they make."""

from __future__ import annotations

from collections.abc import Callable, Mapping
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


def image_step(opts: Mapping[str, Any], *, cancel_on_interrupt: bool = False) -> Any:
    """The ``--build-image`` step (``follow.image_step.JobImageStep``) for these options; status on stderr.
    Made on first use: a command whose job builds no image (every ml v1 job) never loads the image code."""

    def make() -> Any:
        from mlsubmit.cli.output import status
        from mlsubmit.follow.image_step import JobImageStep
        from mlsubmit.job.imageref import ImageOptions

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

    return _OnFirstUse(make)


class _OnFirstUse:
    """Stands for the object ``make()`` returns, made when one of its attributes is first asked for."""

    def __init__(self, make: Callable[[], Any]) -> None:
        self._make = make
        self._made: Any = None

    def __getattr__(self, name: str) -> Any:
        if self._made is None:
            self._made = self._make()
        return getattr(self._made, name)


def export_plan(request: Any, opts: Mapping[str, Any], *, kind: Kind) -> Any:
    """``export``'s plan. With local packages it is made real first, as ``training`` makes it: the packages
    staged, or with ``--build-image`` the image ensured (the body then runs it pinned by digest). No job."""
    from contextlib import ExitStack

    from mlsubmit.cli.output import status
    from mlsubmit.services.settings import Settings
    from mlsubmit.submit import planned, stage

    with (
        ExitStack() as command,
        planned(
            request,
            target=kind,
            executor_image_uri=opts.get("executor_image_uri"),
            namespace=opts.get("namespace"),
            image=image_step(opts),
        ) as plan,
    ):
        if not plan.uploads and plan.image is None:
            return plan  # only gs:// packages or a container: nothing to do before printing
        settings = command.enter_context(
            Settings.for_job(plan, request.env, project=opts.get("project"), notify=status)
        )
        if plan.image is not None:
            return plan.with_image(plan.image.ensure(settings))
        sent = stage(plan, settings)
        status(f"Staged {len(plan.uploads)} package(s) for the export ({sent} bytes sent).")
        return plan
