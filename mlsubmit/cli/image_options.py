"""The step the image options of `training` and `export` make (docs/containers.md; the options are the image
group of ``cli/options.py``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from mlsubmit.targets.translate import Kind


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
            Settings.for_job(
                plan,
                request.env,
                project=opts.get("project"),
                access_token_file=opts.get("access_token_file"),
                api_endpoint=opts.get("api_endpoint"),
                notify=status,
            )
        )
        if plan.image is not None:
            return plan.with_image(plan.image.ensure(settings))
        sent = stage(plan, settings)
        status(f"Staged {len(plan.uploads)} package(s) for the export ({sent} bytes sent).")
        return plan
