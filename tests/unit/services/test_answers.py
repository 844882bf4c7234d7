"""services.answers: the shape checks every answer goes through, neutral server text, paging progress."""

from __future__ import annotations

import re
from typing import Any

import pytest

from mlsubmit.errors import ServiceAnswerError
from mlsubmit.services.answers import (
    MAX_EMPTY_PAGES,
    ML_JOB_SHAPE,
    VERTEX_JOB_SHAPE,
    PageGuard,
    check_shape,
    error_fields,
    excerpt,
    kind_of,
    need_job,
    need_object,
    need_page,
    neutralize,
    read_json,
)


@pytest.mark.parametrize(
    ("text", "keep", "expected"),
    [
        ("plain\ttab", False, "plain\ttab"),
        ("\x1b[2Jx", False, "\\x1b[2Jx"),
        ("a\nb", False, "a\\x0ab"),
        ("a\nb\r", True, "a\nb\\x0d"),
        ("c1 \x9b csi", False, "c1 \\x9b csi"),
        ("\x7f", False, "\\x7f"),
    ],
)
def test_neutralize(text: str, keep: bool, expected: str) -> None:
    assert neutralize(text, keep_newlines=keep) == expected


@pytest.mark.parametrize(
    ("answer", "kind"),
    [
        ("<!DOCTYPE html><html>", "an HTML page"),
        ("  <HTML><body>", "an HTML page"),
        ("<xml/>", "markup"),
        ("", "nothing"),
        ("oops", "text that is not JSON"),
        ([1], "a JSON list"),
        (3, "a JSON number"),
        (None, "JSON null"),
        (True, "a JSON boolean"),
    ],
)
def test_kind_of(answer: Any, kind: str) -> None:
    assert kind_of(answer) == kind


def test_excerpt_is_short_quoted_and_neutral() -> None:
    text = excerpt("<html>" + "\x1b[31m" + "x" * 1000)
    assert len(text) < 140 and "\x1b" not in text and text.endswith("...'")


@pytest.mark.parametrize("answer", ["<html></html>", [], 1, None, "null"])
def test_need_object_refuses_anything_else(answer: Any) -> None:
    with pytest.raises(ServiceAnswerError, match=r"^creating job j: the service answered with"):
        need_object(answer, "creating job j")


@pytest.mark.parametrize(
    ("answer", "said"),
    [
        ({"jobId": "j"}, "no 'state'"),
        ({"state": 1}, "number 'state'"),
        ({"state": ["RUNNING"]}, "list 'state'"),
        ({"state": ""}, "'state'"),
    ],
)
def test_need_job_wants_a_state_string(answer: dict[str, Any], said: str) -> None:
    with pytest.raises(ServiceAnswerError, match=said):
        need_job(answer, "reading job j")
    assert need_job({"state": "QUEUED"}, "x") == {"state": "QUEUED"}


@pytest.mark.parametrize(
    ("answer", "said"),
    [
        ({"jobs": "x"}, "not a list"),
        ({"jobs": [1]}, "not a JSON object"),
        ({"jobs": [], "nextPageToken": 3}, "nextPageToken"),
        ([], "instead of a JSON object"),
    ],
)
def test_need_page_refuses(answer: Any, said: str) -> None:
    with pytest.raises(ServiceAnswerError, match=said):
        need_page(answer, "jobs", "listing jobs")


def test_need_page_reads_items_and_token() -> None:
    assert need_page({}, "jobs", "x") == ([], None)
    assert need_page({"jobs": [{"a": 1}], "nextPageToken": ""}, "jobs", "x") == ([{"a": 1}], None)
    assert need_page({"jobs": None, "nextPageToken": "t"}, "jobs", "x") == ([], "t")


@pytest.mark.parametrize(
    ("payload", "expected"),
    [
        ({"error": {"status": "NOT_FOUND", "message": "no\x1b"}}, ("NOT_FOUND", "no\\x1b")),
        ({"error": "invalid_token", "error_description": "expired"}, ("invalid_token", "expired")),
        ({"error": ["a"]}, ("", "")),
        ({"error": {"status": 5, "message": {"x": 1}}}, ("", "'{\"x\": 1}'")),
        ("text", ("", "")),
        (None, ("", "")),
    ],
)
def test_error_fields(payload: Any, expected: tuple[str, str]) -> None:
    assert error_fields(payload) == expected


