"""A small evaluator for Google's list filter language (AIP-160 / Cloud Logging), enough for the fakes.

Supports ``AND`` (also implicit by juxtaposition), ``OR``, ``NOT``/``-``, parentheses and the comparisons
``= != < <= > >= :`` on dotted field paths (``resource.labels.job_id``, ``labels.team``, ``display_name``;
snake_case segments also match camelCase keys). Timestamps compare as times, ``severity`` by rank, numbers
numerically; ``:`` means "has" (substring, or a glob with ``*``). A field the resource lacks matches nothing.
Anything else raises :class:`FilterError` (the fakes answer it with 400 INVALID_ARGUMENT).
"""

from __future__ import annotations

import contextlib
import fnmatch
import re
from collections.abc import Callable
from typing import Any

from tests.fakes.wire import parse_rfc3339

SEVERITIES = ["DEFAULT", "DEBUG", "INFO", "NOTICE", "WARNING", "ERROR", "CRITICAL", "ALERT", "EMERGENCY"]

_TOKEN = re.compile(
    r'\s*(?:(?P<string>"(?:\\.|[^"\\])*")|(?P<op>>=|<=|!=|[=<>:])|(?P<paren>[()])|(?P<word>[^\s()=<>:!"]+))'
)

Predicate = Callable[[dict[str, Any]], bool]


class FilterError(ValueError):
    """The filter text is not valid."""


def _tokens(text: str) -> list[tuple[str, str]]:
    tokens: list[tuple[str, str]] = []
    pos = 0
    while pos < len(text):
        if text[pos:].strip() == "":
            break
        match = _TOKEN.match(text, pos)
        if not match:
            raise FilterError(f"Unparseable filter near {text[pos:]!r}")
        kind = match.lastgroup or ""
        tokens.append((kind, match.group(kind)))
        pos = match.end()
    return tokens


def _unquote(token: str) -> str:
    return re.sub(r"\\(.)", r"\1", token[1:-1]) if token.startswith('"') else token


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def lookup(resource: Any, path: list[str]) -> Any:
    """Follow ``path`` through nested dicts; each segment matches its own spelling or its camelCase form."""
    value = resource
    for segment in path:
        if not isinstance(value, dict):
            return None
        if segment in value:
            value = value[segment]
        elif _camel(segment) in value:
            value = value[_camel(segment)]
        else:
            return None
    return value


def _compare(field: list[str], op: str, wanted: str, actual: Any) -> bool:
    if actual is None:
        return op == "!="
    if isinstance(actual, list):
        return (
            any(_compare(field, op, wanted, item) for item in actual)
            if op != "!="
            else all(_compare(field, op, wanted, item) for item in actual)
        )
    if isinstance(actual, bool):
        actual = "true" if actual else "false"
    if isinstance(actual, dict):
        # `labels:team` asks whether the map has the key.
        return op == ":" and wanted in actual
    text = str(actual)
    if op == ":":
        return fnmatch.fnmatchcase(text, wanted) if "*" in wanted else wanted.lower() in text.lower()
    left: Any = text
    right: Any = wanted
    if field[-1] == "severity" and text.upper() in SEVERITIES and wanted.upper() in SEVERITIES:
        left, right = SEVERITIES.index(text.upper()), SEVERITIES.index(wanted.upper())
    elif (lt := parse_rfc3339(text)) is not None and (rt := parse_rfc3339(wanted)) is not None:
        left, right = lt, rt
    else:
        with contextlib.suppress(ValueError):
            left, right = float(text), float(wanted)
    if op == "=":
        return bool(left == right)
    if op == "!=":
        return bool(left != right)
    if op == "<":
        return bool(left < right)
    if op == "<=":
        return bool(left <= right)
    if op == ">":
        return bool(left > right)
    return bool(left >= right)


class _Parser:
    def __init__(self, text: str):
        self.tokens = _tokens(text)
        self.pos = 0

    def peek(self) -> tuple[str, str] | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self) -> tuple[str, str]:
        token = self.peek()
        if token is None:
            raise FilterError("Unexpected end of filter")
        self.pos += 1
        return token

    def parse(self) -> Predicate:
        predicate = self.disjunction()
        if self.peek() is not None:
            raise FilterError(f"Unexpected {self.peek()[1]!r} in filter")  # type: ignore[index]
        return predicate

    def disjunction(self) -> Predicate:
        parts = [self.conjunction()]
        while self.peek() == ("word", "OR"):
            self.take()
            parts.append(self.conjunction())
        return parts[0] if len(parts) == 1 else (lambda r: any(p(r) for p in parts))

    def conjunction(self) -> Predicate:
        parts = [self.unary()]
        while (token := self.peek()) is not None and token not in (("paren", ")"), ("word", "OR")):
            if token == ("word", "AND"):
                self.take()
            parts.append(self.unary())
        return parts[0] if len(parts) == 1 else (lambda r: all(p(r) for p in parts))

    def unary(self) -> Predicate:
        token = self.peek()
        if token == ("word", "NOT") or token == ("word", "-"):
            self.take()
            inner = self.unary()
            return lambda r: not inner(r)
        if token is not None and token[0] == "word" and token[1].startswith("-") and len(token[1]) > 1:
            self.tokens[self.pos] = ("word", token[1][1:])
            inner = self.unary()
            return lambda r: not inner(r)
        if token == ("paren", "("):
            self.take()
            inner = self.disjunction()
            if self.take() != ("paren", ")"):
                raise FilterError("Missing ')' in filter")
            return inner
        return self.comparison()

    def comparison(self) -> Predicate:
        kind, text = self.take()
        if kind not in ("word", "string"):
            raise FilterError(f"Expected a field name, got {text!r}")
        name = _unquote(text)
        # labels."ml.googleapis.com/trial_id": a quoted segment after a trailing dot.
        while name.endswith(".") and (nxt := self.peek()) is not None and nxt[0] == "string":
            name += self.take()[1]
        nxt = self.peek()
        if nxt is None or nxt[0] != "op":
            # A bare value is a global restriction; the fakes do not search every field, so it matches.
            return lambda r: True
        op = self.take()[1]
        kind, value = self.take()
        if kind not in ("word", "string"):
            raise FilterError(f"Expected a value after {name}{op}, got {value!r}")
        path = [_unquote(part) for part in re.findall(r'"(?:\\.|[^"\\])*"|[^.]+', name)]
        wanted = _unquote(value)
        return lambda r: _compare(path, op, wanted, lookup(r, path))


def compile_filter(text: str | None) -> Predicate:
    """Compile filter ``text`` into a predicate over a resource dict; an empty filter matches everything."""
    if not text or not text.strip():
        return lambda r: True
    return _Parser(text).parse()
