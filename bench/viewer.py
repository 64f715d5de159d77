"""Figures of the viewer relay on a real local box. Prints, asserts nothing.

    .venv/bin/python bench/viewer.py [--rounds 30] [--seconds 5]

holmd runs in its own process (bench/http_api.py's server: the local runtime, Chromium on
the screen, 127.0.0.1), so the relay does not share a core's time with this client:
- ticket to first frame: POST …/viewer/ticket, open the socket, RFB handshake, and one
  whole 1280x800 raw framebuffer update, p50;
- frames a viewer receives per second while the page animates (incremental update
  requests, the next sent as each update arrives, as a VNC viewer does), through holmd's
  WebSocket relay and straight on x11vnc's Unix socket, one after the other in one run;
- whole-screen raw updates per second (non-incremental requests), both ways.
"""

from __future__ import annotations

import argparse
import asyncio
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

Recv = Callable[[int], Awaitable[bytes]]
Send = Callable[[bytes], Awaitable[None]]


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


def ws_transport(ws: aiohttp.ClientWebSocketResponse) -> tuple[Recv, Send]:
    buffer = bytearray()

    async def recv(n: int) -> bytes:
        while len(buffer) < n:
            buffer.extend(await ws.receive_bytes())
        taken = bytes(buffer[:n])
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
        box = (await (await client.post("/v1/boxes", json={})).json())["id"]
        ticket_path = f"/v1/boxes/{box}/screens/0/viewer/ticket"
        socket_path = f"/v1/boxes/{box}/screens/0/viewer/socket"

        async def relayed() -> aiohttp.ClientWebSocketResponse:
            ticket = (await (await client.post(ticket_path, json={})).json())["ticket"]
            return await client.ws_connect(
                f"{socket_path}?ticket={ticket}&mode=view", protocols=("binary",)
            )

        firsts = []
        parts: list[tuple[float, float, float]] = []
        for _ in range(max(5, rounds // 3)):
            began = time.perf_counter()
            ws = await relayed()
            opened = time.perf_counter()
            recv, send = ws_transport(ws)
            width, height = await handshake(recv, send)
            shaken = time.perf_counter()
            await full_update(recv, send, width, height)
            firsts.append(time.perf_counter() - began)
            parts.append((opened - began, shaken - opened, time.perf_counter() - shaken))
            await ws.close()
        print(
            "  of which ticket and socket, RFB handshake, whole frame (p50, ms): "
            + ", ".join(f"{statistics.median(p) * 1000:.1f}" for p in zip(*parts, strict=True))
        )
        p50 = statistics.median(firsts) * 1000
        print(f"ticket to first frame ({width}x{height} raw): p50 {p50:.1f} ms")

        runtime = LocalRuntime(state_dir / "boxes", "bench-viewer", display_base=DISPLAY_BASE)
        vnc = await runtime.viewer_socket(box, 0)

        async def direct() -> tuple[Recv, Send, asyncio.StreamWriter]:
            reader, writer = await asyncio.open_unix_connection(str(vnc), limit=1 << 22)
            return *unix_transport(reader, writer), writer

        straight_firsts = []
        parts = []
        for _ in range(max(5, rounds // 3)):
            began = time.perf_counter()
            recv, send, writer = await direct()
            opened = time.perf_counter()
            width, height = await handshake(recv, send)
            shaken = time.perf_counter()
            await full_update(recv, send, width, height)
            straight_firsts.append(time.perf_counter() - began)
            parts.append((opened - began, shaken - opened, time.perf_counter() - shaken))
            writer.close()
        print(
            "  of which socket, RFB handshake, whole frame (p50, ms): "
            + ", ".join(f"{statistics.median(p) * 1000:.1f}" for p in zip(*parts, strict=True))
        )
        p50 = statistics.median(straight_firsts) * 1000
        print(f"the same straight on x11vnc's socket (no ticket, no relay): p50 {p50:.1f} ms")

        body = {"actions": [{"type": "open_url", "url": ANIMATION}]}
        await client.post(f"/v1/boxes/{box}/screens/0/actions", json=body)
        ws = await relayed()
        through = await frames_per_second(*ws_transport(ws), seconds)
        await ws.close()
        recv, send, writer = await direct()
        straight = await frames_per_second(recv, send, seconds)
        writer.close()
        print(
            f"frames/s while the page animates: relay {through:.1f}, direct {straight:.1f} "
            f"({through / straight * 100:.0f} %)"
        )

        ws = await relayed()
        whole_relayed = await updates_per_second(*ws_transport(ws), rounds)
        await ws.close()
        recv, send, writer = await direct()
        whole_direct = await updates_per_second(recv, send, rounds)
        writer.close()
        print(
            f"whole-screen raw updates/s: relay {whole_relayed:.1f}, direct {whole_direct:.1f} "
            f"({whole_relayed / whole_direct * 100:.0f} %)"
        )
        await runtime.close()
        await client.delete(f"/v1/boxes/{box}", headers=CONFIRM)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--seconds", type=float, default=5)
    args = parser.parse_args()
    main(args.rounds, args.seconds)