def test_page_guard_stops_on_a_repeated_token() -> None:
    guard = PageGuard("listing jobs")
    assert guard.advance("a", 1)
    with pytest.raises(ServiceAnswerError, match="twice"):
        guard.advance("a", 1)


def test_page_guard_stops_after_empty_pages_and_resets_on_progress() -> None:
    guard = PageGuard("reading logs", strict=False)
    for n in range(MAX_EMPTY_PAGES - 1):
        assert guard.advance(f"t{n}", 0)
    assert guard.advance("progress", 3)
    for n in range(MAX_EMPTY_PAGES - 1):
        assert guard.advance(f"u{n}", 0)
    assert not guard.advance("last", 0)
    assert guard.stopped and "nothing new" in guard.stopped


def test_page_guard_ends_without_a_token_and_bounds_pages() -> None:
    assert not PageGuard("x").advance(None, 5)
    guard = PageGuard("x", strict=False, max_pages=3)
    assert guard.advance("a", 1) and guard.advance("b", 1)
    assert not guard.advance("c", 1)


@pytest.mark.parametrize(
    ("job", "shape", "where"),
    [
        ({"trainingInput": []}, ML_JOB_SHAPE, "$.trainingInput "),
        ({"trainingOutput": {"trials": [{}, "x"]}}, ML_JOB_SHAPE, "$.trainingOutput.trials[1] "),
        (
            {"trainingOutput": {"trials": [{"finalMetric": 1}]}},
            ML_JOB_SHAPE,
            "$.trainingOutput.trials[0].finalMetric",
        ),
        ({"labels": "a=b"}, VERTEX_JOB_SHAPE, "$.labels "),
        ({"trials": [{"parameters": [{}, []]}]}, VERTEX_JOB_SHAPE, "$.trials[0].parameters[1] "),
        ({"studySpec": {"metrics": {}}}, VERTEX_JOB_SHAPE, "$.studySpec.metrics "),
    ],
)
def test_check_shape_names_the_field(job: dict[str, Any], shape: Any, where: str) -> None:
    with pytest.raises(ServiceAnswerError, match=re.escape(where)):
        check_shape(job, shape, "reading job j")


def test_check_shape_accepts_absent_and_null_fields() -> None:
    job = {"state": "RUNNING", "trainingInput": None, "trainingOutput": {"trials": [{"finalMetric": None}]}}
    assert check_shape(job, ML_JOB_SHAPE, "x") is job


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b'{"a": 1, "b": [1.5, -2e10, 9223372036854775807], "c": null}', None),
        (b"<html>proxy</html>", "<html>proxy</html>"),  # not JSON: the text, for the caller's check to name
        (b"", ""),
        ("[" * 100 + "]" * 100, None),  # exactly the bound
    ],
)
def test_read_json_reads_what_an_api_sends(content: bytes | str, expected: Any) -> None:
    import json

    value = read_json(content, "GET x")
    assert value == (json.loads(content) if expected is None else expected)


@pytest.mark.parametrize(
    ("content", "why"),
    [
        (b'{"x": 1e400}', "which no API sends"),
        (b'{"x": -1e400}', "which no API sends"),
        (b'{"x": NaN}', "which no API sends"),
        (b'{"x": Infinity}', "which no API sends"),
        (b'{"x": ' + b"1" * 21 + b"}", "which no API sends"),
        (b"[" * 101 + b"]" * 101, "nests more than 100 levels"),
        (b'{"a": ' * 101 + b"1" + b"}" * 101, "nests more than 100 levels"),
        (b"[" * 100_000 + b"]" * 100_000, "nests more than 100 levels"),
    ],
)
def test_read_json_refuses_numbers_and_depths_no_api_sends(content: bytes, why: str) -> None:
    with pytest.raises(ServiceAnswerError, match=rf"^GET x: the answer .*{why}"):
        read_json(content, "GET x")
