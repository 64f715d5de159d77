"""`holmd`: the server. Settings come from HOLM_* variables (holm.config); it listens on
`HOLM_SERVER_ADDR` (127.0.0.1:8080 unless set), with a bearer token: `HOLM_SERVER_TOKEN`,
else the one it keeps in `<state_dir>/token` (docs/server.md)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import resource
import signal
import sys

from aiohttp import web

from holm import __version__
from holm.adapters.local.priority import holmd_above_boxes
from holm.config import DEFAULT_LOG_LEVEL, LOG_LEVEL, Config, defaults, load_config
from holm.http.app import create_app
from holm.http.unreadable import Runner

USAGE = """usage: holmd [--help | --version]

Serves holm's REST API. holmd takes no arguments: its settings are environment
variables (docs/server.md, "Settings" says what each does), here with their defaults:

{variables}

e.g. HOLM_STORAGE_BACKEND=local HOLM_STATE_DIR=/var/lib/holm holmd"""


def _answer_arguments(args: list[str]) -> None:
    """`--help` and `--version` answer and exit; anything else is refused (exit 2), so that
    a mistyped option never starts a server on the default address."""
    if not args:
        return
    if args[0] in ("-h", "--help") and len(args) == 1:
        shown = "\n".join(f"  {name:26} {value}" for name, value in defaults())
        print(USAGE.format(variables=shown))
        raise SystemExit(0)
    if args == ["--version"]:
        print(f"holmd {__version__}")
        raise SystemExit(0)
    print(
        f"holmd: takes no arguments (got {' '.join(args)!r}); settings are HOLM_* "
        "environment variables, see holmd --help",
        file=sys.stderr,
    )
    raise SystemExit(2)


def main() -> None:
    _answer_arguments(sys.argv[1:])
    logging.basicConfig(
        level=os.environ.get(LOG_LEVEL, DEFAULT_LOG_LEVEL).upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    _take_the_hard_fd_limit()
    try:
        config = load_config()
        # Settles the token (made in the state dir at first start) and refuses an API
        # without one off loopback, before anything listens.
        app = create_app(config)
    except ValueError as exc:
        print(f"holmd: {exc}", file=sys.stderr)
        raise SystemExit(2) from exc
    with holmd_above_boxes():
        serve(app, config)


def serve(app: web.Application, config: Config) -> None:
    """Serve `app` on the config's address until SIGINT or SIGTERM, then stop it (its boxes
    are left running)."""
    asyncio.run(_serve(app, config))


async def _serve(app: web.Application, config: Config) -> None:
    # Not `web.run_app`, which takes no runner: holmd's answers a request it cannot read
    # with the error body (holm.http.unreadable).
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    runner = Runner(app, access_log=None, handle_signals=False)
    await runner.setup()
    try:
        site = web.TCPSite(runner, config.host, config.port)
        await site.start()
        print(f"holmd: listening on {site.name}", file=sys.stderr, flush=True)
        await stop.wait()
    finally:
        await runner.cleanup()


def _take_the_hard_fd_limit() -> None:
    """Tens of boxes hold more descriptors than the usual soft limit of 1024: raise it to
    the hard limit, which the local runtime's room for boxes then counts against."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = 1 << 20 if hard == resource.RLIM_INFINITY else hard
    if soft != resource.RLIM_INFINITY and soft < wanted:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))


if __name__ == "__main__":
    main()
