"""The options tables of docs/, generated from the click parameters of every command.

Each command page holds its table between two marker lines::

    <!-- options: mlsubmit training -->
    ...generated...
    <!-- end options -->

``python -m tests.docs_tables`` (from the repository root) rewrites every such block from the code; ``--check``
only reports the blocks that differ. tests/unit/test_docs.py fails when a block drifts from the code or a
command has no block, and names this command.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from pathlib import Path

import click

from mlsubmit.cli import cli

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
REGENERATE = "python -m tests.docs_tables"
BLOCK = re.compile(
    r"(<!-- options: (?P<command>[a-z][a-z -]*[a-z]) -->\n)(?P<body>.*?)(<!-- end options -->)", re.S
)
UNSET = {"Sentinel.UNSET", "None"}  # click's "no default", both spellings


def commands(
    command: click.Command = cli, ctx: click.Context | None = None
) -> Iterator[tuple[str, click.Command, click.Context]]:
    """(path, command, context) for ``mlsubmit`` itself and every command below it, groups included, the lazily
    loaded ones imported."""
    ctx = ctx or click.Context(command, info_name="mlsubmit", **command.context_settings)
    yield ctx.command_path, command, ctx
    if isinstance(command, click.Group):
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            if sub is not None and not sub.hidden:
                yield from commands(sub, click.Context(sub, parent=ctx, info_name=name))


def documented_commands() -> dict[str, tuple[click.Command, click.Context]]:
    """The commands a page must show a table for: every leaf command, and ``mlsubmit`` for its global options."""
    return {
        path: (command, ctx)
        for path, command, ctx in commands()
        if path == "mlsubmit" or not isinstance(command, click.Group)
    }


def cell(text: str) -> str:
    """One markdown table cell: one line, pipes escaped, and outside `code` the characters markdown would read
    as emphasis or HTML (``__init__.py``, ``<digest>``) escaped."""
    parts = " ".join(text.replace("\b", "").split()).split("`")
    for i in range(0, len(parts), 2):  # the even parts are outside backquotes
        parts[i] = re.sub(
            r"[\\*]|<(?=[A-Za-z/!?])|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])", lambda m: "\\" + m.group(), parts[i]
        )
    return "`".join(parts).replace("|", "\\|")


def option_names(param: click.Option) -> str:
    return " / ".join(f"`{name}`" for name in [*param.opts, *param.secondary_opts])


def type_of(param: click.Option) -> str:
    if param.is_flag and not param.count:
        kind = "flag"
    elif isinstance(param.type, click.Choice):
        kind = " | ".join(f"`{choice}`" for choice in param.type.choices)
    elif param.metavar:
        kind = f"`{param.metavar}`"
    elif isinstance(param.type, click.IntRange | click.FloatRange):
        kind = f"{'integer' if isinstance(param.type, click.IntRange) else 'number'} ({param.type._describe_range()})"
    else:
        kind = param.type.name if param.type.name.islower() else f"`{param.type.name}`"
    if param.multiple:
        kind += ", repeatable"
    return cell(kind)


def default_of(param: click.Option) -> str:
    default = param.default
    if callable(default):
        return "computed"
    if param.is_flag and not param.secondary_opts:
        return "on" if default is True and param.flag_value is True else ""
    if repr(default) in UNSET or str(default) in UNSET or default in ((), [], ""):
        return ""
    if isinstance(default, bool):
        return "on" if default else "off"
    return f"`{default}`"


def help_of(param: click.Option) -> str:
    text = param.help or ""
    envvars = [param.envvar] if isinstance(param.envvar, str) else list(param.envvar or ())
    if envvars:
        text += " Env: " + ", ".join(f"`{name}`" for name in envvars) + "."
    return cell(text)


def table(path: str) -> str:
    """The generated body of ``path``'s block: the usage line and one row per visible option."""
    documented = documented_commands()
    if path not in documented:
        raise LookupError(
            f"a docs page has an options block for {path!r}, which is no command: {sorted(documented)}"
        )
    command, ctx = documented[path]
    usage = " ".join([ctx.command_path, *command.collect_usage_pieces(ctx)])
    if isinstance(command, click.Group):
        usage = f"{ctx.command_path} [OPTIONS] COMMAND ..."
    rows = [
        "| option | type | default | what it does |",
        "|---|---|---|---|",
    ]
    for param in command.get_params(ctx):
        if not isinstance(param, click.Option) or param.hidden or "--help" in param.opts:
            continue
        rows.append(f"| {option_names(param)} | {type_of(param)} | {default_of(param)} | {help_of(param)} |")
    generated = f"<!-- generated by `{REGENERATE}` from the code; edit the option's help there -->\n"
    return f"{generated}```\n{usage}\n```\n\n" + "\n".join(rows) + "\n"


def blocks(page: Path) -> list[str]:
    """The command paths ``page`` holds a block for, in order."""
    return [m.group("command") for m in BLOCK.finditer(page.read_text(encoding="utf-8"))]


def regenerated(text: str) -> str:
    return BLOCK.sub(lambda m: m.group(1) + table(m.group("command")) + m.group(4), text)


def pages() -> list[Path]:
    return sorted(DOCS.glob("*.md"))


def stale_pages() -> list[Path]:
    """The pages whose blocks differ from what the code generates now."""
    return [
        page for page in pages() if regenerated(page.read_text(encoding="utf-8")) != page.read_text("utf-8")
    ]


def main(argv: list[str]) -> int:
    check = "--check" in argv
    stale = stale_pages()
    for page in stale:
        if not check:
            page.write_text(regenerated(page.read_text(encoding="utf-8")), encoding="utf-8")
        print(f"{'stale' if check else 'rewrote'}: {page.relative_to(REPO)}")
    return 1 if check and stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
