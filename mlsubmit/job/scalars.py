"""What a plain YAML scalar means in a job config. gcloud loads ``--config`` in YAML 1.1 mode
(``googlecloudsdk/core/yaml.py``): ``1e-5`` is a float, ``0755`` octal 493, ``1:30`` sexagesimal 90; :data:`SPELLINGS`
is that table (tests/unit/job/test_scalars.py checks it against gcloud's loader)."""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

NUMBER_KINDS = frozenset({"number", "integer"})


def _int(text: str) -> int:
    t = text.replace("_", "")
    digits = t.lstrip("+-")  # int() takes the sign, and 0b/0x with their base
    base = {"0b": 2, "0x": 16}.get(digits[:2]) or (8 if len(digits) > 1 and digits[0] == "0" else 10)
    return int(t, base)


def _sexagesimal(text: str) -> float:
    t = text.replace("_", "")
    sign = -1 if t.startswith("-") else 1
    total = 0.0
    for part in t.lstrip("+-").split(":"):
        total = total * 60 + float(part)
    return sign * total


def _float(text: str) -> float:
    return float(text.replace("_", "").lower().replace(".inf", "inf").replace(".nan", "nan"))


@dataclass(frozen=True)
class Spelling:
    """One family of plain-scalar spellings and what gcloud's YAML 1.1 loader makes of it."""

    name: str
    source: str  # the regular expression (verbose), matched against the whole scalar
    starts: str  # every character a scalar of this family can start with: the others skip the expression
    value: Callable[[str], Any]  # the value gcloud's loader produces
    surprise: str | None = None  # why taking it as a number deserves a warning

    @property
    def pattern(self) -> re.Pattern[str]:
        """The expression, compiled on first use: most scalars (``us-central1``) are ruled out by ``starts``."""
        return _re(self.source)


@functools.cache
def _re(pattern: str) -> re.Pattern[str]:
    return re.compile(f"^(?:{pattern})$", re.X)


DIGITS = "0123456789"
SIGNED = "-+" + DIGITS
_WORDS_TRUE = ("y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON")
_WORDS_FALSE = ("n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF")

# Order matters: the first row that matches wins, as in ruamel.yaml's resolver (VersionedResolver, YAML 1.1).
SPELLINGS: tuple[Spelling, ...] = (
    Spelling("null", r"~|null|Null|NULL|", "~nN", lambda t: None),
    Spelling("boolean", "|".join(_WORDS_TRUE + _WORDS_FALSE), "yYnNtTfFoO", lambda t: t in _WORDS_TRUE),
    Spelling(
        "sexagesimal float",
        r"[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*",
        SIGNED,
        _sexagesimal,
        "is sexagesimal (base 60) in YAML 1.1",
    ),
    Spelling(
        "float",
        r"""[-+]?[0-9][0-9_]*\.[0-9_]*(?:[eE][-+]?[0-9]+)?
        |[-+]?[0-9][0-9_]*[eE][-+]?[0-9]+
        |\.[0-9_]+(?:[eE][-+][0-9]+)?""",
        SIGNED + ".",
        _float,
    ),
    Spelling("infinity or NaN", r"[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)", "-+.", _float),
    Spelling("binary integer", r"[-+]?0b[0-1_]+", "-+0", _int),
    Spelling("octal integer", r"[-+]?0[0-7_]+", "-+0", _int, "is an octal number in YAML 1.1"),
    Spelling("decimal integer", r"[-+]?(?:0|[1-9][0-9_]*)", SIGNED, _int),
    Spelling("hexadecimal integer", r"[-+]?0x[0-9a-fA-F_]+", "-+0", _int),
    Spelling(
        "sexagesimal integer",
        r"[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+",
        "-+123456789",
        lambda t: int(_sexagesimal(t)),
        "is sexagesimal (base 60) in YAML 1.1",
    ),
    Spelling(
        "timestamp",
        r"""[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]
        |[0-9][0-9][0-9][0-9]-[0-9][0-9]?-[0-9][0-9]?
         (?:[Tt]|[\ \t]+)[0-9][0-9]?:[0-9][0-9]:[0-9][0-9](?:\.[0-9]*)?
         (?:[\ \t]*(?:Z|[-+][0-9][0-9]?(?::[0-9][0-9])?))?""",
        DIGITS,
        str,  # gcloud builds a date object, which then cannot be sent at all
    ),
)
NUMERIC = frozenset(row.name for row in SPELLINGS if row.name not in ("null", "boolean", "timestamp"))
# A quoted number the service's JSON parser reads as a number (proto3 JSON accepts numbers as strings).
QUOTED_NUMBER = r"[-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?"


