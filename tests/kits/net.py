"""Test hosts of the project's own, for the tests and benches that need something to
reach: a TCP server that answers b"hi", and a host in a network namespace the caller makes,
joined to this one by a veth pair, serving a folder over HTTP. Addresses are a /30 of
10.213.0.0/16 that no route of this host uses; nothing outside this machine is reached."""

from __future__ import annotations

import contextlib
import ipaddress
import os
import secrets
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path


@contextlib.contextmanager
def hi_server(address: str, scope: int = 0) -> Iterator[int]:
    """A TCP server on `address` that answers b"hi" to every connection; its port. `scope`
    is the interface of a link-local IPv6 address."""
    if scope:
        server = socket.socket(socket.AF_INET6)
        server.bind((address, 0, 0, scope))
        server.listen()
    else:
        family = socket.AF_INET6 if ":" in address else socket.AF_INET
        server = socket.create_server((address, 0), family=family)
    port: int = server.getsockname()[1]
    stop = threading.Event()

    def serve() -> None:
        server.settimeout(0.1)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            with conn:
                conn.sendall(b"hi")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield port
    finally:
        stop.set()
        thread.join()
        server.close()


def free_subnet() -> ipaddress.IPv4Network:
    """A /30 in 10.213.0.0/16 that no route of the host touches."""
    routes = subprocess.run(
        ["ip", "-4", "route", "show", "table", "all"], capture_output=True, text=True, check=True
    ).stdout
    taken = []
    for line in routes.splitlines():
        word = line.split()[0] if line.split() else ""
        with contextlib.suppress(ValueError):
            taken.append(ipaddress.ip_network(word if "/" in word else f"{word}/32", strict=False))
    for _ in range(200):
        third, fourth = secrets.randbelow(256), secrets.randbelow(64) * 4
        net = ipaddress.IPv4Network(f"10.213.{third}.{fourth}/30")
        if not any(net.overlaps(other) for other in taken if other.prefixlen > 0):
            return net
    raise AssertionError("no free /30 in 10.213.0.0/16")


@dataclass
class ServedHost:
    netns: str
    # This host's end of the veth: one of this host's own addresses.
    host_address: str
    address: str
    http_port: int


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, timeout=30)


@contextlib.contextmanager
def served_host(folder: Path, prefix: str) -> Iterator[ServedHost]:
    """A network namespace joined to this host by a veth pair, serving `folder` over HTTP
    once it listens; all of it removed at the end."""
    tag = secrets.token_hex(3)
    netns, host_end, far_end = f"holm{prefix}-{tag}", f"h{prefix[:1]}{tag}a", f"h{prefix[:1]}{tag}b"
    net = free_subnet()
    host_address, address = str(net[1]), str(net[2])
    server: subprocess.Popen[bytes] | None = None
    _ip("netns", "add", netns)
    try:
        _ip("link", "add", host_end, "type", "veth", "peer", "name", far_end)
        _ip("link", "set", far_end, "netns", netns)
        _ip("addr", "add", f"{host_address}/30", "dev", host_end)
        _ip("link", "set", host_end, "up")
        _ip("-n", netns, "addr", "add", f"{address}/30", "dev", far_end)
        _ip("-n", netns, "link", "set", far_end, "up")
        _ip("-n", netns, "link", "set", "lo", "up")
        port = 8000 + secrets.randbelow(1000)
        serve = [sys.executable, "-m", "http.server", "--bind", address, str(port)]
        server = subprocess.Popen(
            ["ip", "netns", "exec", netns, *serve, "--directory", str(folder)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        _wait_listening(address, port, server)
        yield ServedHost(netns, host_address, address, port)
    finally:
        if server is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(server.pid, 9)
            server.wait()
        subprocess.run(["ip", "link", "del", host_end], capture_output=True)
        subprocess.run(["ip", "netns", "del", netns], capture_output=True)


def _wait_listening(address: str, port: int, server: subprocess.Popen[bytes]) -> None:
    for _ in range(500):
        assert server.poll() is None, "the test host's server ended"
        with contextlib.suppress(OSError), socket.create_connection((address, port), timeout=1):
            return
        time.sleep(0.02)
    raise AssertionError("the test host's server did not listen")
