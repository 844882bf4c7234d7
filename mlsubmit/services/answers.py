"""Checks that an answer has the shape its caller reads (else a :class:`ServiceAnswerError`, exit 1, naming
the call with a short excerpt; docs/security.md), and server text with control characters neutralised. Pure."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any

from mlsubmit.errors import ServiceAnswerError

# Control characters other than tab (C0 incl. newline, DEL and C1): shown as \xNN escapes; bidi and zero-width
# marks, line separators, BOM and lone surrogates (they reorder or hide text, or cannot be encoded) as \uNNNN
# (https://www.unicode.org/reports/tr9/#Explicit_Directional_Formatting_Characters).
_CONTROL = re.compile(
    "[\x00-\x08\x0a-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff\ud800-\udfff]"
)
EXCERPT_CHARS = 120  # at most this much of a bad answer is quoted
MESSAGE_CHARS = 2000  # at most this much of a service's error message is quoted
# Paging: a list or a log read stops after this many pages in a row that bring nothing new.
MAX_EMPTY_PAGES = 20
#: The deepest answer read: Google's job resources nest about ten levels, a log entry's payload a few more.
MAX_DEPTH = 100
#: The most digits of an integer in an answer: int64 (19 digits) and a sign; the APIs send larger ones as strings.
MAX_INT_DIGITS = 20


class _OutOfRange(ValueError):
    """A number no API sends (``1e400``, ``NaN``, a 400-digit integer): raised while the answer is parsed."""


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):  # 1e400; NaN and Infinity are not JSON either (RFC 8259 section 6)
        raise _OutOfRange(text)
    return value


def _int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise _OutOfRange(text)
    return int(text)


def _too_deep(value: Any) -> bool:
    """Whether ``value`` nests more than :data:`MAX_DEPTH` lists and objects (walked without recursion)."""
    stack = [(value, 1)] if isinstance(value, dict | list) else []
    while stack:
        item, depth = stack.pop()
        if depth > MAX_DEPTH:
            return True
        children = item.values() if isinstance(item, dict) else item
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return False


def read_json(content: bytes | str, what: str) -> Any:
    """A service's JSON answer (its text when not JSON); a number out of range or too deep: ServiceAnswerError."""
    opening = (b"[", b"{") if isinstance(content, bytes) else ("[", "{")
    try:
        value = json.loads(content, parse_float=_float, parse_int=_int, parse_constant=_float)
        deep = (  # counted first: only an answer with that many brackets can nest that deep
            content.count(opening[0]) + content.count(opening[1]) > MAX_DEPTH  # type: ignore[arg-type]
            and _too_deep(value)
        )
    except _OutOfRange as err:
        raise ServiceAnswerError(
            f"{what}: the answer holds the number {excerpt(str(err), 40)}, which no API sends (out of range); "
            "check the API endpoint (and any proxy in between). Nothing was assumed from this answer.",
            status=200,  # an answer came: not worth another try (services.retry)
        ) from None
    except RecursionError:
        deep = True
    except ValueError:
        return content.decode("utf-8", "replace") if isinstance(content, bytes) else content
    if deep:
        raise ServiceAnswerError(
            f"{what}: the answer nests more than {MAX_DEPTH} levels deep, which no API does; check the API "
            "endpoint (and any proxy in between). Nothing was assumed from this answer.",
            status=200,
        )
    return value


def neutralize(text: str, *, keep_newlines: bool = False) -> str:
    """``text`` with control characters (but tab, and newlines if asked) shown as ``\\xNN`` escapes."""
    if keep_newlines:
        return "\n".join(neutralize(part) for part in text.split("\n"))
    return _CONTROL.sub(_escape, text)


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def shorten(text: str, limit: int = MESSAGE_CHARS) -> str:
    """At most ``limit`` characters of ``text``, on one line, neutralised; ``...`` marks a cut."""
    one_line = neutralize(text.replace("\r\n", "\n").replace("\n", " "))
    return one_line if len(one_line) <= limit else one_line[:limit] + "..."


def excerpt(answer: Any, limit: int = EXCERPT_CHARS) -> str:
    """A short, neutralised, quoted excerpt of ``answer`` (any parsed answer) for an error message."""
    if isinstance(answer, bytes | str):
        text = (answer.decode("utf-8", "replace") if isinstance(answer, bytes) else answer).strip()
    else:
        try:
            text = json.dumps(answer, ensure_ascii=False, default=str)
        except (TypeError, ValueError, RecursionError):
            text = type(answer).__name__
    return repr(shorten(text[: limit * 4], limit))


def kind_of(answer: Any) -> str:
    """What ``answer`` is, in words: ``an HTML page``, ``a JSON list``, ``empty text``, ..."""
    if isinstance(answer, bytes | str):
        text = answer.strip() if isinstance(answer, str) else answer.decode("utf-8", "replace").strip()
        if not text:
            return "nothing"
        if text[:1] == "<":
            return "an HTML page" if re.match(r"(?is)<(!doctype\s+html|html|head|body)", text) else "markup"
        return "text that is not JSON"
    names = {dict: "a JSON object", list: "a JSON list", bool: "a JSON boolean", type(None): "JSON null"}
    return names.get(type(answer), "a JSON number" if isinstance(answer, int | float) else "a JSON value")


def need_object(answer: Any, what: str) -> dict[str, Any]:
    """``answer`` if it is a JSON object; else a ServiceAnswerError naming the call ``what``."""
    if isinstance(answer, dict):
        return answer
    raise ServiceAnswerError(
        f"{what}: the service answered with {kind_of(answer)} instead of a JSON object: {excerpt(answer)}. "
        "Check the API endpoint (and any proxy in between); nothing was assumed from this answer."
    )


