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
