"""`holm runtime`: the server's runtimes, and the remote ones added through the vendor API.

holm runtime ls
holm runtime add NAME PROVIDER [--field KEY=VALUE]… [--secret KEY=@FILE|KEY=-|KEY=VALUE]…
holm runtime set NAME [--field KEY=VALUE]… [--secret …]…
holm runtime rm NAME

A secret's value is best read from a file (`KEY=@FILE`, as a PEM is) or stdin (`KEY=-`):
one written on the command line shows in the process list and the shell's history. The
server seals secrets and never shows them again: `ls` lists their names.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click
import msgspec

from holm.cli.output import print_json, print_table
from holm.cli.remote import Remote, remote
from holm.errors import BadRequest
from holm.wire.api import RuntimeView


def _pairs(given: tuple[str, ...], what: str) -> list[tuple[str, str]]:
    pairs = []
    for item in given:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise BadRequest(f"--{what} {item!r} is not KEY=VALUE")
        pairs.append((key, value))
    return pairs


def fields_of(given: tuple[str, ...]) -> dict[str, Any]:
    """`KEY=VALUE` pairs; a VALUE that is JSON (a number, true, null, …) is taken as JSON."""
    fields: dict[str, Any] = {}
    for key, value in _pairs(given, "field"):
        try:
            fields[key] = msgspec.json.decode(value)
        except msgspec.DecodeError:
            fields[key] = value
    return fields


def secrets_of(given: tuple[str, ...]) -> dict[str, str]:
    secrets: dict[str, str] = {}
    for key, value in _pairs(given, "secret"):
        if value == "-":
            secrets[key] = sys.stdin.read()
        elif value.startswith("@"):
            try:
                secrets[key] = Path(value[1:]).read_text()
            except OSError as exc:
                raise BadRequest(f"--secret {key}: cannot read {value[1:]}: {exc}") from None
        else:
            secrets[key] = value
    return secrets


FIELD = click.option(
    "--field", "fields", multiple=True, metavar="KEY=VALUE", help="A field; repeatable."
)
SECRET = click.option(
    "--secret",
    "secrets",
    multiple=True,
    metavar="KEY=@FILE|KEY=-|KEY=VALUE",
    help="A secret, from a file, stdin, or (shown in the process list) the value; repeatable.",
)


@click.group("runtime")
def runtime() -> None:
    """The server's runtimes, and remote ones added (another holmd, a remote Docker Engine)."""


def _show(remote: Remote, view: RuntimeView) -> None:
    if remote.as_json:
        print_json(view)
    else:
        click.echo(view.name)


@runtime.command("ls")
@remote
def list_runtimes(remote: Remote) -> None:
    """List the runtimes: their provider (added ones), fields, secrets' names and `can`."""
    views = remote.client.runtimes()
    if remote.as_json:
        print_json(views)
        return
    rows = []
    for view in views:
        can = msgspec.structs.asdict(view.can)
        abilities = [name for name, value in can.items() if value is True]
        fields = " ".join(f"{k}={v}" for k, v in sorted((view.fields or {}).items()))
        rows.append(
            (
                view.name,
                "yes" if view.default else "",
                view.provider or "-",
                fields or "-",
                ",".join(view.secrets or []) or "-",
                " ".join(abilities),
            )
        )
    print_table(("NAME", "DEFAULT", "PROVIDER", "FIELDS", "SECRETS", "CAN"), rows)


@runtime.command("add")
@click.argument("name")
@click.argument("provider")
@FIELD
@SECRET
@remote
def add_runtime(
    remote: Remote, name: str, provider: str, fields: tuple[str, ...], secrets: tuple[str, ...]
) -> None:
    """Add a remote runtime NAME of PROVIDER and print its name."""
    view = remote.client.add_runtime(name, provider, fields_of(fields), secrets_of(secrets))
    _show(remote, view)


@runtime.command("set")
@click.argument("name")
@FIELD
@SECRET
@remote
def set_runtime(
    remote: Remote, name: str, fields: tuple[str, ...], secrets: tuple[str, ...]
) -> None:
    """Change fields (KEY=null removes one) and secrets of runtime NAME."""
    view = remote.client.change_runtime(name, fields_of(fields), secrets_of(secrets))
    _show(remote, view)


@runtime.command("rm")
@click.argument("name")
@remote
def remove_runtime(remote: Remote, name: str) -> None:
    """Remove runtime NAME (refused while a box uses it)."""
    _show(remote, remote.client.remove_runtime(name))


COMMANDS = (runtime,)
