"""A small gitignore matcher for `.gcloudignore` and `.mlsubmitignore` files.

We implement the gitignore rules ourselves rather than depend on `pathspec`: the subset we need (comments,
negation, anchoring, directory-only patterns, `*`, `?`, `[...]`, `**`, and gcloud's `#!include:FILE`
directive) is about a hundred lines, and it keeps the runtime dependency list short.
Reference: https://git-scm.com/docs/gitignore#_pattern_format
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from mlsubmit.errors import PackagingError

#: Ignore files read from the build context and from every directory of the package, in this order
#: (so `.mlsubmitignore` can override `.gcloudignore` with `!pattern`).
IGNORE_FILE_NAMES = (".gcloudignore", ".mlsubmitignore")

_INCLUDE_DIRECTIVE = "#!include:"
_MAX_INCLUDE_DEPTH = 8


@dataclass(frozen=True)
class Rule:
    """One compiled pattern, applying to paths under `base` (posix, relative to the tree root; "" = all)."""

    regex: re.Pattern[str]
    negated: bool
    dir_only: bool
    base: str
    source: str  # "FILE:LINE", for error messages and debugging

    def matches(self, rel: str, is_dir: bool) -> bool:
        """Whether this rule's pattern matches `rel` (posix path relative to the tree root)."""
        if self.dir_only and not is_dir:
            return False
        if self.base:
            if not rel.startswith(self.base + "/"):
                return False
            rel = rel[len(self.base) + 1 :]
        return self.regex.fullmatch(rel) is not None


def _translate_segment(segment: str) -> str:
    """Regex for one path segment: `*` and `?` never cross a `/`; `[...]` is a character class."""
    out: list[str] = []
    i = 0
    n = len(segment)
    while i < n:
        c = segment[i]
        if c == "\\" and i + 1 < n:
            out.append(re.escape(segment[i + 1]))
            i += 2
            continue
        if c == "*":
            # `a**b` inside a segment is an ordinary star in git.
            while i + 1 < n and segment[i + 1] == "*":
                i += 1
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            j = i + 1
            if j < n and segment[j] in "!^":
                j += 1
            if j < n and segment[j] == "]":
                j += 1
            while j < n and segment[j] != "]":
                j += 1
            if j >= n:
                out.append(re.escape(c))  # an unclosed bracket is a literal `[`
            else:
                body = segment[i + 1 : j]
                negate = body[:1] in ("!", "^")
                if negate:
                    body = body[1:]
                # Escape what Python's regex treats specially inside a class (nested sets, set operations).
                body = re.sub(r"([\\^\[&~|])", r"\\\1", body)
                out.append(f"[{'^/' if negate else ''}{body}]" if body else "(?!)")
                i = j
        else:
            out.append(re.escape(c))
        i += 1
    return "".join(out)


def compile_pattern(pattern: str) -> tuple[re.Pattern[str], bool] | None:
    """Compile one gitignore pattern (already stripped of `!`) to (regex, dir_only); None for a no-op."""
    dir_only = pattern.endswith("/")
    pattern = pattern.rstrip("/")
    if not pattern:
        return None
    # A slash at the start or in the middle anchors the pattern to the ignore file's directory;
    # otherwise it matches a name at any depth.
    anchored = "/" in pattern
    pattern = pattern.lstrip("/")
    segments = pattern.split("/")
    parts: list[str] = [] if anchored else ["(?:.*/)?"]
    last = len(segments) - 1
    for index, segment in enumerate(segments):
        if segment == "**":
            if index == last:
                parts.append(".*")  # `dir/**`: everything inside
            else:
                parts.append("(?:.*/)?")  # `**/x` and `a/**/b`: zero or more directories
            continue
        parts.append(_translate_segment(segment))
        if index != last:
            parts.append("/")
    return re.compile("".join(parts), re.DOTALL), dir_only


def _strip_trailing_spaces(line: str) -> str:
    """Trailing spaces are dropped unless escaped with a backslash (gitignore rule)."""
    stripped = line.rstrip(" ")
    if stripped.endswith("\\") and len(stripped) < len(line):
        stripped += " "
    return stripped


def parse_ignore_file(path: Path, base: str, depth: int = 0) -> list[Rule]:
    """Read one ignore file; `base` is its directory relative to the tree root ("" for the root)."""
    if depth > _MAX_INCLUDE_DEPTH:
        raise PackagingError(
            f"{path}: `#!include:` nests more than {_MAX_INCLUDE_DEPTH} levels; remove the loop"
        )
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise PackagingError(f"cannot read ignore file {path}: {exc}. Fix or remove it.") from exc
    rules: list[Rule] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        if raw.startswith(_INCLUDE_DIRECTIVE):
            # gcloud's extension: `#!include:.gitignore` pulls in another file's patterns at this point.
            included = path.parent / raw[len(_INCLUDE_DIRECTIVE) :].strip()
            if included.is_file():
                rules.extend(parse_ignore_file(included, base, depth + 1))
            continue
        line = _strip_trailing_spaces(raw)
        if not line or line.startswith("#"):
            continue
        negated = line.startswith("!")
        if negated or line.startswith(("\\!", "\\#")):
            line = line[1:]
        compiled = compile_pattern(line)
        if compiled is None:
            continue
        regex, dir_only = compiled
        rules.append(Rule(regex, negated, dir_only, base, f"{path}:{number}"))
    return rules


class IgnoreRules:
    """An ordered list of rules; the last rule that matches a path decides, as in git."""

    def __init__(self, rules: list[Rule] | None = None) -> None:
        self.rules: list[Rule] = list(rules or [])

    def add_dir(self, directory: Path, base: str) -> None:
        """Append the rules of the ignore files found directly in `directory` (relative path `base`)."""
        for name in IGNORE_FILE_NAMES:
            candidate = directory / name
            if candidate.is_file():
                self.rules.extend(parse_ignore_file(candidate, base))

    def ignored(self, rel: str, is_dir: bool) -> bool:
        """Whether `rel` (posix, relative to the tree root) is excluded."""
        verdict = False
        for rule in self.rules:
            if rule.matches(rel, is_dir):
                verdict = not rule.negated
        return verdict
