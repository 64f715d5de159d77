"""Where a holmd on this machine keeps the token it generated, which `holm` and the Python
client read when no token is given; and what counts as this machine's loopback (the only
place that token is sent, and the only address an API without a token listens on)."""

from __future__ import annotations

import functools
import ipaddress
from collections.abc import Mapping
from pathlib import Path

DEFAULT_STATE_DIR = Path("var")
# The file in the state dir that holds the token holmd generated (mode 0600).
TOKEN_FILE = "token"


def state_dir_of(environ: Mapping[str, str]) -> Path:
    """The state dir holmd on this machine uses: `HOLM_STATE_DIR`, else `./var`."""
    return Path(environ.get("HOLM_STATE_DIR") or DEFAULT_STATE_DIR)


def token_path(state_dir: Path) -> Path:
    return state_dir / TOKEN_FILE


# Asked of every request's Host (http/middlewares.py): its answer is kept.
@functools.lru_cache(maxsize=1024)
def is_loopback(host: str) -> bool:
    """Whether a host (a name, an address, or `[v6]`) is this machine's loopback:
    127.0.0.0/8, ::1 or `localhost`."""
    host = host.strip().lower().removeprefix("[").removesuffix("]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


__all__ = ["DEFAULT_STATE_DIR", "TOKEN_FILE", "is_loopback", "state_dir_of", "token_path"]
