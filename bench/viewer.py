"""Figures of the viewer relay on a real local box. Prints, asserts nothing.

    PYTHONPATH=$PWD .venv/bin/python bench/viewer.py [--rounds 30]

- ticket to first frame: POST …/viewer/ticket, open the socket, RFB handshake, and one
  whole 1280x800 raw framebuffer update, p50;
- full-screen raw updates per second (non-incremental requests, one after the other)
  through holmd's WebSocket relay, beside the same directly on x11vnc's Unix socket.
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

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "tests" / "http")]

import aiohttp  # noqa: E402
from local_kit import LocalServer  # noqa: E402

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
    await send(b"\x03\x00" + struct.pack(">HHHH", 0, 0, width, height))
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


async def main(rounds: int) -> None:
    server = LocalServer()
    try:
        client = await server.start()
        box = (await (await client.post("/v1/boxes", json={"spec": {}})).json())["id"]
        ticket_path = f"/v1/boxes/{box}/screens/0/viewer/ticket"
        firsts = []
        for _ in range(max(5, rounds // 3)):
            began = time.perf_counter()
            ticket = (await (await client.post(ticket_path, json={})).json())["ticket"]
            ws = await client.ws_connect(
                f"/v1/boxes/{box}/screens/0/viewer/socket?ticket={ticket}", protocols=("binary",)
            )
            recv, send = ws_transport(ws)
            width, height = await handshake(recv, send)
            await full_update(recv, send, width, height)
            firsts.append(time.perf_counter() - began)
            await ws.close()
        p50 = statistics.median(firsts) * 1000
        print(f"ticket to first frame ({width}x{height} raw): p50 {p50:.1f} ms")

        ticket = (await (await client.post(ticket_path, json={})).json())["ticket"]
        ws = await client.ws_connect(
            f"/v1/boxes/{box}/screens/0/viewer/socket?ticket={ticket}", protocols=("binary",)
        )
        relayed = await updates_per_second(*ws_transport(ws), rounds)
        await ws.close()
        assert server.runtime is not None
        path = await server.runtime.viewer_socket(box, 0)
        reader, writer = await asyncio.open_unix_connection(str(path), limit=1 << 20)
        direct = await updates_per_second(*unix_transport(reader, writer), rounds)
        writer.close()
        print(f"full-screen raw updates/s: relay {relayed:.1f}, direct {direct:.1f}")
    finally:
        await server.remove_everything()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=30)
    asyncio.run(main(parser.parse_args().rounds))
