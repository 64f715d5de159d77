"""A Docker Engine on another host, reached over TCP with TLS both ways: the runtime's `ca`
signs the engine's certificate (verified, with its address, always: there is no setting
that turns it off), and the client's `cert` and `key` are what the engine's `--tlsverify`
asks for.

The key is never written to a file: `ssl` loads a certificate chain from a path only, so it
is given one of an anonymous memory file (`memfd_create`), closed once loaded. The docker
SDK's requests and the exec streams (`exec_stream.py`) share one `SSLContext`.
"""

from __future__ import annotations

import contextlib
import os
import ssl
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import docker
import requests.adapters
from yarl import URL

from holm.errors import BadRequest, Unavailable

# Debian 12's docker.io (20.10) speaks 1.41, and every later engine does too: named, the SDK
# asks the engine nothing while the runtime is made.
API_VERSION = "1.41"
DEFAULT_PORT = 2376
CONNECT_TIMEOUT_S = 10.0
# A stream whose engine is gone is closed without waiting long for TLS's close_notify.
SHUTDOWN_TIMEOUT_S = 2.0


@dataclass(frozen=True)
class EngineAddress:
    """Where the engine listens, and the TLS that reaches it."""

    host: str
    port: int
    tls: ssl.SSLContext = field(repr=False)

    @property
    def base_url(self) -> str:
        return f"https://{_bracketed(self.host)}:{self.port}"


def parse_host(host: object) -> tuple[str, int]:
    """`tcp://HOST:PORT` (the port defaults to 2376, Docker's TLS port) as host and port."""
    if not isinstance(host, str):
        raise BadRequest("provider 'docker' needs fields.host, the engine's tcp://HOST:PORT")
    url = URL(host)
    if url.scheme != "tcp" or not url.host or url.path not in ("", "/") or url.query_string:
        raise BadRequest(
            f"fields.host {host!r} must be tcp://HOST:PORT, the engine's TLS address "
            "(no unix:// or ssh://: a remote engine is reached over TLS only)"
        )
    return url.host, url.explicit_port or DEFAULT_PORT


def tls_context(ca: str, cert: str, key: str) -> ssl.SSLContext:
    """The client side of the engine's TLS, from PEM text; `BadRequest` naming the secret
    that is not what it must be."""
    context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        context.load_verify_locations(cadata=ca)
    except (ssl.SSLError, ValueError):
        raise BadRequest("secrets.ca must be the PEM certificate of the engine's CA") from None
    with _memory_file(cert) as cert_path, _memory_file(key) as key_path:
        try:
            context.load_cert_chain(cert_path, key_path)
        except ssl.SSLError:
            raise BadRequest(
                "secrets.cert and secrets.key must be a PEM client certificate and its "
                "private key (unencrypted)"
            ) from None
    return context


@contextlib.contextmanager
def _memory_file(text: str) -> Iterator[str]:
    fd = os.memfd_create("holm-engine-tls", os.MFD_CLOEXEC)
    try:
        os.write(fd, text.encode())
        yield f"/proc/self/fd/{fd}"
    finally:
        os.close(fd)


class _TLSAdapter(requests.adapters.HTTPAdapter):
    """requests' adapter with the runtime's SSLContext in every pool it makes, and a short
    bound on connecting: the SDK's one timeout is long (a build streams for minutes), and a
    host that is gone may drop packets rather than refuse them."""

    def __init__(self, context: ssl.SSLContext) -> None:
        self._context = context
        super().__init__()

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        kwargs["ssl_context"] = self._context
        super().init_poolmanager(*args, **kwargs)

    def send(self, request: Any, *args: Any, **kwargs: Any) -> Any:
        timeout = kwargs.get("timeout")
        if isinstance(timeout, int | float):
            kwargs["timeout"] = (min(CONNECT_TIMEOUT_S, timeout), timeout)
        return super().send(request, *args, **kwargs)


def engine_client(address: EngineAddress, timeout_s: int) -> docker.DockerClient:
    """A docker SDK client of the engine, over the runtime's TLS; it reaches nothing yet."""
    client = docker.DockerClient(
        base_url=f"tcp://{_bracketed(address.host)}:{address.port}",
        tls=True,
        timeout=timeout_s,
        version=API_VERSION,
    )
    client.api.mount("https://", _TLSAdapter(address.tls))
    # No CA bundle named by the environment (REQUESTS_CA_BUNDLE) joins the runtime's CA.
    client.api.trust_env = False
    return client


def tls_refusal(exc: ssl.SSLError) -> Unavailable:
    """A TLS handshake that failed: the runtime's secrets, not a moment, are wrong."""
    if isinstance(exc, ssl.SSLCertVerificationError):
        why = (
            f"the engine's certificate does not verify ({exc.verify_message}): it must be "
            "signed by the runtime's ca and name the host of fields.host; set secrets.ca to "
            "the CA that signed it, or fields.host to a name it has (PATCH /v1/runtimes/{name})"
        )
    else:
        why = (
            f"the engine refused the TLS handshake ({exc.reason or exc}): its --tlscacert must "
            "have signed the runtime's secrets.cert"
        )
    return Unavailable(f"the Docker Engine's TLS: {why}", retryable=False)


def certificate_refused(exc: ssl.SSLError) -> bool:
    """Whether a TLS failure is about the certificates (which a retry does not change), not
    a connection cut in the middle of a handshake."""
    if isinstance(exc, ssl.SSLCertVerificationError):
        return True
    reason = str(exc.reason or "")
    return "CERTIFICATE" in reason or "UNKNOWN_CA" in reason or "ALERT" in reason


def ssl_error_in(exc: BaseException) -> ssl.SSLError | None:
    """The certificates' TLS failure under a requests or urllib3 error, if there is one."""
    seen: set[int] = set()
    todo: list[object] = [exc]
    while todo:
        item = todo.pop()
        if not isinstance(item, BaseException) or id(item) in seen:
            continue
        seen.add(id(item))
        if isinstance(item, ssl.SSLError) and certificate_refused(item):
            return item
        todo += [item.__cause__, item.__context__, getattr(item, "reason", None), *item.args]
    return None


def _bracketed(host: str) -> str:
    return f"[{host}]" if ":" in host else host


__all__ = [
    "API_VERSION",
    "CONNECT_TIMEOUT_S",
    "DEFAULT_PORT",
    "SHUTDOWN_TIMEOUT_S",
    "EngineAddress",
    "certificate_refused",
    "engine_client",
    "parse_host",
    "ssl_error_in",
    "tls_context",
    "tls_refusal",
]
