"""services.ml.iter_pages: one page at a time, ``limit`` honoured, and no endless paging on a repeated token."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from mlsubmit.errors import ServiceAnswerError
from mlsubmit.services.ml import Caller, iter_pages


class Page:
    def __init__(self, body: dict[str, Any]) -> None:
        self.body = body

    def execute(self, num_retries: int = 0) -> dict[str, Any]:
        return self.body


def lister(pages: Callable[[str | None], dict[str, Any]], seen: list[str | None]) -> Callable[..., Page]:
    def method(**kwargs: Any) -> Page:
        seen.append(kwargs.get("pageToken"))
        return Page(pages(kwargs.get("pageToken")))

    return method


def run(method: Callable[..., Page], limit: int | None = None) -> Any:
    return iter_pages(
        Caller(), method, {"parent": "projects/p"}, items="jobs", what="listing jobs", project="p",
        permission="ml.jobs.list", limit=limit,
    )  # fmt: skip


def test_a_token_that_never_changes_stops_paging_with_an_error() -> None:
    seen: list[str | None] = []
    found: list[dict[str, Any]] = []
    with pytest.raises(ServiceAnswerError, match="page token 'same' twice"):
        found.extend(run(lister(lambda token: {"jobs": [{"jobId": "x"}], "nextPageToken": "same"}, seen)))
    assert seen == [None, "same"] and len(found) == 2  # what came before the repeat was still given


@pytest.mark.parametrize(("limit", "calls", "count"), [(None, 3, 6), (3, 2, 3), (2, 1, 2)])
def test_pages_are_read_as_needed(limit: int | None, calls: int, count: int) -> None:
    seen: list[str | None] = []

    def pages(token: str | None) -> dict[str, Any]:
        n = int(token or 0)
        return {
            "jobs": [{"jobId": f"{n}a"}, {"jobId": f"{n}b"}],
            **({"nextPageToken": str(n + 1)} if n < 2 else {}),
        }

    items = run(lister(pages, seen), limit)
    assert seen == []  # nothing is fetched before the first item is asked for
    assert len(list(items)) == count and len(seen) == calls