def classify(text: str) -> Spelling | None:
    """The table row of a plain scalar, or None for plain text (the empty text is tried against every row)."""
    return next((r for r in SPELLINGS if text[:1] in r.starts and r.pattern.match(text)), None)


@dataclass(frozen=True)
class Meaning:
    """A scalar's value for one field, and a note when that value may not be what the writer meant."""

    value: Any
    note: str | None = None


def _fit(value: Any, kinds: frozenset[str], text: str) -> Any:
    """An integral float as an int where only integers are wanted (``1e3`` workers); inf/NaN: the text, refused."""
    if "integer" not in kinds or "number" in kinds or not isinstance(value, float):
        return value
    return text if not math.isfinite(value) else int(value) if value.is_integer() else value


def interpret(text: str, plain: bool, kinds: frozenset[str] | None) -> Meaning:
    """The value of a scalar written as ``text`` (``plain``: without quotes or a tag) for a field whose schema
    types are ``kinds`` (None: the schema does not describe the field)."""
    row = classify(text) if plain else None
    if row is None:  # quoted, or plain text (`-.5` is text to YAML 1.1; gcloud still sends -0.5)
        stripped = text if plain else text.strip()
        if kinds and NUMBER_KINDS & kinds and "string" not in kinds and _re(QUOTED_NUMBER).match(stripped):
            number = (
                int(stripped) if not plain and re.fullmatch(r"[-+]?[0-9]+", stripped) else float(stripped)
            )
            return Meaning(_fit(number, kinds, text))
        return Meaning(text)
    if row.name == "null":
        return Meaning(None)
    if kinds is None:
        if row.name == "timestamp" or (row.name == "boolean" and text.lower() not in ("true", "false")):
            return Meaning(text)
        return Meaning(row.value(text))
    if row.name in NUMERIC and NUMBER_KINDS & kinds:
        value = _fit(row.value(text), kinds, text)
        note = f"{text} {row.surprise}, so it means {value}" if row.surprise else None
        return Meaning(value, note)
    if row.name == "boolean" and "boolean" in kinds:
        return Meaning(row.value(text))
    if "string" in kinds:
        return Meaning(text)
    # The field wants something else (a number given as `yes`, a mapping given as `1`): the YAML value, which
    # the schema check then reports in the user's terms.
    return Meaning(text if row.name == "timestamp" else row.value(text))


_YAML = "tag:yaml.org,2002:"
# Explicit YAML tags (docs/config.md) whose text must read as the tag's type (SafeLoader's constructors accept more: `!!null x` is None,
# `!!bool maybe` a KeyError), by the implicit tags a plain scalar of that text resolves to.
CHECKED_TAGS = {
    _YAML + "int": {_YAML + "int"},
    _YAML + "float": {_YAML + "float", _YAML + "int"},
    _YAML + "bool": {_YAML + "bool"},
    _YAML + "null": {_YAML + "null"},
}
_SCALAR_TAGS = {_YAML + "str", *CHECKED_TAGS}
COLLECTION_TAGS = {_YAML + "map", _YAML + "seq"}


def tag_name(tag: str) -> str:
    """``!!int`` for YAML's own tags, the tag as written otherwise; cut and escaped."""
    name = "!!" + tag[len(_YAML) :] if tag.startswith(_YAML) else tag
    if len(name) <= 40 and name.isprintable():
        return name
    from mlsubmit.job.hints import short

    return short(name, 40)


def tag_problem(node: Any) -> str | None:
    """Why a node's explicit tag cannot be used: Python objects, types no job field takes, tags on lists and
    mappings (``!Ref [a]``: a plain loader would drop them, so the value would mean something else)."""
    import yaml

    if node.tag.startswith(_YAML + "python/"):
        return f"unsupported YAML tag {tag_name(node.tag)}: mlsubmit reads plain YAML, never Python objects"
    known = _SCALAR_TAGS if isinstance(node, yaml.ScalarNode) else COLLECTION_TAGS
    return None if node.tag in known else f"unsupported YAML tag {tag_name(node.tag)}"
