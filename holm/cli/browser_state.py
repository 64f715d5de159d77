"""`holm browser state …`, `holm browser cookies …` and `holm browser devtools`: what the
browser of a box holds (cookies, storage), saved, loaded and shared with the user's own
DevTools tools. None of it is recorded in a trace (docs/security.md)."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import click
import msgspec

from holm.cli.output import print_json, print_table
from holm.cli.remote import Remote, remote
from holm.wire.actions import CookieIn, StateSaveWhat


@click.group("state")
def state() -> None:
    """Save the browser's cookies and storage, and load them into a box."""


@state.command("save")
@click.argument("box_id")
@click.option("--name", help="Keep it in the server under NAME (else print it).")
@click.option(
    "--output", "-o", type=click.Path(dir_okay=False), help="Write the state to this file."
)
@click.option("--origin", "origins", multiple=True, help="Only these origins' storage.")
@remote
def save(
    remote: Remote, box_id: str, name: str | None, output: str | None, origins: tuple[str, ...]
) -> None:
    """Save the cookies and storage of BOX_ID's browser (Playwright's storage state)."""
    if name is not None and output is not None:
        raise click.UsageError("give --name (kept by the server) or -o FILE, not both")
    saved = remote.client.save_state(box_id, StateSaveWhat(origins=list(origins)), name=name)
    if output is not None and saved.session_json is not None:
        Path(output).write_text(saved.session_json)
        saved = msgspec.structs.replace(saved, session_json=None)
    if remote.as_json:
        print_json(saved)
    elif saved.session_json is not None:
        click.echo(saved.session_json)
    else:
        where = f"kept as {name}" if name else f"written to {output}"
        click.echo(f"{saved.cookies} cookies, {saved.origins} origins, {where}")


@state.command("load")
@click.argument("box_id")
@click.option("--name", help="A state the server keeps.")
@click.option("--file", "file_", type=click.Path(exists=True, dir_okay=False), help="A state file.")
@remote
def load(remote: Remote, box_id: str, name: str | None, file_: str | None) -> None:
    """Load a saved state (--name) or a state file (--file) into BOX_ID's browser."""
    if (name is None) == (file_ is None):
        raise click.UsageError("give one of --name and --file")
    session_json = None if file_ is None else Path(file_).read_text()
    loaded = remote.client.load_state(box_id, name=name, session_json=session_json)
    remote.answer(loaded, f"{loaded.cookies} cookies, {loaded.origins} origins loaded")


@state.command("ls")
@remote
def ls(remote: Remote) -> None:
    """List the states the server keeps for you."""
    saved = remote.client.states()
    if remote.as_json:
        print_json(saved)
        return
    print_table(
        ("NAME", "COOKIES", "ORIGINS", "SAVED", "FROM"),
        [
            (
                s.name,
                str(s.cookies),
                str(s.origins),
                datetime.fromtimestamp(s.saved_at_ms / 1000).strftime("%Y-%m-%d %H:%M:%S"),
                s.box,
            )
            for s in saved
        ],
    )


@state.command("rm")
@click.argument("name")
@remote
def rm(remote: Remote, name: str) -> None:
    """Remove a state the server keeps."""
    removed = remote.client.remove_state(name)
    remote.answer(removed, f"{name} removed" if removed.removed else f"no state {name}")


@click.group("cookies")
def cookies() -> None:
    """List, set and clear the cookies of a box's browser."""


@cookies.command("ls")
@click.argument("box_id")
@click.option("--site", "url", help="Only the cookies sent to this URL.")
@remote
def cookies_ls(remote: Remote, box_id: str, url: str | None) -> None:
    """List BOX_ID's cookies."""
    found = remote.client.cookies(box_id, url=url)
    if remote.as_json:
        print_json(found)
        return
    print_table(
        ("NAME", "VALUE", "DOMAIN", "PATH"), [(c.name, c.value, c.domain, c.path) for c in found]
    )


@cookies.command("set")
@click.argument("box_id")
@click.argument("pairs", nargs=-1, required=True, metavar="NAME=VALUE...")
@click.option("--site", "url", required=True, help="The URL the cookies belong to.")
@remote
def cookies_set(remote: Remote, box_id: str, pairs: tuple[str, ...], url: str) -> None:
    """Set cookies (NAME=VALUE) for URL in BOX_ID's browser."""
    if not all("=" in pair for pair in pairs):
        raise click.UsageError("each cookie is NAME=VALUE")
    given = [CookieIn(name=n, value=v) for n, v in (p.split("=", 1) for p in pairs)]
    done = remote.client.set_cookies(box_id, given, url=url)
    remote.answer(done, f"{done.changed} set")


@cookies.command("clear")
@click.argument("box_id")
@click.option("--site", "url", help="Only the cookies sent to this URL.")
@remote
def cookies_clear(remote: Remote, box_id: str, url: str | None) -> None:
    """Remove BOX_ID's cookies (all, or those of --site)."""
    done = remote.client.clear_cookies(box_id, url=url)
    remote.answer(done, f"{done.changed} removed")


@click.command("devtools")
@click.argument("box_id")
@click.option("--ttl", "ttl_secs", type=click.IntRange(1, 24 * 3600), default=3600)
@remote
def devtools(remote: Remote, box_id: str, ttl_secs: int) -> None:
    """Print a DevTools address of BOX_ID's browser for Playwright's connect_over_cdp or
    browser-use (it lasts --ttl seconds; no bearer token needed)."""
    address = remote.client.devtools(box_id, ttl_secs=ttl_secs)
    remote.answer(address, address.url)


COMMANDS = [state, cookies, devtools]
