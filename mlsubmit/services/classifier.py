"""The one classifier of answers (docs/getting-jobs-to-start.md): ``next`` (quota, stockout) or ``stop``.
First a ``google.rpc.QuotaFailure`` detail (https://github.com/googleapis/googleapis/blob/master/google/rpc/
error_details.proto, checked 2026-11-27), then the dated table :data:`ANSWERS` of Vertex AI answers."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

QUOTA_FAILURE = "type.googleapis.com/google.rpc.QuotaFailure"
MAX_DETAILS = 16  # details read from one answer (each names its type)
Verdict = Literal["next", "stop"]


@dataclass(frozen=True)
class Answer:
    """A documented Vertex AI answer (``create``: a create's HTTP error; ``failed``: a FAILED job's error)."""

    stage: Literal["create", "failed"]
    status: int | None  # the HTTP status of a create answer (None: any, or a job's error)
    pattern: str  # a regular expression over the service's message
    verdict: Verdict
    outcome: str  # the attempt's outcome as reported
    source: str  # where the text was seen (public URL), checked on ``checked``
    checked: str = "2026-11-25"


ANSWERS: tuple[Answer, ...] = (
    Answer(
        "create",
        429,
        r"quota metrics exceed quota limits|quota exceeded",
        "next",
        "quota",
        "https://github.com/GoogleCloudPlatform/stable-diffusion-on-gcp/issues/12",
    ),
    Answer(
        "failed",
        None,
        r"resources are insufficient in region",
        "next",
        "stockout",
        "https://github.com/openreview/openreview-expertise/issues/401",
    ),
    Answer(
        "create",
        400,
        r"permission to act as",
        "stop",
        "permission",
        "https://cloud.google.com/vertex-ai/docs/general/custom-service-account",
    ),
    Answer(
        "create",
        400,
        r"must be in the same regional location",
        "stop",
        "precondition",
        "https://github.com/googleapis/python-aiplatform/issues/885",
    ),
    Answer(
        "create",
        400,
        r"cannot be used in vertex ai service",
        "stop",
        "precondition",
        "https://cloud.google.com/vertex-ai/docs/general/cmek",
    ),
)


def classify(
    stage: Literal["create", "failed"], status: int | None, message: str, details: Sequence[str] = ()
) -> tuple[Verdict, str]:
    """(verdict, outcome) of an answer: its google.rpc ``details`` (:func:`detail_types`) first, then the table;
    anything else stops (``refused``/``failed``): an unknown refusal would follow the job everywhere."""
    if stage == "create" and QUOTA_FAILURE in details:
        return "next", "quota"
    for answer in ANSWERS:
        if answer.stage != stage or (answer.status is not None and answer.status != status):
            continue
        if re.search(answer.pattern, message, re.IGNORECASE):
            return answer.verdict, answer.outcome
    return "stop", "refused" if stage == "create" else "failed"


def is_quota(status: int | None, message: str, details: Sequence[str] = ()) -> bool:
    """Whether a create's error answer is a quota limit below the request (another try is answered the same)."""
    return classify("create", status, message, details)[1] == "quota"


def detail_types(payload: Any) -> tuple[str, ...]:
    """The ``@type`` of each detail of an error answer (bounded; none for a body of another shape)."""
    error = payload.get("error") if isinstance(payload, dict) else None
    details = error.get("details") if isinstance(error, dict) else None
    if not isinstance(details, list):
        return ()
    types = (d.get("@type") for d in details[:MAX_DETAILS] if isinstance(d, dict))
    return tuple(t for t in types if isinstance(t, str) and len(t) <= 200)
