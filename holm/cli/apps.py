"""`holm app`: the catalog's applications, in a box and on the server.

holm app ls                      the catalog: each app and the packages it needs
holm app install BOX NAME…       install catalog apps into a running box (`POST …/apps`)
holm app BOX NAME [ARGS]…        open an app on a screen (`holm app launch BOX NAME …`)
"""

from __future__ import annotations

import click

from holm.cli.actions import launch_app
from holm.cli.output import print_json, print_table
from holm.cli.remote import Remote, remote


class _LaunchByDefault(click.Group):
    """`holm app BOX NAME` stays the launch it always was: a first argument that is not a
    subcommand's name is a box's ID, and the command is `launch`."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and not args[0].startswith("-") and args[0] not in self.commands:
            args = ["launch", *args]
        return super().parse_args(ctx, args)


@click.group("app", cls=_LaunchByDefault)
def app() -> None:
    """Applications: list the catalog, install apps into a box, open one on a screen."""


@app.command("ls")
@remote
def list_apps(remote: Remote) -> None:
    """List the catalog's applications and the Debian packages each needs (none: every box
    has it)."""
    catalog = remote.client.catalog()
    if remote.as_json:
        print_json(catalog)
        return
    rows = [[name, ",".join(catalog.packages.get(name, [])) or "-"] for name in catalog.apps]
    print_table(("NAME", "PACKAGES"), rows)


@app.command("install")
@click.argument("box_id")
@click.argument("names", nargs=-1, required=True, metavar="NAME...")
@remote
def install(remote: Remote, box_id: str, names: tuple[str, ...]) -> None:
    """Install catalog applications (or the spec's own) into a running box. A docker box
    fetches their packages; a local box has them when the host has."""
    box = remote.client.install_apps(box_id, list(names))
    if remote.as_json:
        print_json(box)
    else:
        click.echo(f"installed {', '.join(sorted(set(names)))} in {box.id}")


app.add_command(launch_app, "launch")

COMMANDS = [app]

__all__ = ["COMMANDS", "app"]
