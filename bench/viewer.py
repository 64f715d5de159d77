"""Figures of the viewer relay on a real local box. Prints, asserts nothing.

    .venv/bin/python bench/viewer.py [--rounds 30] [--seconds 5]

holmd runs in its own process (bench/http_api.py's server: the local runtime, Chromium on
the screen, 127.0.0.1), so the relay does not share a core's time with this client:
- ticket to first frame: POST …/viewer/ticket, open the socket, RFB handshake, and one
  whole 1280x800 raw framebuffer update, p50; and the same straight on x11vnc's Unix
  socket, the two taking turns, each after a random pause;
- frames a viewer receives per second while the page animates (incremental update
  requests, the next sent as each update arrives, as a VNC viewer does), through holmd's
  WebSocket relay and straight on x11vnc's Unix socket, taking turns;
- whole-screen raw updates per second (non-incremental requests), both ways;
- each of these through the box's VNC door too (the box has `auth: "password"`: a TCP
  port of holmd, RFB's VNC authentication, then the door's splice to x11vnc).
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import struct
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from urllib.parse import quote

BENCH = Path(__file__).resolve().parent
sys.path[:0] = [str(BENCH.parent), str(BENCH)]

import aiohttp  # noqa: E402
from http_api import CONFIRM, DISPLAY_BASE, served  # noqa: E402

from holm.adapters.local.runtime import LocalRuntime  # noqa: E402
from holm.vnc_auth import response_to  # noqa: E402

Recv = Callable[[int], Awaitable[bytes]]
Send = Callable[[bytes], Awaitable[None]]
# recv, send and close of a connection to the screen's VNC server.
Opened = tuple[Recv, Send, Callable[[], Awaitable[None]]]


async def handshake(recv: Recv, send: Send) -> tuple[int, int]:
    await recv(12)
    await send(b"RFB 003.008\n")
    count = (await recv(1))[0]
    await recv(count)
    await send(b"\x01")
    await recv(4)  # SecurityResult
    await send(b"\x01")  # shared
    width, height = struct.unpack(">HH", await recv(4))
    await recv(16)
    (name_length,) = struct.unpack(">I", await recv(4))
    await recv(name_length)
    # Raw only, 32 bits a pixel (x11vnc's default format).
    await send(b"\x02\x00" + struct.pack(">H", 1) + struct.pack(">i", 0))
    return width, height


async def full_update(recv: Recv, send: Send, width: int, height: int) -> None:
    await update(recv, send, b"\x03\x00" + struct.pack(">HHHH", 0, 0, width, height))


async def update(recv: Recv, send: Send, request: bytes) -> None:
    """Send an update request and read the update it gets (raw rectangles)."""
    await send(request)
    while True:
        kind = (await recv(1))[0]
        if kind == 0:
            break
        if kind == 2:
            continue
        if kind == 3:
            await recv(3)
            (length,) = struct.unpack(">I", await recv(4))
            await recv(length)
            continue
        raise RuntimeError(f"server message {kind}")
    await recv(1)
    (rects,) = struct.unpack(">H", await recv(2))
    for _ in range(rects):
        _, _, w, h, encoding = struct.unpack(">HHHHi", await recv(12))
        if encoding == 0:
            await recv(w * h * 4)


async def through_door(port: int, password: str) -> Opened:
    """A connection to a VNC door, its VNC authentication done; `handshake` then hears the
    None handshake it expects (replayed here, its own two answers swallowed), so that its
    figures are the same steps as the other ways'."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port, limit=1 << 22)
    recv, send = unix_transport(reader, writer)
    version = await recv(12)
    await send(version)
    count = (await recv(1))[0]
    assert 2 in await recv(count)
    await send(b"\x02")
    await send(response_to(await recv(16), password))
    replay = bytearray(version + b"\x01\x01")
    swallow = [2]

    async def replayed_recv(n: int) -> bytes:
        if replay:
            taken = bytes(replay[:n])
            del replay[:n]
            return taken
        return await recv(n)

    async def replayed_send(data: bytes) -> None:
        if swallow[0] > 0:
            swallow[0] -= 1
            return
        await send(data)

    async def close() -> None:
        writer.close()

    # The door's SecurityResult is the one the None handshake reads next.
    return replayed_recv, replayed_send, close


def ws_transport(ws: aiohttp.ClientWebSocketResponse) -> tuple[Recv, Send]:
    buffer = bytearray()

    async def recv(n: int) -> bytes:
        while len(buffer) < n:
            buffer.extend(await ws.receive_bytes())
        # One copy, as StreamReader.readexactly makes for the direct way (a slice of the
        # bytearray would be a second).
        with memoryview(buffer) as view:
            taken = bytes(view[:n])
        del buffer[:n]
        return taken

    async def send(data: bytes) -> None:
        await ws.send_bytes(data)

    return recv, send


