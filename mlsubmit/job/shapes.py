"""The part of a Job body whose JSON types are right: what the rules read, so they are total over any input (the
schema pass reports the values of the wrong type).
"""

from __future__ import annotations

import copy
from typing import Any

Path = tuple[str | int, ...]


def typed_view(body: Any) -> dict[str, Any]:
    """``body`` without the values whose JSON type the schema refuses (a copy when any is left out; a value in a
    list takes its list, so positions stay right). Labels stay: ``check_labels`` says what is wrong with them."""
    if not isinstance(body, dict):
        return {}
    from mlsubmit.job.jobfile import job_schema
    from mlsubmit.job.schema_check import Validator

    wrong = [
        tuple(error.absolute_path)
        for error in Validator(job_schema()).iter_errors(body)
        if error.validator == "type" and error.absolute_path and error.absolute_path[0] != "labels"
    ]
    if not wrong:
        return body
    view: dict[str, Any] = copy.deepcopy(body)
    for path in sorted(wrong, key=len):
        _leave_out(view, path)
    return view


def _leave_out(root: dict[str, Any], path: Path) -> None:
    """Delete the object key that holds ``path`` (its last name part); nothing when an earlier cut removed it."""
    cut = max((i for i, part in enumerate(path) if isinstance(part, str)), default=None)
    if cut is None:
        return
    node: Any = root
    for part in path[:cut]:
        if isinstance(node, dict) and isinstance(part, str):
            node = node.get(part)
        elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            node = node[part]
        else:
            return
    if isinstance(node, dict):
        node.pop(path[cut], None)
