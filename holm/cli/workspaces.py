"""`holm workspace` and `holm key`: workspaces and their API keys, on a server, with its
server token (a workspace's key cannot make or remove keys).

holm workspace create NAME          prints the workspace's id (ws_…)
holm workspace ls
holm key create --workspace NAME    prints the key (holm_sk_…), the only time it is shown
holm key ls [--workspace NAME]
holm key rm KEY_ID…
"""

from __future__ import annotations

from collections.abc import Sequence

import click

from holm.cli.output import print_json, print_table, when
from holm.cli.remote import Remote, remote


@click.group("workspace")
def workspace() -> None:
    """Workspaces: each sees only its own boxes, their traces and its own events."""


@workspace.command("create")
@click.argument("name")
@remote
def create_workspace(remote: Remote, name: str) -> None:
    """Make a workspace named NAME and print its id (what a box's `owner` says)."""
    made = remote.client.create_workspace(name)
    if remote.as_json:
        print_json(made)
    else:
        click.echo(made.id)


@workspace.command("ls")
@remote
def list_workspaces(remote: Remote) -> None:
    """List the workspaces."""
    found = remote.client.workspaces()
    rows = [[ws.id, ws.name, when(ws.created_at_ms)] for ws in found]
    _listed(remote, found, ("ID", "NAME", "CREATED"), rows)


@click.group("key")
def key() -> None:
    """API keys: a key acts for its workspace, on its boxes only."""


@key.command("create")
@click.option("--workspace", "-w", required=True, help="The workspace's name (or id).")
@remote
def create_key(remote: Remote, workspace: str) -> None:
    """Make an API key of a workspace and print it. It is shown this once: the server
    keeps only its hash."""
    made = remote.client.create_key(workspace)
    if remote.as_json:
        print_json(made)
        return
    click.echo(made.key)
    click.echo(f"{made.id}: keep this key now; it is not shown again", err=True)


@key.command("ls")
@click.option("--workspace", "-w", help="Only this workspace's keys (its name or id).")
@remote
def list_keys(remote: Remote, workspace: str | None) -> None:
    """List the keys (their ids, never the keys)."""
    found = remote.client.keys(workspace)
    rows = [[k.id, k.workspace, when(k.created_at_ms)] for k in found]
    _listed(remote, found, ("ID", "WORKSPACE", "CREATED"), rows)


@key.command("rm")
@click.argument("key_ids", nargs=-1, required=True, metavar="KEY_ID...")
@remote
def remove_keys(remote: Remote, key_ids: tuple[str, ...]) -> None:
    """Remove keys by their id (key_…); each is refused from then on."""
    for key_id in key_ids:
        removed = remote.client.remove_key(key_id)
        if remote.as_json:
            print_json(removed)
        else:
            click.echo(removed.id)


def _listed(
    remote: Remote, found: Sequence[object], columns: Sequence[str], rows: list[list[str]]
) -> None:
    if remote.as_json:
        print_json(found)
    else:
        print_table(columns, rows)


COMMANDS = [workspace, key]
