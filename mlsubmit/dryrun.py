"""`--dry-run`: the exact body `training` would send, with nothing uploaded and nothing created."""

from __future__ import annotations

from typing import Any

from mlsubmit.prepare import TrainingRequest, prepare


def dry_run(request: TrainingRequest) -> dict[str, Any]:
    """Validate the request and return the Job body it would create."""
    return prepare(request).body
