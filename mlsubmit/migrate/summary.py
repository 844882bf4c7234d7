"""What ``mlsubmit training`` says about the trainer before it submits (docs/migrate.md), from the files its
sdist build walked and read: one line for the checkup's errors, and a Vertex AI tuning job's unreadable metric."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mlsubmit.errors import MlsubmitError
from mlsubmit.migrate.checkup import check_package, summary_line
from mlsubmit.migrate.versions import job_facts, on_built_image

if TYPE_CHECKING:
    from mlsubmit.sdist.build import WalkedPackage
    from mlsubmit.sdist.digest import Local

METRIC_RULES = ("hypertune-missing", "hypertune-tag")


def trainer_notes(
    job_body: Mapping[str, Any],
    target: str,
    package_dir: Path,
    walked: WalkedPackage | None = None,
    *,
    sdist: Local | None = None,
    image_base: str | None = None,
) -> list[str]:
    """Warnings about the trainer for a job about to go to ``target``; empty when the checkup finds no error.
    ``walked``: the package as the job's sdist build walked and read it (the ``Plan``'s), read again nowhere;
    ``sdist``: the sdist built from it; ``image_base``: the base of the image ``--build-image`` builds (judged as
    ``migrate`` judges it, so the two commands agree).

    Never raises for the trainer's sake: a package that cannot be read is the build's to report.
    """
    try:
        facts = job_facts(job_body, target)
        if image_base is not None:
            facts = on_built_image(facts, image_base)
        checkup = check_package(package_dir, facts, walked=walked, sdist=sdist)
    except MlsubmitError:
        return []
    notes = [f"{f.where}: {f.message}: {f.fix}" for f in checkup.errors if f.rule in METRIC_RULES]
    line = summary_line(checkup)
    return [*notes, line] if line else notes