def need_string(job: Mapping[str, Any], key: str, what: str, *, required: bool = True) -> str | None:
    """``job[key]`` when it is a string; a missing key is None unless ``required``; else ServiceAnswerError."""
    value = job.get(key)
    if isinstance(value, str) and (value or not required):
        return value
    if value is None and not required:
        return None
    found = "no" if value is None else f"a {kind_of(value).removeprefix('a ').removeprefix('JSON ')}"
    raise ServiceAnswerError(
        f"{what}: the answer has {found} {key!r} where a string is expected: {excerpt(dict(job))}."
    )


# Where a job resource must hold objects or lists, when the field is there at all: what mlsubmit reads from it
# (states, error messages, tuning trials). Every step of a path is a JSON object, but a step followed by "*" is a
# list, whose every item "*" stands for.
Shape = tuple[str, ...]
ML_JOB_SHAPE: Shape = (
    "labels",
    "trainingInput.hyperparameters.params.*",
    "trainingOutput.trials.*.finalMetric",
    "trainingOutput.trials.*.hyperparameters",
)
VERTEX_JOB_SHAPE: Shape = (
    "labels",
    "jobSpec",
    "studySpec.metrics.*",
    "studySpec.parameters.*",
    "trials.*.parameters.*",
    "trials.*.finalMeasurement.metrics.*",
)


def _at(value: Any, path: tuple[str, ...], where: str) -> list[tuple[str, Any]]:
    """Every (location, value) at ``path`` under ``value`` (only through objects and lists of the right kind)."""
    if not path:
        return [(where, value)]
    step, rest = path[0], path[1:]
    if step == "*":
        items = value if isinstance(value, list) else []
        return [found for i, item in enumerate(items) for found in _at(item, rest, f"{where}[{i}]")]
    if not isinstance(value, dict) or value.get(step) is None:
        return []
    return _at(value[step], rest, f"{where}.{step}")


def check_shape(job: dict[str, Any], shape: Shape, what: str) -> dict[str, Any]:
    """``job`` when every field of ``shape`` it has is of its kind; else a ServiceAnswerError naming the field."""
    for steps in (tuple(path.split(".")) for path in shape):
        for end in range(1, len(steps) + 1):  # each step on the way, in order
            kind, words = (list, "a list") if steps[end : end + 1] == ("*",) else (dict, "a JSON object")
            for where, value in _at(job, steps[:end], "$"):
                if not isinstance(value, kind):
                    raise ServiceAnswerError(
                        f"{what}: the answer's {where} is {kind_of(value)}, not {words}: {excerpt(value)}."
                    )
    return job


def need_job(answer: Any, what: str, *, shape: Shape = ()) -> dict[str, Any]:
    """A job resource: a JSON object with a non-empty string ``state`` and ``shape``'s fields of their kind."""
    job = need_object(answer, what)
    need_string(job, "state", what)
    return check_shape(job, shape, what)


def need_page(answer: Any, items: str, what: str) -> tuple[list[dict[str, Any]], str | None]:
    """(the items, the next page token or None) of a list answer; its items must be objects."""
    page = need_object(answer, what)
    found = [] if page.get(items) is None else page[items]
    if not isinstance(found, list):
        raise ServiceAnswerError(
            f"{what}: the answer's {items!r} is {kind_of(found)}, not a list: {excerpt(found)}."
        )
    for item in found:
        if not isinstance(item, dict):
            raise ServiceAnswerError(
                f"{what}: an item of the answer's {items!r} is {kind_of(item)}, not a JSON object: "
                f"{excerpt(item)}."
            )
    token = need_string(page, "nextPageToken", what, required=False)
    return found, token or None


def error_fields(payload: Any) -> tuple[str, str]:
    """(Google status like PERMISSION_DENIED, message), neutralised, from the API's or OAuth's error JSON."""
    if not isinstance(payload, dict):
        return "", ""
    error = payload.get("error")
    if isinstance(error, dict):
        status, message = error.get("status"), error.get("message")
    else:
        status, message = error, payload.get("error_description") or payload.get("message")
    status_text = shorten(status, 80) if isinstance(status, str) else ""
    if message is None or isinstance(message, dict | list):
        return status_text, excerpt(message) if message is not None else ""
    return status_text, shorten(str(message))


class PageGuard:
    """Stops paging without progress: a ServiceAnswerError when ``strict``, else :meth:`advance` says stop."""

    def __init__(self, what: str, *, strict: bool = True, max_pages: int | None = None) -> None:
        self.what = what
        self.strict = strict
        self.max_pages = max_pages
        self.pages = 0
        self.empty = 0
        self.tokens: set[str] = set()
        self.stopped: str | None = None  # why paging stopped early, for a log line

    def _stop(self, reason: str) -> bool:
        if self.strict:
            raise ServiceAnswerError(f"{self.what}: {reason}; stopped paging.")
        self.stopped = reason
        return False

    def advance(self, token: str | None, new_items: int) -> bool:
        """True: fetch the page of ``token``; False: paging is over (no token, or it stopped making progress)."""
        self.pages += 1
        if not token:
            return False
        if token in self.tokens:
            return self._stop(f"the service sent page token {excerpt(token, 40)} twice")
        self.tokens.add(token)
        self.empty = 0 if new_items else self.empty + 1
        if self.empty >= MAX_EMPTY_PAGES:
            return self._stop(f"{self.empty} pages in a row brought nothing new")
        if self.max_pages is not None and self.pages >= self.max_pages:
            return self._stop(f"more than {self.max_pages} pages")
        return True
