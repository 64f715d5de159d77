"""`holmd`: the server. Settings come from HOLM_* variables (holm.config); it listens on
`HOLM_SERVER_ADDR` (127.0.0.1:8080 unless set), with a bearer token: `HOLM_SERVER_TOKEN`,
else the one it keeps in `<state_dir>/token` (docs/server.md)."""

from __future__ import annotations

import logging
import os
import sys

from aiohttp import web

from holm.config import load_config
from holm.http.app import create_app


def main() -> None:
    logging.basicConfig(
        level=os.environ.get("HOLM_LOG_LEVEL", "INFO").upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    try:
        config = load_config()
        # Settles the token (made in the state dir at first start) and refuses an API
        # without one off loopback, before anything listens.
        app = create_app(config)
    except ValueError as exc:
        print(f"holmd: {exc}", file=sys.stderr)
        raise SystemExit(2) from exc
    web.run_app(
        app,
        host=config.host,
        port=config.port,
        access_log=None,
        print=lambda message: print(f"holmd: {message}", file=sys.stderr, flush=True),
    )


if __name__ == "__main__":
    main()
