"""The `holm` command line: one click group, `main` (the `holm` console script), with each
command in its own module, registered below with `main.add_command`."""

from __future__ import annotations

import click

from holm.cli import (
    actions,
    boxes,
    browser,
    history,
    images,
    inside,
    mcp_cmd,
    widgets,
    workspaces,
)
from holm.cli.replay_cmd import diff, replay
from holm.cli.trace_cmd import trace


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="holm", prog_name="holm")
def main() -> None:
    """holm: isolated Linux desktops (boxes) that agents drive, and the trace of what was
    done in each."""


main.add_command(trace)
main.add_command(replay)
main.add_command(diff)
for command in (
    *boxes.COMMANDS,
    *actions.COMMANDS,
    *inside.COMMANDS,
    *browser.COMMANDS,
    *widgets.COMMANDS,
    *history.COMMANDS,
    *images.COMMANDS,
    *mcp_cmd.COMMANDS,
    *workspaces.COMMANDS,
):
    main.add_command(command)

__all__ = ["main"]
