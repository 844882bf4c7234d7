"""`mlsubmit --help` lists the commands without importing them, and the list says what each command's own help says."""

from __future__ import annotations

import inspect
import subprocess
import sys

import click
import pytest

from mlsubmit.cli import COMMANDS, cli


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_each_summary_is_the_first_paragraph_of_the_commands_help(name: str) -> None:
    command = cli.get_command(click.Context(cli), name)
    assert command is not None
    first_paragraph = inspect.cleandoc(command.help or "").split("\n\n")[0].replace("\n", " ")
    assert " ".join(COMMANDS[name].split()) == " ".join(first_paragraph.split())
    for limit in (30, 45, 80):
        assert click.Command(name, help=COMMANDS[name]).get_short_help_str(
            limit
        ) == command.get_short_help_str(limit)


def test_help_imports_no_command_module() -> None:
    code = (
        "import sys\n"
        "from mlsubmit.cli import main\n"
        "try:\n"
        "    main(['--help'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "commands = ['mlsubmit.cli.' + name for name in __import__('mlsubmit.cli').cli.COMMANDS]\n"
        "loaded = sorted(m for m in sys.modules if m in commands or m.startswith('mlsubmit.job'))\n"
        "print('LOADED', loaded)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "Commands:" in out
    for name in COMMANDS:
        assert f"  {name}" in out
    assert "LOADED []" in out


@pytest.mark.parametrize(
    "argv", [["training"], ["jobs", "wait"], ["jobs", "cost"], ["local", "train"], ["export"]]
)
def test_every_command_takes_dash_h(argv: list[str]) -> None:
    """-h is declared once, on the root group; each command's context inherits it."""
    from click.testing import CliRunner

    result = CliRunner().invoke(cli, [*argv, "-h"])
    assert result.exit_code == 0, result.output
    assert result.output.startswith(f"Usage: cli {' '.join(argv)} ")
