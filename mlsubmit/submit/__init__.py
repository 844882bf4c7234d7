"""The submit sequence, owned in one place (docs/architecture.md): :func:`~.plan.plan` (the whole plan,
offline: every body, the image, the uploads), :func:`~.run.run` (preflight → stage → ensure the image → create,
or fail over), and the failover loop (:mod:`.failover`) with its candidates (:mod:`.candidates`)."""

from __future__ import annotations

from mlsubmit.submit.plan import Plan, PlanRequest, dry_run, plan, planned

__all__ = ["Plan", "PlanRequest", "dry_run", "plan", "planned"]
