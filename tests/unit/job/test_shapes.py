"""typed_view: the rules read only values of the right JSON type."""

from __future__ import annotations

from typing import Any

import pytest

from mlsubmit.job.shapes import typed_view


def test_a_valid_body_is_returned_as_is() -> None:
    body = {"jobId": "j", "trainingInput": {"region": "us-central1", "args": ["a"]}}
    assert typed_view(body) is body


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (None, {}),
        ([1], {}),
        ({"trainingInput": [1]}, {}),
        ({"trainingInput": {"masterConfig": "x", "region": "r"}}, {"trainingInput": {"region": "r"}}),
        ({"trainingInput": {"args": ["a", 5]}}, {"trainingInput": {}}),  # a bad item takes its list along
        (
            {"trainingInput": {"hyperparameters": {"params": [{"parameterName": "a", "minValue": "x"}]}}},
            {"trainingInput": {"hyperparameters": {"params": [{"parameterName": "a"}]}}},
        ),
        ({"labels": {"a": 5}}, {"labels": {"a": 5}}),  # labels stay: their rule speaks in label terms
    ],
)
def test_values_of_the_wrong_type_are_left_out(body: Any, expected: dict[str, Any]) -> None:
    before = repr(body)
    assert typed_view(body) == expected
    assert repr(body) == before  # the caller's body is not changed
