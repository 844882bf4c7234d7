"""The `--` split shared by the click commands (the shared options themselves are in ``cli/options.py``)."""

from __future__ import annotations

import click

APP_ARGS_HINT = "arguments for your trainer go after `--`, e.g. `mlsubmit {cmd} ... -- --epochs 3`"


class AppArgsCommand(click.Command):
    """A command whose arguments after ``--`` are the app's (``ctx.meta["user_args"]``; None: no ``--``)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        # the run ledger (docs/cost.md)
        ctx.meta["argv"] = ["mlsubmit", *ctx.command_path.split(" ")[1:], *args]
        cut = args.index("--") if "--" in args else len(args)
        ctx.meta["user_args"] = list(args[cut + 1 :]) if cut < len(args) else None
        args = args[:cut]
        try:
            return super().parse_args(ctx, args)
        except click.UsageError as err:
            message = err.format_message()
            if isinstance(err, click.NoSuchOption) or "Got unexpected extra argument" in message:
                hint = APP_ARGS_HINT.format(cmd=ctx.command_path.split(" ", 1)[-1])
                raise click.UsageError(f"{message.rstrip('.')}; {hint}", ctx) from None
            raise
