"""The one table of YAML scalar spellings (mlsubmit.job.scalars): what each means per field type, and proof that
the table says what gcloud's own YAML loader (ruamel.yaml in YAML 1.1 mode) produces for the same text."""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from mlsubmit.job import scalars
from mlsubmit.job.scalars import interpret

NUMBER = frozenset({"number"})
INTEGER = frozenset({"integer"})
INT64 = frozenset({"integer", "string"})
STRING = frozenset({"string"})
BOOLEAN = frozenset({"boolean"})

# Each row's own examples (scalars.SPELLINGS, by name): each must be classified by its row.
EXAMPLES = {
    "null": ("~", "null", "Null", "NULL", ""),
    "boolean": ("yes", "No", "ON", "off", "y", "N", "true", "False"),
    "sexagesimal float": ("1:30.5",),
    "float": ("1.5", "1.", "50.e9", "1e-5", "1E5", "+1e5", "6.02e+23", ".5", "1_0.5"),
    "infinity or NaN": (".inf", "-.Inf", ".NaN"),
    "binary integer": ("0b101",),
    "octal integer": ("0755", "012"),
    "decimal integer": ("0", "-0", "42", "+3", "1_000"),
    "hexadecimal integer": ("0x1F", "0x_1"),
    "sexagesimal integer": ("1:30", "190:20:30"),
    "timestamp": ("2024-01-31", "2001-12-14t21:59:43.10-05:00"),
}
# Spellings beyond the table's own examples that must resolve the way gcloud's loader resolves them.
EXTRA = ["-.5", "+.5", "0o17", "09", "08", "1,000", "1e-5s", "3600s", "2.11", "1.15", "yEs", "TRUE", "tRUE",
         "0.", "00", "1__0", "-0x1F", "+0b11", "Y", "n", "NULL", "nULL", "1:60", "12:30:45"]  # fmt: skip


def _examples() -> list[str]:
    return [text for row in scalars.SPELLINGS for text in EXAMPLES[row.name]] + EXTRA


def _gcloud_python() -> Path | None:
    gcloud = shutil.which("gcloud")
    if gcloud is None:
        return None
    root = Path(os.path.realpath(gcloud)).parent.parent
    python = root / "platform" / "bundledpythonunix" / "bin" / "python3"
    return (
        python
        if python.is_file() and (root / "lib" / "googlecloudsdk" / "core" / "yaml.py").is_file()
        else None
    )


LOADER = """
import json, sys, warnings
warnings.simplefilter("ignore")
sys.path[:0] = [sys.argv[1] + "/lib", sys.argv[1] + "/lib/third_party"]
from googlecloudsdk.core import yaml
out = []
for text in json.load(sys.stdin):
    value = yaml.load("v: " + text + "\\n")["v"]
    kind = type(value).__name__
    if kind in ("date", "datetime"):
        value = None
    elif kind == "float" and value != value:
        value = "nan"
    elif kind == "float" and value in (float("inf"), float("-inf")):
        value = str(value)
    out.append([kind, value])
json.dump(out, sys.stdout)
"""


def _ours(text: str) -> list[Any]:
    row = scalars.classify(text)
    if row is None:
        return ["str", text]
    if row.name == "timestamp":
        return ["date", None]
    value = row.value(text)
    kind = {bool: "bool", int: "int", float: "float", type(None): "NoneType"}[type(value)]
    if isinstance(value, float) and math.isnan(value):
        value = "nan"
    elif isinstance(value, float) and math.isinf(value):
        value = str(value)
    return [kind, value]


