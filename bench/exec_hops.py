"""Where a remote docker box's stream spends its time, hop by hop: round trips of a small
message (the size of an agent's request) over each way of reaching a Unix socket in a
container, interleaved, in one run:

- `socket`: this host's process straight to the socket (a folder of this host bound into
  the container): what a local docker box's agent stream is;
- `exec cat`: an exec of `cat` attached through the engine's Unix socket (dockerd and
  containerd's shim, the exec's pipes, no socket in the box);
- `exec relay`: the exec stream's relay (`exec_stream.RELAY`) to the socket, through the
  engine's Unix socket: what the relay adds to `exec cat`;
- `tls cat`, `tls relay`: the same through the engine's TLS API (`exec_stream`'s own
  connection, over the veth pair): what TLS and the network add;
- `tls relay, 3 writes`: the message written as three (as a recorded click's look, act and
  end of batch go out), the echo awaited whole; `3 joined`, the same three writes through
  `exec_stream.JoinedWriter`, which sends the writes of one turn of the loop as one;
- `tls, pipes handed`: the relay hands the exec's pipes to the echo server, which echoes
  them itself (as the agent's `pipes.sock` takes them): the relay's hop left out.

The engine is a second dockerd of this machine (tests/kits/remote_dockerd.py), sent the box
image first; the echo server in the container is a python3 thread per connection.

    .venv/bin/python bench/exec_hops.py [--trips 300] [--image holm-box:KEY]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import shutil
import ssl
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import docker

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from kits.remote_dockerd import RemoteEngine, remote_engine  # noqa: E402

from holm.adapters.docker.engine_tls import EngineAddress, tls_context  # noqa: E402
from holm.adapters.docker.exec_stream import (  # noqa: E402
    RELAY,
    JoinedWriter,
    _connect,
    _ExecProtocol,
    attach_exec,
)
from holm.streams import Stream  # noqa: E402

# An echo server on the socket, and on `HANDED` one that takes a pair of pipes as the
# agent's `pipes.sock` does (holm/agent/handed_pipes.py) and echoes the one to the other.
ECHO = """\
import os, socket, sys, threading
def listen(path):
    s = socket.socket(socket.AF_UNIX)
    s.bind(path)
    os.chmod(path, 0o777)
    s.listen()
    return s
def serve(c):
    while b := c.recv(1 << 16):
        c.sendall(b)
def serve_pipes(c):
    _, (i, o), _, _ = socket.recv_fds(c, 1, 2)
    while b := os.read(i, 1 << 16):
        os.write(o, b)
    os.close(o)
    c.close()
def accept(s, how):
    while True:
        threading.Thread(target=how, args=(s.accept()[0],), daemon=True).start()
