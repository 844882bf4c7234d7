"""Messages in the user's terms: schema errors, and where an unknown key belongs (a reverse index of
job.schema.json). Quoted keys and values are cut to a short, escaped prefix: a config may be a symlink to some
other file, whose lines must not reach a (public) CI log."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from mlsubmit.job.vocab import enum_spelling

QUOTE_MAX = 32  # characters of a key or value shown in a message


def short(value: Any, limit: int = QUOTE_MAX) -> str:
    """``repr`` of a key or value, escaped (no control characters) and cut to ``limit`` characters."""
    if isinstance(value, str):
        shown = repr(value[:limit])
        return shown if len(value) <= limit else f"{shown}… ({len(value)} characters)"
    if isinstance(value, dict | list):
        return f"a {'mapping' if isinstance(value, dict) else 'list'}"
    shown = repr(value)
    return shown if len(shown) <= limit else shown[:limit] + "…"


def format_path(path: Iterable[str | int]) -> str:
    """``('trainingInput', 'args', 0)`` -> ``$.trainingInput.args[0]`` (keys escaped and cut to QUOTE_MAX)."""
    out = "$"
    for part in path:
        cut = "…" if isinstance(part, str) and len(part) > QUOTE_MAX else ""
        out += f"[{part}]" if isinstance(part, int) else f".{repr(part[:QUOTE_MAX])[1:-1]}{cut}"
    return out


def resolve(root: Mapping[str, Any], node: Mapping[str, Any]) -> Mapping[str, Any]:
    """``node`` with its ``$ref`` into ``root``'s ``$defs`` followed."""
    ref = node.get("$ref")
    while isinstance(ref, str) and ref.startswith("#/$defs/"):
        node = root["$defs"][ref.split("/")[-1]]
        ref = node.get("$ref")
    return node


def _walk(
    root: Mapping[str, Any], node: Mapping[str, Any], path: str, depth: int = 0
) -> Iterator[tuple[str, str]]:
    node = resolve(root, node)
    if depth > 8:
        return
    for name, sub in (node.get("properties") or {}).items():
        yield name, path
        yield from _walk(root, sub, f"{path}.{name}", depth + 1)
    items = node.get("items")
    if isinstance(items, dict):
        yield from _walk(root, items, f"{path}[]", depth + 1)


def places(schema: Mapping[str, Any]) -> dict[str, tuple[str, ...]]:
    """Field name -> the JSON paths of the objects that may hold it (``$.trainingInput.hyperparameters``)."""
    index: dict[str, dict[str, None]] = {}  # the parents in walk order, each once
    for name, parent in _walk(schema, schema, "$"):
        index.setdefault(name, {})[parent] = None
    return {k: tuple(v) for k, v in index.items()}


def _fold(key: str) -> str:
    return key.lower().replace("_", "").replace("-", "")


def _where(parents: tuple[str, ...]) -> str:
    shown = [
        "the top level ($)" if p == "$" else p + (" item" if p.endswith("[]") else "") for p in parents[:4]
    ]
    text = shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + " or " + shown[-1]
    return f"at {text}" if parents[0] == "$" and len(parents) == 1 else f"under {text}"


def unknown_key_message(schema: Mapping[str, Any], key: str, known: list[str], here: str) -> str:
    """``unknown key 'params'; it belongs under $.trainingInput.hyperparameters`` and the like; ``known``: the
    keys allowed at ``here`` (the JSON path of the mapping holding ``key``, ``$`` at the top)."""
    shown = short(key)
    here = re.sub(r"\[[0-9]+\]", "[]", here)
    index = places(schema)
    if same := {_fold(k): k for k in known}.get(_fold(key)):  # scale_tier, ScaleTier
        return f"unknown key {shown}; did you mean {same!r}?"
    elsewhere = tuple(p for p in index.get(key, ()) if p != here)
    # bootDiskSizeGb in masterConfig: masterConfig.diskConfig, not every role's
    elsewhere = tuple(p for p in elsewhere if p.startswith((here + ".", here + "["))) or elsewhere
    if elsewhere:
        if here == "$" and "$.trainingInput" in elsewhere:
            return (
                f"unknown key {shown}: TrainingInput fields go under a `trainingInput:` key "
                f"(write `trainingInput:` and indent {key} below it)."
            )
        return f"unknown key {shown} here; it belongs {_where(elsewhere)}"
    import difflib  # only when a key is unknown

    if close := difflib.get_close_matches(key, known, n=1, cutoff=0.6):
        return f"unknown key {shown}; did you mean {close[0]!r}?"
    other = {_fold(name): name for name in index}.get(_fold(key))
    if other and other not in known:
        return f"unknown key {shown}; did you mean {other!r}, which belongs {_where(index[other])}?"
    return f"unknown key {shown}; known keys: {', '.join(sorted(known))}"


def describe(error: Any) -> str:
    """A short message for one jsonschema error, in the user's terms."""
    v = error.validator
    shown = short(error.instance)
    sch = error.schema
    if v == "enum":
        choices = [str(c) for c in sch["enum"]]
        if isinstance(error.instance, str):
            import difflib

            near = difflib.get_close_matches(error.instance, choices, n=1)
            if close := [c for c in choices if c == enum_spelling(error.instance)] or near:
                return f"{shown} is not allowed; did you mean {close[0]!r}?"
        return f"{shown} is not one of {', '.join(choices)}"
    if v == "pattern":
        what = sch.get("description")
        return f"{shown} is not valid" + (f": {what}" if what else f" (must match {sch['pattern']})")
    if v == "type":
        want = " or ".join(sch["type"]) if isinstance(sch["type"], list) else sch["type"]
        if error.instance is None:  # `key:` with nothing after it
            return f"must be {want}, not empty; give a value or remove the key"
        if isinstance(error.instance, dict | list):
            return f"must be {want}, not {shown}"  # "a mapping" or "a list"
        return f"must be {want}, not {type(error.instance).__name__} {shown}"
    if v == "required":
        return str(error.message).replace("is a required property", "is required")
    if v in ("minimum", "maximum"):
        return f"{shown} is out of range ({'at least' if v == 'minimum' else 'at most'} {sch[v]})"
    if v == "maxItems":
        return f"has {len(error.instance)} items; at most {sch['maxItems']} allowed"
    if v == "minItems":
        return f"needs at least {sch['minItems']} item(s)"
    if v == "minLength":
        return "must not be empty"
    if v == "maxLength":
        return f"{shown} is longer than {sch['maxLength']} characters"
    return str(error.message)
