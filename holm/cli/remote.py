"""What every command that talks to holmd shares: the `--url`, `--token` and `--json`
options, one client per invocation, and one exit code per error code (docs/cli.md).

An error goes to stderr as `holm: CODE: MESSAGE` (with `--json`, as the error body), so that
stdout holds only what a script reads: IDs, values, JSON.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import click
import msgspec

from holm.cli.output import print_json
from holm.errors import HolmError, ServerUnreachable
from holm.wire.spec import MAX_SCREENS

if TYPE_CHECKING:
    from holm.client import SyncHolmClient

EXIT_CODES: dict[str, int] = {
    "bad_request": 3,
    "unsupported": 4,
    "not_found": 5,
    "gone": 6,
    "denied": 7,
    "screen_unavailable": 8,
    "failed": 9,
    "transport": 10,
    "unavailable": 11,
    "timeout": 12,
    "internal": 13,
}
# Nothing answered at all: distinct from a server that answered `unavailable`.
EXIT_UNREACHABLE = 14

TOKEN_HELP = (
    "The bearer token. Default: $HOLM_SERVER_TOKEN, else (for a server on loopback) the "
    "token holmd keeps in $HOLM_STATE_DIR/token (./var/token)."
)


def exit_code(error: HolmError) -> int:
    if isinstance(error, ServerUnreachable):
        return EXIT_UNREACHABLE
    return EXIT_CODES.get(error.code, EXIT_CODES["internal"])


class Remote:
    """One command's connection to holmd and its output mode."""

    def __init__(self, url: str | None, token: str | None, as_json: bool) -> None:
        self._url = url
        self._token = token
        self.as_json = as_json
        self._client: SyncHolmClient | None = None
        # Commands that read two things at once (`holm diff`) reach the client from two
        # threads: only one may open it.
        self._opening = threading.Lock()

    @property
    def client(self) -> SyncHolmClient:
        # Opened on first use, so a command that fails on its arguments starts no thread.
        with self._opening:
            if self._client is None:
                # The client and the wire types it decodes are a third of a `holm`
                # process's start: imported here, they are paid only by a command that
                # talks to a server.
                from holm.client import SyncHolmClient

                self._client = SyncHolmClient(self._url, self._token)
            return self._client

    def answer(self, value: object, text: str) -> None:
        """Print `value` as JSON with `--json`, else `text`."""
        if self.as_json:
            print_json(value)
        else:
            click.echo(text)

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None


def report_error(error: HolmError, as_json: bool) -> None:
    if as_json:
        click.echo(msgspec.json.encode(error.body()).decode(), err=True)
    else:
        click.echo(f"holm: {error.code}: {error.message}", err=True)


@contextmanager
def connected(url: str | None, token: str | None, as_json: bool) -> Iterator[Remote]:
    """A `Remote` for the block; a `HolmError` in it prints and exits with its code."""
    connection = Remote(url, token, as_json)
    try:
        yield connection
    except HolmError as error:
        report_error(error, as_json)
        raise click.exceptions.Exit(exit_code(error)) from error
    finally:
        connection.close()


def remote(command: Callable[..., None]) -> Callable[..., None]:
    """Give a click callback a `Remote` as its first argument, with the options it reads,
    and turn a `HolmError` into its message and exit code."""

    @click.option("--json", "as_json", is_flag=True, help="Print JSON, for scripts.")
    @click.option(
        "--token",
        metavar="TOKEN",
        help=TOKEN_HELP,
    )
    @click.option(
        "--url",
        "server_url",
        metavar="URL",
        help="holmd's URL. Default: $HOLM_SERVER_URL, else http://$HOLM_SERVER_ADDR, else "
        "http://127.0.0.1:8080.",
    )
    @functools.wraps(command)
    def with_remote(
        *args: Any, server_url: str | None, token: str | None, as_json: bool, **kw: Any
    ) -> None:
        with connected(server_url, token, as_json) as connection:
            command(connection, *args, **kw)

    return with_remote


screen_option = click.option(
    "--screen",
    "-s",
    type=click.IntRange(0, MAX_SCREENS - 1),
    default=0,
    show_default=True,
    help="The screen number.",
)

__all__ = [
    "EXIT_CODES",
    "EXIT_UNREACHABLE",
    "TOKEN_HELP",
    "Remote",
    "connected",
    "exit_code",
    "remote",
    "report_error",
    "screen_option",
]
