"""JSON and YAML for stdout, valid and exact whatever a string holds (docs/security.md): DEL, C1 controls, lone
surrogates, bidi overrides and line separators are escaped in the format's own syntax, never replaced. JSON
(https://www.rfc-editor.org/rfc/rfc8259#section-7): each becomes ``\\uXXXX`` in its string. YAML
(https://yaml.org/spec/1.2.2/#57-escaped-characters): a string holding one is double-quoted, non-ASCII escaped."""

from __future__ import annotations

import functools
import json
import re
from typing import Any

# Written raw, these act on a terminal or change how text reads (C0 is escaped by both encoders already): DEL,
# C1, ALM, zero-width and bidi marks, line/paragraph separators, bidi isolates, BOM, and lone surrogates
# (https://www.unicode.org/reports/tr9/#Explicit_Directional_Formatting_Characters).
UNSAFE_CHARS = "[\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff\ud800-\udfff]"


@functools.cache
def unsafe() -> re.Pattern[str]:
    """:data:`UNSAFE_CHARS` compiled on first use: the compile costs a dry run's ASCII output more than its check."""
    return re.compile(UNSAFE_CHARS)


def json_text(data: Any) -> str:
    """``json.dumps`` (non-ASCII kept readable) with every :data:`UNSAFE_CHARS` character escaped as ``\\uXXXX``."""
    text = json.dumps(data, indent=2, ensure_ascii=False)
    if text.isascii() and "\x7f" not in text:  # DEL: the only unsafe ASCII character (C0 is escaped)
        return text
    return unsafe().sub(lambda m: f"\\u{ord(m.group()):04x}", text)


# YAML 1.1 booleans and null (https://yaml.org/type/bool.html, https://yaml.org/type/null.html): quoted as strings
YAML_WORDS = frozenset(("yes", "no", "true", "false", "on", "off", "null", "y", "n"))


def _bare(value: Any) -> bool:
    """A short ASCII word (letters, digits, ``_ - .``, a letter first) no YAML reader takes for anything else."""
    word = isinstance(value, str) and 0 < len(value) <= 100 and value.isascii() and value[0].isalpha()
    return word and value.translate(_SEPARATORS).isalnum() and value.lower() not in YAML_WORDS


_SEPARATORS = str.maketrans("", "", "_-.")


def yaml_text(data: Any, *, literal_blocks: bool = False) -> str:
    """Safe YAML, block style; ``literal_blocks``: a multi-line string as a ``|`` block (when it is safe). A flat
    mapping of bare words (a submit's ``jobId``/``state``) is written without loading PyYAML, as PyYAML writes it."""
    if isinstance(data, dict) and data and all(_bare(k) and _bare(v) for k, v in data.items()):
        return "".join(f"{key}: {value}\n" for key, value in data.items())
    import yaml

    dumper = _dumper(literal_blocks)
    return str(yaml.dump(data, Dumper=dumper, sort_keys=False, default_flow_style=False, allow_unicode=True))


@functools.lru_cache(maxsize=2)
def _dumper(literal_blocks: bool) -> Any:
    import yaml

    class Dumper(yaml.SafeDumper):
        def write_double_quoted(self, text: str, split: bool = True) -> None:
            # A string holding an unsafe character is double-quoted (below): escape all but ASCII in it.
            keep = self.allow_unicode
            self.allow_unicode = keep and not unsafe().search(text)
            try:
                super().write_double_quoted(text, split)
            finally:
                self.allow_unicode = keep

    def text(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
        style = '"' if unsafe().search(value) else "|" if literal_blocks and "\n" in value else None
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)

    Dumper.add_representer(str, text)
    return Dumper
