"""Commands that reach inside a box: `exec`, `clip`, `file put|get|ls`, `shot`."""

from __future__ import annotations

import base64
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import IO, get_args

import click

from holm.cli.output import print_json, print_table, when, write_stdout
from holm.cli.remote import Remote, remote, screen_option
from holm.errors import Failed
from holm.wire.actions import MAX_EXEC_MS
from holm.wire.values import Region, Selection

# What `holm exec` exits with when the command gave no code of its own.
EXIT_EXEC_TIMED_OUT = 124
EXIT_EXEC_NO_CODE = 125

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


@click.command("exec", context_settings={"ignore_unknown_options": True})
@click.argument("box_id")
@click.argument("argv", nargs=-1, required=True, type=click.UNPROCESSED)
@click.option(
    "--timeout-ms",
    type=click.IntRange(1, MAX_EXEC_MS),
    default=10_000,
    show_default=True,
    help="Stop the command after this long.",
)
@remote
def exec_command(remote: Remote, box_id: str, argv: Sequence[str], timeout_ms: int) -> None:
    """Run ARGV in the box (write `--` before it): print its stdout and stderr and exit
    with its exit code (124 when it timed out, 125 when it ended without a code)."""
    result = remote.client.exec(box_id, list(argv), timeout_ms=timeout_ms)
    if remote.as_json:
        print_json(result)
    else:
        write_stdout(result.stdout.encode())
        click.echo(result.stderr, err=True, nl=False)
    if result.timed_out:
        code = EXIT_EXEC_TIMED_OUT
    elif result.code is None or result.code < 0:
        # A command killed by a signal has no exit code: its code is minus the signal's.
        code = EXIT_EXEC_NO_CODE
    else:
        code = result.code
    raise click.exceptions.Exit(code)


@click.command("clip")
@click.argument("box_id")
@click.argument("text", required=False)
@click.option(
    "--selection",
    type=click.Choice(get_args(Selection)),
    default="clipboard",
    show_default=True,
)
@screen_option
@remote
def clipboard(
    remote: Remote, box_id: str, text: str | None, selection: Selection, screen: int
) -> None:
    """Print the clipboard, or set it to TEXT (- reads stdin)."""
    if text is None:
        value = remote.client.get_clipboard(box_id, screen=screen, selection=selection)
        if remote.as_json:
            print_json({"selection": selection, "text": value})
        else:
            click.echo(value, nl=sys.stdout.isatty() and not value.endswith("\n"))
        return
    if text == "-":
        text = sys.stdin.read()
    # The server's answer: the selection and the text's length in bytes, never the text.
    view = remote.client.set_clipboard(box_id, text, screen=screen, selection=selection)
    if remote.as_json:
        print_json(view)


@click.group("file")
def files() -> None:
    """Copy files into and out of a box, and list its folders."""


@files.command("put")
@click.argument("box_id")
@click.argument("local", type=click.File("rb"))
@click.argument("remote_path", metavar="REMOTE")
@remote
def put_file(remote: Remote, box_id: str, local: IO[bytes], remote_path: str) -> None:
    """Copy LOCAL (- for stdin) to REMOTE, an absolute path in the box."""
    written = remote.client.write_file(box_id, remote_path, local.read())
    if remote.as_json:
        print_json(written)
    else:
        click.echo(written.path)


@files.command("get")
@click.argument("box_id")
@click.argument("remote_path", metavar="REMOTE")
@click.argument("local", required=False, type=click.Path(dir_okay=False, allow_dash=True))
@remote
def get_file(remote: Remote, box_id: str, remote_path: str, local: str | None) -> None:
    """Copy REMOTE from the box to LOCAL (default or -: stdout)."""
    contents = remote.client.read_file(box_id, remote_path)
    if remote.as_json:
        encoded = base64.b64encode(contents).decode()
        print_json({"path": remote_path, "contents_base64": encoded})
    elif local is None or local == "-":
        write_stdout(contents)
    else:
        Path(local).write_bytes(contents)


@files.command("ls")
@click.argument("box_id")
@click.argument("path")
@remote
def list_files(remote: Remote, box_id: str, path: str) -> None:
    """List the folder PATH in the box."""
    listing = remote.client.list_files(box_id, path)
    if remote.as_json:
        print_json(listing)
        return
    print_table(
        ("TYPE", "SIZE", "MODIFIED", "NAME"),
        [
            (entry.type, str(entry.size), when(entry.mtime_ms), entry.name)
            for entry in listing.entries
        ],
    )


@click.command("shot")
@click.argument("box_id")
@click.option(
    "--output",
    "-o",
    type=click.Path(dir_okay=False, allow_dash=True),
    help="The PNG file to write; - for stdout. Default: BOX_ID-SCREEN.png.",
)
@click.option("--window", help="Capture one window (an ID from the box's windows).")
@click.option(
    "--region",
    nargs=4,
    type=int,
    metavar="X Y WIDTH HEIGHT",
    help="Capture a rectangle.",
)
@click.option("--scale", type=click.IntRange(1, 400), help="Percent of full size.")
@screen_option
@remote
def screenshot(
    remote: Remote,
    box_id: str,
    output: str | None,
    window: str | None,
    region: tuple[int, int, int, int] | None,
    scale: int | None,
    screen: int,
) -> None:
    """Write a screenshot of a screen as a PNG file and print its path."""
    area = None if not region else Region(*region)
    frame = remote.client.frame(box_id, screen=screen, window=window, region=area, scale=scale)
    png = base64.b64decode(frame.png_base64 or "")
    if not png.startswith(PNG_SIGNATURE):
        raise Failed(f"the server sent no PNG for screen {screen} (frame {frame.hash})")
    if output == "-":
        write_stdout(png)
        return
    path = Path(output or f"{box_id}-{screen}.png")
    path.write_bytes(png)
    if remote.as_json:
        print_json(
            {"path": str(path), "hash": frame.hash, "width": frame.width, "height": frame.height}
        )
    else:
        click.echo(path)


COMMANDS: tuple[click.Command, ...] = (exec_command, clipboard, files, screenshot)

__all__ = ["COMMANDS", "EXIT_EXEC_NO_CODE", "EXIT_EXEC_TIMED_OUT"]
