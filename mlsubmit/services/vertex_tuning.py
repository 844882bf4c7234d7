"""Vertex AI custom jobs and hyperparameter tuning jobs behind one JobsBackend (``jobs ... --target vertex``).

A resource name says its collection; a numeric id is looked up among custom jobs, then tuning jobs; an mlsubmit
job id in both at once (the live one wins, ``vertex.pick``). ``list`` shows both, newest first.
"""

from __future__ import annotations

from typing import Any

from mlsubmit.errors import ApiError
from mlsubmit.services.backends import CreateResult
from mlsubmit.services.ml import Caller
from mlsubmit.services.vertex import RESOURCE_NAME, VertexJobs, pick

TUNING = "hyperparameterTuningJobs"


class VertexAnyJobs:
    """Both Vertex AI job collections of one project and region, as one JobsBackend."""

    def __init__(self, service: Any, project: str, region: str, caller: Caller | None = None) -> None:
        self.project = project
        self.region = region
        self.custom = VertexJobs(service, project, region, caller)
        self.tuning = VertexJobs(service, project, region, caller, collection=TUNING)

    def _backend_for(self, job_id: str) -> VertexJobs | None:
        if job_id.startswith("projects/"):
            return self.tuning if f"/{TUNING}/" in job_id else self.custom
        return None

    def _by_label(self, job_id: str) -> str | None:
        """The resource name an mlsubmit job id names across both collections (None: a numeric id)."""
        if job_id.isdigit():
            return None
        found = self.custom.find_all(job_id)
        chosen = pick(found)
        if chosen is None and found:
            ids = ", ".join(str(j.get("name", "")).rsplit("/", 1)[-1] for j in found)
            raise ApiError(
                f"several live Vertex AI jobs carry job id {job_id!r} (ids {ids}); pass the numeric id."
            )
        name = str((chosen or {}).get("name") or "")
        return name if RESOURCE_NAME.fullmatch(name) else None

    def create(self, body: dict[str, Any], job_id: str) -> CreateResult:
        """Create ``body`` in its collection: a tuning job has a ``trialJobSpec``, a custom job a ``jobSpec``."""
        return (self.tuning if "trialJobSpec" in body else self.custom).create(body, job_id)

    def get(self, job_id: str) -> dict[str, Any]:
        """The job (either kind), with ``jobId`` and an ml-style ``state``."""
        if not job_id.startswith("projects/"):
            job_id = self._by_label(job_id) or job_id
        known = self._backend_for(job_id)
        if known is not None:
            return known.get(job_id)
        try:
            return self.custom.get(job_id)
        except ApiError as err:
            if err.status != 404:
                raise
            try:
                return self.tuning.get(job_id)
            except ApiError as tuning_err:
                if tuning_err.status != 404:
                    raise
                raise err from None  # the custom-job message says how jobs are found

    def list(self, filter_: str | None = None, limit: int | None = None) -> list[dict[str, Any]]:
        """Jobs of both kinds, newest first."""
        found = self.custom.list(filter_, limit) + self.tuning.list(filter_, limit)
        found.sort(key=lambda j: str(j.get("createTime", "")), reverse=True)
        return found[:limit] if limit else found

    def cancel(self, job_id: str) -> None:
        """Cancel the job, whichever kind it is."""
        job = self.get(job_id)
        backend = self._backend_for(str(job.get("name", ""))) or self.custom
        backend.cancel(str(job.get("name") or job_id))
