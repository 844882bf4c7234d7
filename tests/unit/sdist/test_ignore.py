"""The gitignore matcher behind `.gcloudignore` / `.mlsubmitignore`, table-driven against git's rules."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest

from mlsubmit.errors import PackagingError
from mlsubmit.sdist.ignore import IgnoreRules, parse_ignore_file


def rules_from(tmp_path: Path, text: str, base: str = "") -> IgnoreRules:
    path = tmp_path / ".mlsubmitignore"
    path.write_text(text)
    return IgnoreRules(parse_ignore_file(path, base))


@pytest.mark.parametrize(
    ("patterns", "path", "is_dir", "ignored"),
    [
        ("*.log", "a.log", False, True),
        ("*.log", "deep/down/a.log", False, True),  # no slash: any depth
        ("*.log", "a.logx", False, False),
        ("/a.log", "a.log", False, True),  # leading slash: anchored
        ("/a.log", "sub/a.log", False, False),
        ("sub/a.log", "sub/a.log", False, True),  # middle slash: anchored
        ("sub/a.log", "x/sub/a.log", False, False),
        ("build/", "build", True, True),  # trailing slash: directories only
        ("build/", "build", False, False),
        ("**/cache", "a/b/cache", True, True),
        ("**/cache", "cache", True, True),
        ("data/**", "data/x/y.csv", False, True),
        ("data/**", "data", True, False),
        ("a/**/b", "a/b", False, True),
        ("a/**/b", "a/x/y/b", False, True),
        ("?.txt", "a.txt", False, True),
        ("?.txt", "ab.txt", False, False),
        ("*.txt", "dir/x.txt", False, True),
        ("d*/x", "dir/x", False, True),
        ("d*/x", "dir/sub/x", False, False),  # `*` never crosses a slash
        ("[abc].py", "b.py", False, True),
        ("[!abc].py", "d.py", False, True),
        ("[!abc].py", "a.py", False, False),
        ("[a-c]x", "bx", False, True),
        ("\\#hash", "#hash", False, True),
        ("\\!bang", "!bang", False, True),
        ("# comment", "# comment", False, False),
        ("*.ckpt\n!best.ckpt", "best.ckpt", False, False),  # negation: last match wins
        ("!best.ckpt\n*.ckpt", "best.ckpt", False, True),
        ("trailing  ", "trailing", False, True),  # unescaped trailing spaces dropped
        ("sp\\ ", "sp ", False, True),
        ("a[b", "a[b", False, True),  # unclosed bracket is literal
        ("", "anything", False, False),
    ],
)
def test_gitignore_patterns(tmp_path: Path, patterns: str, path: str, is_dir: bool, ignored: bool) -> None:
    assert rules_from(tmp_path, patterns + "\n").ignored(path, is_dir) is ignored


def test_rules_only_apply_under_their_base(tmp_path: Path) -> None:
    rules = rules_from(tmp_path, "/notes.md\n", base="trainer")

    assert rules.ignored("trainer/notes.md", False)
    assert not rules.ignored("notes.md", False)
    assert not rules.ignored("trainer/sub/notes.md", False)
    assert not rules.ignored("other/notes.md", False)


def test_include_directive_pulls_in_another_file(tmp_path: Path) -> None:
    (tmp_path / ".gitignore").write_text("*.tmp\n")

    rules = rules_from(tmp_path, "#!include:.gitignore\n!keep.tmp\n")

    assert rules.ignored("x.tmp", False)
    assert not rules.ignored("keep.tmp", False)


def test_include_loop_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(PackagingError, match="nests"):
        rules_from(tmp_path, "#!include:.mlsubmitignore\n")


def test_unreadable_ignore_file_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / ".gcloudignore"
    path.write_bytes(b"\xff\xfe bad")

    with pytest.raises(PackagingError, match=r"\.gcloudignore"):
        parse_ignore_file(path, "")


CROSS_PATTERNS = ["*.log", "/a.log", "sub/a.log", "**/cache", "data/**", "a/**/b", "?.txt", "d*/x", "[!abc].py",
                  "sub/", "a/b/", "**/b/*.py", "x/**/*.txt", "*/x", "b*", "a/*/c", "foo/bar/", "foo"]  # fmt: skip
CROSS_PATHS = ["a.log", "x/a.log", "sub/a.log", "sub/b/a.log", "a/b/cache/x", "cache/f", "data/x/y.csv", "a/b",
               "a/x/y/b", "a.txt", "ab.txt", "dir/x", "dir/sub/x", "b.py", "d.py", "sub/x.py", "a/b/c",
               "x/y/z.txt", "x/z.txt", "foo/bar/baz", "foo", "z/foo/q", "q/foo"]  # fmt: skip


@pytest.mark.parametrize("pattern", CROSS_PATTERNS)
def test_agrees_with_pathspec_gitignore_spec(tmp_path: Path, pattern: str) -> None:
    """Cross-check against pathspec (a test-time reference only; mlsubmit does not depend on it)."""
    pathspec = pytest.importorskip("pathspec")
    spec = pathspec.GitIgnoreSpec.from_lines([pattern])
    rules = rules_from(tmp_path, pattern + "\n")
    for path in CROSS_PATHS:
        parts = path.split("/")
        # git ignores a file when it or any of its parent directories matches; so does our walk.
        ours = any(rules.ignored("/".join(parts[:i]), i < len(parts)) for i in range(1, len(parts) + 1))
        assert ours == spec.match_file(path), path


def reference_match(pattern: str, path: str) -> bool:
    """gitignore matching by brute force over segments (fnmatch within one), for patterns without `\\`."""
    import fnmatch

    pattern = pattern.rstrip("/")
    anchored = "/" in pattern
    segments = pattern.lstrip("/").split("/")
    if not anchored:
        segments = ["**", *segments]
    parts = path.split("/")

    @functools.cache
    def match(i: int, j: int) -> bool:
        if i == len(segments):
            return j == len(parts)
        if segments[i] == "**":
            if i == len(segments) - 1:
                return j < len(parts)  # `dir/**`: something inside
            return any(match(i + 1, k) for k in range(j, len(parts) + 1))
        return j < len(parts) and fnmatch.fnmatchcase(parts[j], segments[i]) and match(i + 1, j + 1)

    return match(0, 0)


def test_patterns_agree_with_a_brute_force_reference() -> None:
    import random

    from mlsubmit.sdist.ignore import compile_pattern

    rng = random.Random(12)
    pieces = ["a", "b", "*", "**", "?", "[ab]", "[!a]", "/"]
    checked = 0
    for _ in range(4000):
        pattern = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 7)))
        if "//" in pattern or not pattern.strip("/"):
            continue
        compiled = compile_pattern(pattern)
        assert compiled is not None
        for _ in range(5):
            path = "/".join(
                "".join(rng.choice("ab") for _ in range(rng.randint(1, 4))) for _ in range(rng.randint(1, 4))
            )
            expected = reference_match(pattern, path)
            assert (compiled[0].fullmatch(path) is not None) is expected, (pattern, path)
            checked += 1
    assert checked > 10_000


@pytest.mark.timeout(10)
@pytest.mark.parametrize(
    "pattern",
    ["*a" * 20 + "*b", "**/" + "a*" * 10 + "/**/" + "*a" * 10 + "b/**/x", "a/**/**/**/**/**/**/**/c"],
)
def test_patterns_with_many_stars_do_not_backtrack(tmp_path: Path, pattern: str) -> None:
    rules = rules_from(tmp_path, pattern + "\n")
    for path in ["a" * 250, "/".join(["a" * 50] * 40), "a/" * 200 + "b"]:
        assert rules.ignored(path, False) is False
