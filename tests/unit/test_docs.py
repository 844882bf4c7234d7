"""docs/ says what the code does: every command's options table is the one its click parameters generate, every
command has one, and every link between README.md and docs/ lands on a page and a heading that exist."""

from __future__ import annotations

import re
from pathlib import Path

import click
import pytest

from tests import docs_tables
from tests.docs_tables import DOCS, REGENERATE, REPO
from tests.fakes.cli import run_cli

README = REPO / "README.md"


def test_every_options_table_is_the_one_the_code_generates() -> None:
    stale = [str(page.relative_to(REPO)) for page in docs_tables.stale_pages()]
    assert stale == [], f"options tables out of date in {stale}: run `{REGENERATE}` and commit the result"


def test_every_command_has_exactly_one_options_table() -> None:
    shown = [command for page in docs_tables.pages() for command in docs_tables.blocks(page)]
    expected = sorted(docs_tables.documented_commands())
    assert sorted(set(shown)) == expected, f"add a `<!-- options: COMMAND -->` block, then run `{REGENERATE}`"
    assert len(shown) == len(set(shown)), "a command's table appears twice"


def test_no_option_help_cites_a_readme_section() -> None:
    """The README keeps no section an option could point at: an option's help cites the docs/ page instead."""
    citing = [
        f"{path} {param.opts[0]}"
        for path, (command, ctx) in docs_tables.documented_commands().items()
        for param in command.get_params(ctx)
        if isinstance(param, click.Option) and "README" in (param.help or "")
    ]
    assert citing == []


def test_a_changed_option_makes_its_table_stale(monkeypatch: pytest.MonkeyPatch) -> None:
    """The drift check can fail: an option whose help changes no longer matches its page."""
    command, ctx = docs_tables.documented_commands()["mlsubmit jobs cancel"]
    option = next(p for p in command.get_params(ctx) if isinstance(p, click.Option) and "--format" in p.opts)
    monkeypatch.setattr(option, "help", "A help text no page holds.")
    assert "jobs.md" in [page.name for page in docs_tables.stale_pages()]
    page = DOCS / "jobs.md"
    assert "A help text no page holds." in docs_tables.regenerated(page.read_text(encoding="utf-8"))


def test_regeneration_rewrites_only_the_blocks() -> None:
    text = "# Page\n\nProse stays.\n\n<!-- options: mlsubmit jobs cancel -->\nold\n<!-- end options -->\n\nAfter.\n"
    new = docs_tables.regenerated(text)
    assert new.startswith("# Page\n\nProse stays.\n\n<!-- options: mlsubmit jobs cancel -->\n")
    assert new.endswith("<!-- end options -->\n\nAfter.\n")
    assert "\nold\n" not in new and "| `--format` | `text` \\| `json` \\| `yaml` | `text` |" in new
    assert docs_tables.regenerated(new) == new


# --- README: short, with the Quick start .ci/run runs, and links that land -----------------------------------


def test_the_readme_is_short_and_keeps_the_quick_start_ci_runs() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 150
    quick_start = text.split("\n## Quick start\n", 1)[1].split("\n## ", 1)[0]
    assert quick_start.count("```sh\n") == 2  # .ci/run runs the second block


def anchors(page: Path) -> set[str]:
    """GitHub's anchors of a page's headings: lower case, punctuation but `-` and `_` dropped, spaces as `-`."""
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
    headings = re.findall(r"^#{1,6} (.+)$", text, re.M)
    return {re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-") for heading in headings}


# Pages other parts of the project write (Kubernetes, cost); linked before they land, checked once they exist.
LINK = re.compile(r"\]\((?!https?:|mailto:)([^)\s]+)\)")


def broken_links(page: Path, root: Path = REPO) -> list[str]:
    broken = []
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
    for target in LINK.findall(text):
        path, _, anchor = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        if not linked.exists():
            broken.append(f"{page.relative_to(root)}: {target} (no such file)")
        elif linked.exists() and anchor and linked.suffix == ".md" and anchor not in anchors(linked):
            broken.append(f"{page.relative_to(root)}: {target} (no such heading)")
    return broken


def test_every_link_of_the_readme_and_docs_lands() -> None:
    broken = [b for page in [README, *docs_tables.pages()] for b in broken_links(page)]
    assert broken == []


# A repository path in backquotes: `mlsubmit/targets/vertex_tables.py`, `tests/acceptance/test_*.py`, `examples/ci/`.
# (a file with its extension, or a folder with its slash: `mlsubmit/job-id`, an annotation, is neither)
CITED = re.compile(r"`((?:mlsubmit|tests|benchmarks|examples|schemas|docs|\.ci)/[\w./*-]*(?:\.[a-z]+|/))`")


def test_every_file_the_readme_and_docs_name_exists() -> None:
    """The pages name the modules that hold the dated tables and the tests that hold a claim: a moved file shows."""
    missing = [
        f"{page.relative_to(REPO)}: {cited}"
        for page in [README, *docs_tables.pages()]
        for cited in CITED.findall(page.read_text(encoding="utf-8"))
        if not any(REPO.glob(cited.rstrip("/")))
    ]
    assert missing == []


def test_the_link_check_can_fail(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("# A heading\n\n[ok](#a-heading) [gone](#nothing) [file](missing.md)\n", encoding="utf-8")
    assert [b.split(": ", 1)[1] for b in broken_links(page, tmp_path)] == [
        "#nothing (no such heading)",
        "missing.md (no such file)",
    ]


# --- the examples the pages show are what the CLI prints ----------------------------------------------------


def test_the_config_pages_error_example_is_what_mlsubmit_prints(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    section = (
        (DOCS / "config.md").read_text(encoding="utf-8").split("\n## Errors\n", 1)[1].split("\n## ", 1)[0]
    )
    config = section.split("```yaml\n", 1)[1].split("```", 1)[0]
    shown = section.split("\n```\n$ mlsubmit ", 1)[1].split("```", 1)[0].splitlines()
    (tmp_path / "config.yaml").write_text(config, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    result = run_cli(shown[0].split())
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr.splitlines() == shown[1:]
