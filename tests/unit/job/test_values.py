"""Values with a fixed spelling: whole-value patterns, API number types, durations, values that reach URLs."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from mlsubmit.job.values import (
    INT64_MAX,
    api_duration_nanos,
    api_duration_problem,
    api_duration_seconds,
    format_duration,
    int64_problem,
    int64_value,
    parse_human_duration,
    url_value_problem,
)


@pytest.mark.parametrize(
    ("kind", "value", "ok"),
    [
        ("job id", "my_job_1", True),
        ("job id", "J" + "x" * 127, True),
        ("job id", "J" + "x" * 128, False),
        ("job id", "my_job\n", False),
        ("job id", "my_job\r", False),
        ("job id", "1job", False),
        ("job id", "my-job", False),
        ("job id", "my_job/../x", False),
        ("job id", None, False),
        ("job id", 12, False),
        ("project", "my-project", True),
        ("project", "p", True),
        ("project", "123456789012", True),
        ("project", "example.com:my-project", True),
        ("project", "a/b", False),
        ("project", "my-project\n", False),
        ("project", "my-project?x=1", False),
        ("project", "my-project#", False),
        ("project", "My-Project", False),
        ("project", "", False),
        ("project", "x" * 64, False),
        ("region", "us-central1", True),
        ("region", "europe-west4", True),
        ("region", "us-central1\n", False),
        ("region", "US-CENTRAL1", False),
        ("region", "127.0.0.2:8080?", False),
        ("region", "us-central1.evil.example", False),
        ("region", "us-central1/x", False),
        ("region", "global", False),
    ],
)
def test_url_value_problem_matches_whole_values(kind: str, value: Any, ok: bool) -> None:
    problem = url_value_problem(kind, value)
    assert (problem is None) == ok, problem
    if problem is not None:
        assert kind in problem and "\n" not in problem


def test_url_value_problem_quotes_only_a_short_escaped_prefix() -> None:
    problem = url_value_problem("project", "a/" + "x" * 500 + "\n")
    assert problem is not None and len(problem) < 200 and "\n" not in problem


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (3, 3),
        ("3", 3),
        ("0", 0),
        (2.0, 2),
        (True, None),
        ("3\n", None),
        (" 3", None),
        ("-3", None),
        ("٣", None),  # a non-ASCII digit
        ("3.5", None),
        (None, None),
        (str(2**70), 2**70),
    ],
)
def test_int64_value(value: Any, expected: int | None) -> None:
    assert int64_value(value) == expected


@pytest.mark.parametrize(
    ("value", "too_big"),
    [
        (str(INT64_MAX), False),
        (INT64_MAX, False),
        (str(INT64_MAX + 1), True),
        (2**70, True),
        (str(2**70), True),
        ("9" * 200, True),
        ("abc", False),  # malformed: the schema's to report
    ],
)
def test_int64_problem(value: Any, too_big: bool) -> None:
    problem = int64_problem(value, "workerCount")
    assert (problem is not None) == too_big
    if problem:
        assert "int64" in problem and len(problem) < 200


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("3600s", Decimal(3600)),
        ("3600.5s", Decimal("3600.5")),
        ("0.000000001s", Decimal("0.000000001")),
        ("315576000000s", Decimal(315576000000)),
        ("3600s\n", None),
        ("3600", None),
        ("1.0000000001s", None),
        ("-1s", None),
        ("1e3s", None),
        ("315576000001s", None),
        ("٣s", None),
        (3600, None),
    ],
)
def test_api_duration_seconds(text: Any, seconds: Decimal | None) -> None:
    assert api_duration_seconds(text) == seconds
    # The integer count the rules use (no decimal import for a dry run) says exactly the same.
    nanos = api_duration_nanos(text)
    assert (nanos is None) == (seconds is None)
    if seconds is not None:
        assert nanos == seconds * 10**9


def test_api_duration_nanos_at_the_edges() -> None:
    assert api_duration_nanos("315576000000.000000000s") == 315_576_000_000 * 10**9
    assert api_duration_nanos("315576000000.000000001s") is None
    assert api_duration_nanos("0s") == 0
    assert api_duration_nanos("1799.999999999s") == 1_799_999_999_999


def test_api_duration_problem_says_why() -> None:
    assert api_duration_problem("60s", "maxRunningTime") is None
    assert "limit" in str(api_duration_problem("315576000001s", "maxRunningTime"))
    assert "not a duration" in str(api_duration_problem("60s\n", "maxRunningTime"))


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("90", 90.0), ("30m", 1800.0), ("1h30m", 5400.0), ("1.5h", 5400.0), ("1d", 86400.0), (" 45s ", 45.0)],
)
def test_human_durations(text: str, seconds: float) -> None:
    assert parse_human_duration(text) == seconds
    assert parse_human_duration(format_duration(seconds)) == seconds


@pytest.mark.parametrize("text", ["", "m", "1e3", "30x", "٣m", "1h 30m", "9" * 400])
def test_bad_human_durations(text: str) -> None:
    with pytest.raises(ValueError, match="not a duration"):
        parse_human_duration(text)
