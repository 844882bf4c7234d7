"""cli.serialize: JSON and YAML that read back exactly, with no character a terminal acts on written raw."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from mlsubmit.cli.serialize import json_text, unsafe, yaml_text

STRINGS = [
    "plain",
    "ünïcödé stays readable",
    "a\x7fb",
    "a\x85b",
    "\x9b31m",
    "a\ud800b",
    "a\x00b",
    "\u202egnp.exe",
    "a\u2028b\u2029c",
    "\ufeffbom",
    "\x1b[2J\x07",
    "two\nlines\x85",
]


@pytest.mark.parametrize("text", STRINGS)
@pytest.mark.parametrize("literal_blocks", [False, True])
def test_every_string_reads_back_exactly(text: str, literal_blocks: bool) -> None:
    data: Any = {"k": text, "list": [text, {"n": text}]}
    for out, load in (
        (json_text(data), json.loads),
        (yaml_text(data, literal_blocks=literal_blocks), yaml.safe_load),
    ):
        assert load(out) == data
        assert not unsafe().search(out) and "\x1b" not in out and "\x00" not in out
        out.encode("utf-8")  # no lone surrogate left


def test_readable_text_is_not_escaped() -> None:
    assert json_text({"k": "ünï"}) == '{\n  "k": "ünï"\n}'
    assert yaml_text({"k": "ünï"}) == "k: ünï\n"
    assert yaml_text({"s": "a\nb"}, literal_blocks=True) == "s: |-\n  a\n  b\n"


WORDS = [
    "QUEUED",
    "job_1",
    "a-b.c",
    "yes",
    "No",
    "null",
    "y",
    "on",
    "e1",
    "x" * 101,
    "1e3",
    "é",
    "a b",
    "a:",
    "",
]


@pytest.mark.parametrize("word", WORDS)
def test_a_flat_mapping_of_words_is_what_pyyaml_writes(word: str) -> None:
    data = {"jobId": word, "state": "QUEUED", word or "k": "v"}
    assert yaml_text(data) == yaml.dump(data, Dumper=yaml.SafeDumper, sort_keys=False, allow_unicode=True)


def test_a_submit_result_is_written_without_loading_pyyaml() -> None:
    """`training` prints ``jobId``/``state`` after a submit: PyYAML's import (~10 ms) is not paid for that."""
    import subprocess
    import sys

    code = (
        "import sys; from mlsubmit.cli.output import emit; emit({'jobId': 'j_1', 'state': 'QUEUED'}, 'text')"
    )
    code += "; print('yaml' in sys.modules)"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.splitlines() == ["jobId: j_1", "state: QUEUED", "False"]