def unix_transport(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> tuple[Recv, Send]:
    async def recv(n: int) -> bytes:
        return await reader.readexactly(n)

    async def send(data: bytes) -> None:
        writer.write(data)
        await writer.drain()

    return recv, send


async def updates_per_second(recv: Recv, send: Send, rounds: int) -> float:
    width, height = await handshake(recv, send)
    await full_update(recv, send, width, height)
    began = time.perf_counter()
    for _ in range(rounds):
        await full_update(recv, send, width, height)
    return rounds / (time.perf_counter() - began)


ANIMATION = "data:text/html," + quote(
    "<title>Animation</title><body style='margin:0'><canvas id=c width=640 height=400>"
    "</canvas><script>const g = c.getContext('2d'); let n = 0;"
    "(function f() { g.fillStyle = `hsl(${n++ % 360},80%,50%)`; g.fillRect(0, 0, 640, 400);"
    "requestAnimationFrame(f); })();</script>"
)


async def frames_per_second(recv: Recv, send: Send, seconds: float) -> float:
    """Updates received per second while the screen changes: each incremental request
    sent as the last update arrives."""
    width, height = await handshake(recv, send)
    await full_update(recv, send, width, height)
    incremental = b"\x03\x01" + struct.pack(">HHHH", 0, 0, width, height)
    frames, began = 0, time.perf_counter()
    while time.perf_counter() - began < seconds:
        await update(recv, send, incremental)
        frames += 1
    return frames / (time.perf_counter() - began)


def main(rounds: int, seconds: float) -> None:
    with served("h5v-bench-", ["--chromium"]) as (base, state_dir, _):
        asyncio.run(measure(base, state_dir, rounds, seconds))


async def measure(base: str, state_dir: Path, rounds: int, seconds: float) -> None:
    async with aiohttp.ClientSession(base) as client:
        spec = {"spec": {"policy": {"auth": "password"}}}
        made = await (await client.post("/v1/boxes", json=spec)).json()
        box, password = made["id"], made["vnc"]["password"]
        door_port = made["vnc"]["doors"][0]["port"]
        ticket_path = f"/v1/boxes/{box}/screens/0/viewer/ticket"
        socket_path = f"/v1/boxes/{box}/screens/0/viewer/socket"
        runtime = LocalRuntime(state_dir / "boxes", "bench-viewer", display_base=DISPLAY_BASE)

        async def relayed() -> Opened:
            ticket = (await (await client.post(ticket_path, json={})).json())["ticket"]
            ws = await client.ws_connect(
                f"{socket_path}?ticket={ticket}&mode=view", protocols=("binary",)
            )

            async def close() -> None:
                await ws.close()

            return *ws_transport(ws), close

        async def direct() -> Opened:
            reader, writer = await runtime.open_stream(box, "vnc", 0, limit=1 << 22)

            async def close() -> None:
                writer.close()

            return *unix_transport(reader, writer), close

        async def door() -> Opened:
            return await through_door(door_port, password)

        ways: dict[str, Callable[[], Awaitable[Opened]]] = {
            "relay": relayed,
            "door": door,
            "direct": direct,
        }
        firsts: dict[str, list[tuple[float, float, float]]] = {way: [] for way in ways}
        for _ in range(max(5, rounds // 3)):
            for way, opened in ways.items():
                # A viewer comes at any moment. (Before the box's agent started an x11vnc
                # per viewer, x11vnc looked at its socket every 200 ms, and back to back
                # each way's rounds met the same moment of that wait.)
                await asyncio.sleep(random.uniform(0.25, 0.45))
                firsts[way].append(await first_frame(opened))
        for way, label in (
            ("relay", "ticket to first frame"),
            ("door", "the same through the VNC door (opening includes VNC authentication)"),
            ("direct", "the same straight on x11vnc's socket (no ticket, no relay)"),
        ):
            parts = ", ".join(
                f"{statistics.median(p) * 1000:.1f}" for p in zip(*firsts[way], strict=True)
            )
            total = statistics.median(sum(p) for p in firsts[way]) * 1000
            print(f"  of which opening, RFB handshake, whole frame (p50, ms): {parts}")
            print(f"{label} (1280x800 raw): p50 {total:.1f} ms")

        body = {"actions": [{"type": "open_url", "url": ANIMATION}]}
        await client.post(f"/v1/boxes/{box}/screens/0/actions", json=body)
        animated = await alternately(ways, lambda r, s: frames_per_second(r, s, seconds))
        print_both("frames/s while the page animates", animated)
        whole = await alternately(ways, lambda r, s: updates_per_second(r, s, rounds))
        print_both("whole-screen raw updates/s", whole)
        await runtime.close()
        await client.delete(f"/v1/boxes/{box}", headers=CONFIRM)


def print_both(label: str, got: dict[str, float]) -> None:
    relay, door, direct = got["relay"], got["door"], got["direct"]
    print(
        f"{label}: relay {relay:.1f} ({relay / direct * 100:.0f} %), "
        f"door {door:.1f} ({door / direct * 100:.0f} %), direct {direct:.1f}"
    )


async def first_frame(opened: Callable[[], Awaitable[Opened]]) -> tuple[float, float, float]:
    """Seconds to open the connection, to shake hands, and to get a whole raw frame."""
    began = time.perf_counter()
    recv, send, close = await opened()
    opening = time.perf_counter()
    width, height = await handshake(recv, send)
    shaken = time.perf_counter()
    await full_update(recv, send, width, height)
    done = time.perf_counter()
    await close()
    return opening - began, shaken - opening, done - shaken


async def alternately(
    ways: dict[str, Callable[[], Awaitable[Opened]]],
    measure: Callable[[Recv, Send], Awaitable[float]],
    turns: int = 3,
) -> dict[str, float]:
    """The mean of `measure` over `turns` connections each way, the ways taking turns, so
    that a change in the machine's load falls on both."""
    got: dict[str, list[float]] = {way: [] for way in ways}
    for _ in range(turns):
        for way, opened in ways.items():
            recv, send, close = await opened()
            got[way].append(await measure(recv, send))
            await close()
    return {way: statistics.mean(values) for way, values in got.items()}


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--seconds", type=float, default=5)
    args = parser.parse_args()
    main(args.rounds, args.seconds)