handed = listen(sys.argv[2])
threading.Thread(target=accept, args=(handed, serve_pipes), daemon=True).start()
accept(listen(sys.argv[1]), serve)
"""
SOCKET = "/run/holm/echo.sock"
HANDED = "/run/holm/echo-pipes.sock"
MESSAGE = b"m" * 60
Opener = Callable[[], Awaitable[Stream]]


async def unix_engine(path: str, container: str, command: list[str]) -> Stream:
    """An exec attached through an engine's Unix socket: `exec_stream`'s protocol, no TLS."""
    loop = asyncio.get_running_loop()
    transport, protocol = await loop.create_unix_connection(lambda: _ExecProtocol(1 << 20), path)
    # The Host header only: nothing is reached at this address.
    address = EngineAddress("localhost", 0, ssl.create_default_context())
    await attach_exec(transport, protocol, address, container, command)
    return protocol.reader, asyncio.StreamWriter(transport, protocol, protocol.reader, loop)


async def tls_engine(
    address: EngineAddress, container: str, command: list[str], *, joined: bool = False
) -> Stream:
    """`exec_stream`'s own stream; `joined`, with its writer (`JoinedWriter`), else with a
    plain one (each write sent as it is made)."""
    transport, protocol = await _connect(address, 1 << 20)
    await attach_exec(transport, protocol, address, container, command)
    loop = asyncio.get_running_loop()
    kind = JoinedWriter if joined else asyncio.StreamWriter
    return protocol.reader, kind(transport, protocol, protocol.reader, loop)


async def relayed(opened: Awaitable[Stream]) -> Stream:
    reader, writer = await opened
    assert await reader.readexactly(1) == b"+", "the relay did not connect"
    return reader, writer


async def trips(stream: Stream, pieces: int, count: int) -> list[float]:
    reader, writer = stream
    size = len(MESSAGE) // pieces
    parts = [MESSAGE[i * size : (i + 1) * size] for i in range(pieces)]
    parts[-1] += MESSAGE[pieces * size :]
    times = []
    for _ in range(count):
        began = time.perf_counter()
        for part in parts:
            writer.write(part)
        await writer.drain()
        await reader.readexactly(len(MESSAGE))
        times.append(time.perf_counter() - began)
    return times


@contextlib.contextmanager
def container(client: docker.DockerClient, image: str, bind: Path) -> Iterator[Any]:
    """A container of `image` serving echoes on `SOCKET`, whose folder is `bind` here (the
    far engine is on this machine too, so its bind mount is one of this host's folder)."""
    box = client.containers.run(
        image,
        ["sleep", "infinity"],
        detach=True,
        network_mode="none",
        volumes={str(bind): {"bind": "/run/holm", "mode": "rw"}},
        entrypoint=[],
    )
    try:
        box.exec_run(["python3", "-I", "-c", ECHO, SOCKET, HANDED], detach=True)
        deadline = time.monotonic() + 30
        while box.exec_run(["test", "-S", SOCKET]).exit_code != 0:
            assert time.monotonic() < deadline, "the echo server did not start"
            time.sleep(0.1)
        yield box
    finally:
        box.remove(force=True)


def send_image(local: docker.DockerClient, far: docker.DockerClient, image: str) -> None:
    with contextlib.suppress(docker.errors.ImageNotFound):
        far.images.get(image)
        return
    began = time.perf_counter()
    for line in far.api.load_image(local.api.get_image(image)):
        if isinstance(line, dict) and line.get("error"):
            raise SystemExit(f"the image was not loaded: {line['error']}")
    print(f"{image} sent to the far engine in {time.perf_counter() - began:.1f} s")


def summary(values: list[float]) -> str:
    return f"p50 {statistics.median(values) * 1e3:.3f} ms, min {min(values) * 1e3:.3f} ms"


async def measure(engine: RemoteEngine, box: Any, bind: Path, count: int, rounds: int) -> None:
    client = engine.client
    tls = tls_context(client.ca, client.cert, client.key)
    address = EngineAddress(engine.address, engine.port, tls)
    unix = str(engine.folder / "docker.sock")
    relay = ["python3", "-I", "-c", RELAY, SOCKET, "0"]
    handed = [*relay, HANDED]
    ways: dict[str, tuple[Opener, int]] = {
        "socket": (lambda: asyncio.open_unix_connection(str(bind / "echo.sock")), 1),
        "exec cat": (lambda: unix_engine(unix, box.id, ["cat"]), 1),
        "exec relay": (lambda: relayed(unix_engine(unix, box.id, relay)), 1),
        "tls cat": (lambda: tls_engine(address, box.id, ["cat"]), 1),
        "tls relay": (lambda: relayed(tls_engine(address, box.id, relay)), 1),
        "tls relay, 3 writes": (lambda: relayed(tls_engine(address, box.id, relay)), 3),
        "tls relay, 3 joined": (
            lambda: relayed(tls_engine(address, box.id, relay, joined=True)),
            3,
        ),
        "tls, pipes handed": (lambda: relayed(tls_engine(address, box.id, handed)), 1),
    }
    streams = {name: await opener() for name, (opener, _) in ways.items()}
    for stream in streams.values():
        await trips(stream, 1, 20)
    times: dict[str, list[float]] = {name: [] for name in ways}
    for _ in range(rounds):
        for name, (_, pieces) in ways.items():
            times[name] += await trips(streams[name], pieces, count // rounds)
    print(f"{count} round trips of {len(MESSAGE)} bytes each (load {os.getloadavg()[0]:.1f}):")
    base = statistics.median(times["socket"])
    for name, values in times.items():
        over = (statistics.median(values) - base) * 1e3
        print(f"  {name:22} {summary(values)}  (+{over:.3f} ms p50 over the socket)")
    for _, writer in streams.values():
        writer.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trips", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--image", help="an image with python3 (default: the newest holm-box)")
    args = parser.parse_args()
    local = docker.from_env()
    image = args.image or next(
        tag for i in local.images.list("holm-box") for tag in i.tags if tag.startswith("holm-box:")
    )
    bind = Path(tempfile.mkdtemp(prefix="hops-", dir="/tmp"))
    bind.chmod(0o777)
    try:
        with remote_engine() as engine:
            far = engine.docker_client()
            send_image(local, far, image)
            with container(far, image, bind) as box:
                asyncio.run(measure(engine, box, bind, args.trips, args.rounds))
            far.close()
    finally:
        local.close()
        shutil.rmtree(bind, ignore_errors=True)


if __name__ == "__main__":
    main()
