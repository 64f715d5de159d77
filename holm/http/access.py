"""Who may call the API, settled once when the app is made: the bearer token, and the names
a request's `Host` and `Origin` may carry.

- The token is `HOLM_SERVER_TOKEN`; without it, one generated at first start
  (`secrets.token_urlsafe`) and kept in `<state_dir>/token` (mode 0600, made whole or not at
  all, reused on later starts), which `holm` and the Python client read. The log says where
  it is, never what it is.
- `HOLM_SERVER_AUTH=none` turns the token off, and is refused on any address but loopback:
  an open API on a network would let anything that reaches it exec in every box.
- A `Host` must name the server: a loopback name or the address the connection came in on,
  with the port it came in on; or `HOLM_PUBLIC_URL`'s host, or one of `HOLM_ALLOWED_HOSTS`.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import secrets
from dataclasses import dataclass
from pathlib import Path

from yarl import URL

from holm.config import Config
from holm.wire.access import is_loopback, token_path

log = logging.getLogger(__name__)

TOKEN_MODE = 0o600


@dataclass(frozen=True)
class Origin:
    scheme: str
    host: str
    port: int | None


@dataclass(frozen=True)
class Access:
    # None: auth is off (`HOLM_SERVER_AUTH=none`).
    token: str | None
    cron_secret: str | None
    # Names a Host may carry with any port: HOLM_PUBLIC_URL's host and HOLM_ALLOWED_HOSTS.
    host_names: frozenset[str]
    any_host: bool
    # HOLM_PUBLIC_URL's origin: a page served there is the server's own (behind a proxy).
    public_origin: Origin | None


def access_of(config: Config) -> Access:
    """The access rules of `config`; reads or makes the token file (blocking, once, at
    start). A contradictory setting, an open API off loopback, or a token file that cannot
    be kept raise `ValueError`: holmd says why and does not start."""
    check_auth_setting(config)
    names = {"*"} if "*" in config.allowed_hosts else set()
    for entry in config.allowed_hosts:
        parsed = host_and_port(entry) if entry != "*" else None
        if entry != "*" and parsed is None:
            raise ValueError(f"bad setting: HOLM_ALLOWED_HOSTS has {entry!r}, which is no host")
        if parsed is not None:
            names.add(parsed[0])
    public_origin = None
    if config.public_url:
        public_origin = origin_of(config.public_url)
        if public_origin is None:
            raise ValueError(f"bad setting: HOLM_PUBLIC_URL {config.public_url!r} is no URL")
        names.add(public_origin.host)
    return Access(
        token=server_token_of(config),
        cron_secret=config.cron_secret,
        host_names=frozenset(names - {"*"}),
        any_host="*" in names,
        public_origin=public_origin,
    )


def check_auth_setting(config: Config) -> None:
    if config.server_auth != "none":
        return
    if config.server_token:
        raise ValueError(
            "bad setting: HOLM_SERVER_AUTH=none and HOLM_SERVER_TOKEN contradict; unset one"
        )
    if not is_loopback(config.host):
        raise ValueError(
            f"bad setting: HOLM_SERVER_AUTH=none on {config.server_addr}: an API without a "
            "token listens on loopback only (127.0.0.0/8, ::1, localhost)"
        )


def server_token_of(config: Config) -> str | None:
    if config.server_auth == "none":
        log.warning(
            "auth is off (HOLM_SERVER_AUTH=none): any process on this machine that reaches "
            "%s can drive every box",
            config.server_addr,
        )
        return None
    if config.server_token:
        log.info("the bearer token is HOLM_SERVER_TOKEN's")
        return config.server_token
    path = token_path(config.state_dir)
    try:
        token = kept_token(path)
    except OSError as exc:
        raise ValueError(f"cannot keep the server's token in {path}: {exc}") from exc
    log.info(
        "the bearer token is in %s (holm and the Python client read it from there; "
        "send it as Authorization: Bearer …)",
        path.resolve(),
    )
    return token


def kept_token(path: Path) -> str:
    """The token in `path`, made there first when there is none."""
    existing = _read_token(path)
    if existing:
        return existing
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    token = secrets.token_urlsafe(32)
    # Written whole under another name with its mode from the start, then linked into
    # place: no reader ever sees a partial file or one readable by others, and of two
    # servers starting at once the second takes the first one's token.
    spare = path.with_name(f".{path.name}.{secrets.token_hex(6)}")
    fd = os.open(spare, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, TOKEN_MODE)
    try:
        with os.fdopen(fd, "w") as out:
            out.write(token + "\n")
            out.flush()
            os.fsync(out.fileno())
        try:
            os.link(spare, path)
        except FileExistsError:
            other = _read_token(path)
            if other:
                return other
            # An empty file (a crash of something else): replaced whole.
            os.replace(spare, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            spare.unlink()
    return token


def _read_token(path: Path) -> str | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except FileNotFoundError:
        return None
    with os.fdopen(fd) as kept:
        mode = os.fstat(kept.fileno()).st_mode & 0o777
        if mode & 0o077:
            log.warning("%s could be read by others (mode %o): made 0600", path, mode)
            os.fchmod(kept.fileno(), TOKEN_MODE)
        return kept.read().strip() or None


def origin_of(url: str) -> Origin | None:
    """The origin (`scheme://host:port`) of a URL or an `Origin` header, or None for one
    that is none (`null`, a relative URL)."""
    try:
        parsed = URL(url)
    except (ValueError, TypeError):
        return None
    if not parsed.scheme or not parsed.raw_host:
        return None
    return Origin(parsed.scheme.lower(), parsed.raw_host, parsed.port)


# Asked of every request's Host (middlewares.check_host): its answer is kept.
@functools.lru_cache(maxsize=1024)
def host_and_port(host_header: str) -> tuple[str, int | None] | None:
    """The name and port of a `Host` header (`[::1]:8080` → ("::1", 8080)); None for one
    that is not just a host and port."""
    if not host_header or any(c in host_header for c in "@/?#\\ \t"):
        return None
    try:
        parsed = URL(f"http://{host_header}")
    except ValueError:
        return None
    if not parsed.raw_host:
        return None
    # The encoded form (IDNA, lower case): one spelling per name.
    return parsed.raw_host, parsed.explicit_port


__all__ = [
    "Access",
    "Origin",
    "access_of",
    "check_auth_setting",
    "host_and_port",
    "kept_token",
    "origin_of",
]
