"""`holm secret`: the named secrets of the caller's workspace, which a `type`, a `fill` or
an `exec` argument names instead of giving its value (docs/api.md, "Secrets"); and the
shredding of a trace's data key.

holm secret set NAME            reads the value from stdin (never from the command line,
                                which other users of the machine can read in ps)
holm secret ls                  names and lengths, never values
holm secret rm NAME
holm secret shred BOX_ID        destroys the trace's data key: a person's text it kept
                                sealed is gone for good
"""

from __future__ import annotations

import sys

import click

from holm.cli.output import print_json, print_table, when
from holm.cli.remote import Remote, remote
from holm.errors import BadRequest


@click.group("secret")
def secret() -> None:
    """Named secrets of your workspace: steps name them, the trace never holds them."""


@secret.command("set")
@click.argument("name")
@remote
def set_secret(remote: Remote, name: str) -> None:
    """Set NAME to the value read from stdin (a final newline is dropped)."""
    value = sys.stdin.read().removesuffix("\n")
    if not value:
        raise BadRequest("no value on stdin: `holm secret set NAME < file`")
    made = remote.client.set_secret(name, value)
    if remote.as_json:
        print_json(made)
    else:
        click.echo(f"{made.name} ({made.bytes} bytes)")


@secret.command("ls")
@remote
def list_secrets(remote: Remote) -> None:
    """List the workspace's secrets: names and lengths."""
    found = remote.client.secrets()
    if remote.as_json:
        print_json(found)
        return
    print_table(
        ("NAME", "BYTES", "SET"), [[s.name, str(s.bytes), when(s.set_at_ms)] for s in found]
    )


@secret.command("rm")
@click.argument("names", nargs=-1, required=True)
@remote
def remove_secrets(remote: Remote, names: tuple[str, ...]) -> None:
    """Remove secrets."""
    for name in names:
        remote.client.remove_secret(name)


@secret.command("shred")
@click.argument("box_id")
@remote
def shred(remote: Remote, box_id: str) -> None:
    """Destroy BOX_ID's trace's data key: what a person typed, kept sealed, is gone."""
    done = remote.client.shred_trace(box_id)
    if remote.as_json:
        print_json(done)
    else:
        click.echo("shredded" if done.shredded else "the trace had no data key")


COMMANDS = [secret]
