"""A click group that imports a command's module only when that command runs.

Most of a `holm` process's start is imports (aiohttp, rich, the wire types), and most
commands need few of them: `holm --help` needs none, `holm trace FILE.jsonl` no client. So
the group knows each command by its name, the module that holds it (in the module's
`COMMANDS`) and its one-line help, which is all `holm --help` prints. `tests/cli/
test_startup.py` holds each line to the help of the command it stands for.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import click


class LazyCommand(NamedTuple):
    """Where a command is, and what `--help` says of it before it is imported."""

    module: str
    short_help: str


class LazyGroup(click.Group):
    """A group whose commands are `LazyCommand`s: one is imported the first time it is
    looked up to run (or to print its own help), never to list them."""

    def __init__(self, *args: Any, lazy: Mapping[str, LazyCommand], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy = dict(lazy)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *self.lazy})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in self.lazy:
            self.add_command(load(cmd_name, self.lazy[cmd_name]))
        return self.commands.get(cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # click's own would import every command to ask it its short help.
        names = self.list_commands(ctx)
        if not names:
            return
        limit = formatter.width - 6 - max(len(name) for name in names)
        rows = [(name, self._short_help(name, limit)) for name in names]
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def _short_help(self, name: str, limit: int) -> str:
        # A command not imported yet is cut to the width as click cuts one that is.
        command = self.commands.get(name) or click.Command(name, help=self.lazy[name].short_help)
        return command.get_short_help_str(limit)


def load(name: str, where: LazyCommand) -> click.Command:
    """The command called `name` among its module's `COMMANDS`."""
    commands: Sequence[click.Command] = importlib.import_module(where.module).COMMANDS
    for command in commands:
        if command.name == name:
            return command
    raise LookupError(f"{where.module} has no command {name!r} in its COMMANDS")


__all__ = ["LazyCommand", "LazyGroup", "load"]