@pytest.mark.gcloud
@pytest.mark.timeout(60)
def test_the_table_says_what_gclouds_yaml_loader_produces() -> None:
    python = _gcloud_python()
    if python is None:
        pytest.skip("needs gcloud's bundled Python and its googlecloudsdk.core.yaml")
    texts = _examples()
    done = subprocess.run(
        [str(python), "-c", LOADER, str(python.parents[3])],
        input=json.dumps(texts),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    theirs = json.loads(done.stdout)
    mismatches = {
        text: (ours, their)
        for text, ours, their in zip(texts, map(_ours, texts), theirs, strict=True)
        if [("date" if their[0] == "datetime" else their[0]), their[1]] != ours
    }
    assert mismatches == {}


# fmt: off
MEANINGS = [
    # text, plain, field kinds, value sent, warns
    ("1e-5", True, NUMBER, 1e-5, False),
    ("1E5", True, NUMBER, 100000.0, False),
    ("50.e9", True, NUMBER, 5e10, False),
    ("-.5", True, NUMBER, -0.5, False),
    ("1_000", True, NUMBER, 1000, False),
    ("0x10", True, NUMBER, 16, False),
    ("0755", True, NUMBER, 493, True),
    ("1:30", True, NUMBER, 90, True),
    ("1e-5", False, NUMBER, 1e-5, False),       # a quoted number is still a number to the service and gcloud
    ("4", False, INTEGER, 4, False),
    ("1e3", True, INTEGER, 1000, False),         # a whole float where an integer is wanted
    ("2.5", True, INTEGER, 2.5, False),          # left for the schema to refuse
    ("0755", True, INT64, 493, True),            # an int64 count: the number, as gcloud sends it
    ("0755", False, INT64, "0755", False),       # quoted: text (sent as "755", like gcloud)
    ("yes", True, BOOLEAN, True, False),
    ("Off", True, BOOLEAN, False, False),
    ("n", True, BOOLEAN, False, False),
    ("yes", False, BOOLEAN, "yes", False),       # quoted: a string, which the schema refuses (gcloud does too)
    ("0755", True, STRING, "0755", False),
    ("1:30", True, STRING, "1:30", False),
    ("2024-01-31", True, STRING, "2024-01-31", False),
    ("on", True, STRING, "on", False),
    ("2.10", True, STRING, "2.10", False),       # a version stays the text written, not the float 2.1
    ("1e-5", True, STRING, "1e-5", False),
    ("~", True, STRING, None, False),
    ("", True, NUMBER, None, False),
    ("yes", True, NUMBER, True, False),          # a boolean where a number is wanted: the schema refuses it
    ("2024-01-31", True, NUMBER, "2024-01-31", False),
    ("on", True, None, "on", False),             # a key the schema does not know: words and dates stay text
    ("true", True, None, True, False),
    ("1e-5", True, None, 1e-5, False),
    ("2024-01-31", True, None, "2024-01-31", False),
]
# fmt: on


@pytest.mark.parametrize(("text", "plain", "kinds", "value", "warns"), MEANINGS)
def test_each_spelling_means_what_its_field_wants(
    text: str, plain: bool, kinds: frozenset[str] | None, value: Any, warns: bool
) -> None:
    meaning = interpret(text, plain, kinds)
    assert meaning.value == value and type(meaning.value) is type(value)
    assert (meaning.note is not None) == warns


def test_the_octal_warning_says_what_the_value_became() -> None:
    assert interpret("0755", True, NUMBER).note == "0755 is an octal number in YAML 1.1, so it means 493"


def test_every_example_of_the_table_is_classified_by_its_own_row() -> None:
    for row in scalars.SPELLINGS:
        for text in EXAMPLES[row.name]:
            assert scalars.classify(text) is row, text


@pytest.mark.parametrize("text", ["1e400", ".inf", "-.Inf", ".nan"])
def test_an_infinite_number_where_an_integer_is_wanted_stays_text(text: str) -> None:
    assert interpret(text, True, INTEGER).value == text
    assert interpret(text, True, INT64).value == text


def test_the_first_character_gate_never_changes_a_classification() -> None:
    """A row's expression is tried only on texts starting with one of its ``starts``: exactly the texts it can
    match, so the gate decides as the expressions alone would, over every printable first character."""
    import itertools

    samples = [
        *_examples(),
        "",
        "us-central1",
        "n1-standard-4",
        "trainer.task",
        "CUSTOM",
        "gs://b/p",
        " 1",
        "\t",
    ]
    samples += [
        a + b for a, b in itertools.product(map(chr, range(32, 127)), ["", "1", ".5", "e3", "x", ":30"])
    ]
    for text in samples:
        ungated = next((row for row in scalars.SPELLINGS if row.pattern.match(text)), None)
        assert scalars.classify(text) is ungated, repr(text)


def test_words_no_spelling_can_start_with_compile_none_of_the_table() -> None:
    scalars._re.cache_clear()
    for text in ("us-central1", "CUSTOM", "gs://bucket/trainer.tar.gz", "BASIC_GPU", "master-replica-0"):
        assert scalars.classify(text) is None
    assert scalars._re.cache_info().currsize == 0
    assert scalars.classify("n1-standard-4") is None
    assert scalars._re.cache_info().currsize == 2  # the null and boolean rows start with n
