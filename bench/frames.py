"""What a frame costs in each format, on a real holmd (local runtime, bench/http_api.py's
`served`) with Chromium showing a page of text and a text field on its 1280×800 screen;
prints figures, asserts nothing.

    PYTHONPATH=. .venv/bin/python bench/frames.py [--rounds N] [--against DIR]

1. `GET …/frame` through REST, one request at a time on one keep-alive connection: the
   whole screen's PNG (a) of a still screen asked again, (b) after one letter typed in the
   text field, (c) after the whole page changed (Escape swaps it for another page of other
   text, each time); then JPEG and WebP of the still screen, each asked twice (the agent
   keeps the last picture it encoded). Only the GET is timed: the
   letter or the swap is sent before it, with a pause for Chromium to paint that ends
   before the server's frame watcher looks (0.25 s after an action) and records a PNG of
   its own, which would deflate the bands first; a frame that does not show the change yet
   is left out and counted. With
   `--against DIR` (a checkout of other code, e.g. `git worktree add /tmp/before c256183`),
   a second holmd runs that code with a box of its own, and each round goes to both in
   turns that swap each round, so both columns see the same load.
2. The encoder alone, in this process, on the pictures those frames gave: the PNG of one
   zlib stream (the agent's writer up to c256183, kept here) beside the PNG of bands kept
   (band_cache.py, on one thread), in the same three cases, each from the screen's BGRX
   pixels as the agent holds them; then pillow's PNG, JPEG and WebP of the still screen.
   Times are CPU time: what the load changes least.

Prints the median and the 90th percentile in milliseconds, and the load average it ran under.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import functools
import io
import os
import statistics
import struct
import time
import zlib
from collections.abc import Callable
from typing import cast

from http_api import add_against, served_sides
from PIL import Image

from holm.agent.frames.band_cache import BandCache
from holm.agent.frames.encoding import image_bytes
from holm.agent.frames.png_bands import PNG_LEVEL
from holm.agent.frames.tiles import FrameHasher, TileGrid
from holm.client import HolmClient
from holm.wire.actions import Click, OpenUrl, Press, Type, WaitStill
from holm.wire.values import Encoding, ImageFormat, Point, Region

_TEXT = {
    "one": "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor "
    "incididunt ut labore et dolore magna aliqua. Ut enim ad minim veniam. ",
    "other": "Quarterly figures for the northern region rose against the same quarter last "
    "year, with the largest gains in the coastal offices and in online orders. ",
}
# Escape swaps the page's text (and its colours) for the other; the text field keeps the
# letters typed.
PAGE = "data:text/html," + (
    "<body style='font:15px sans-serif;margin:24px'>"
    "<input id=f autofocus placeholder='Search' style='width:400px'>"
    "<div id=t></div><script>"
    f"const text={{one:'{_TEXT['one'] * 3}',other:'{_TEXT['other'] * 3}'}};let on='one';"
    "function show(){t.innerHTML=('<h1>'+on+'</h1>'+('<p>'+text[on]+'</p>').repeat(14));"
    "document.body.style.background=on=='one'?'white':'%23f4f0e6'}"
    "addEventListener('keydown',e=>{if(e.key=='Escape'){on=on=='one'?'other':'one';show()}});"
    "show()</script></body>"
)
# In the text field, below Chromium's toolbar.
FIELD = Point(x=200, y=121)
# Time for Chromium to paint a key's effect. The server's frame watcher looks 0.25 s after an
# action and records the screen's PNG: a frame asked for after that would find its bands
# deflated already, so the bench asks before, and then waits for the watcher to be done
# (its encode would otherwise fall on the next figure).
PAINTED_S = 0.1
WATCHED_S = 0.5
CASES = ("still, asked again", "one letter typed", "whole page changed")
# A zoom on the text field (its first letters too) and the text below it, as an agent asks
# for a closer look.
ZOOM = Region(x=16, y=80, width=480, height=320)
ZOOM_CASES = (
    f"region {ZOOM.width}x{ZOOM.height}, still, have",
    f"region {ZOOM.width}x{ZOOM.height}, still",
    f"region {ZOOM.width}x{ZOOM.height}, one letter typed",
)
OTHER_FORMATS: tuple[ImageFormat, ...] = ("jpeg", "webp")


def report(name: str, times_s: list[float], extra: str = "") -> None:
    ms = sorted(t * 1000 for t in times_s)
    p90 = ms[min(len(ms) - 1, int(len(ms) * 0.9))]
    print(f"  {name:<44} median {statistics.median(ms):7.2f} ms   p90 {p90:7.2f} ms   {extra}")


class Side:
    """One holmd, its box, and what its frames took."""

    def __init__(self, name: str, base: str) -> None:
        self.name = name
        self.client = HolmClient(base, "")
        self.box = ""
        self.times: dict[str, list[float]] = {
            case: [] for fmt in OTHER_FORMATS for case in (fmt, f"{fmt}, asked again")
        }
        self.times = {**{case: [] for case in CASES}, **self.times}
        self.times.update({case: [] for case in ZOOM_CASES})
        self.sizes: dict[str, int] = {}
        # Frames asked for before Chromium had painted the change (left out of the figures).
        self.unpainted = 0
        # The last PNG of each case, for the encoder's figures.
        self.pictures: dict[str, bytes] = {}

    async def start(self) -> None:
        self.box = (await self.client.create_box()).id
        await self.client.act(self.box, [OpenUrl(url=PAGE), Click(at=FIELD), WaitStill()])

    async def timed(
        self,
        case: str,
        fmt: ImageFormat = "png",
        keep: bool = True,
        before: str = "",
        region: Region | None = None,
        have: str | None = None,
    ) -> str:
        """The frame's hash (of `region`, else the whole screen), its time kept unless it is
        still `before`."""
        start = time.perf_counter()
        frame = await self.client.frame(
            self.box, format=None if fmt == "png" else fmt, region=region, have=have
        )
        took = time.perf_counter() - start
        data = base64.b64decode(frame.png_base64 or frame.image_base64 or "")
        if frame.hash == before:
            self.unpainted += keep
        elif keep:
            self.times[case].append(took)
            self.sizes[case] = len(data)
        if fmt == "png" and region is None:
            self.pictures[case] = data
        return frame.hash

    async def round(self, keep: bool) -> None:
        zoom = await self.timed(ZOOM_CASES[1], keep=keep, region=ZOOM)
        await self.timed(ZOOM_CASES[0], keep=keep, region=ZOOM, have=zoom)
        still = await self.timed(CASES[0], keep=keep)
        for fmt in OTHER_FORMATS:
            await self.timed(fmt, fmt, keep)
            # The same pixels again: the agent keeps the last picture it encoded.
            await self.timed(f"{fmt}, asked again", fmt, keep)
        await self.client.act(self.box, [Type(text="x")])
        await asyncio.sleep(PAINTED_S)
        await self.timed(ZOOM_CASES[2], keep=keep, before=zoom, region=ZOOM)
        typed = await self.timed(CASES[1], keep=keep, before=still)
        await asyncio.sleep(WATCHED_S)
        await self.client.act(self.box, [Press(chord="escape")])
        await asyncio.sleep(PAINTED_S)
        await self.timed(CASES[2], keep=keep, before=typed)
        await asyncio.sleep(WATCHED_S)

    async def end(self) -> None:
        with contextlib.suppress(Exception):
            await self.client.delete_box(self.box)
        await self.client.close()


async def rest_figures(sides: list[Side], rounds: int) -> None:
    for side in sides:
        await side.start()
    try:
        for n in range(rounds + 2):
            # Each round in the other order: neither side always runs right after the other.
            for side in sides if n % 2 else sides[::-1]:
                await side.round(keep=n >= 2)
    finally:
        for side in sides:
            await side.end()
    print("GET …/frame through REST, 1280x800 Chromium screen (one keep-alive connection):")
    for side in sides:
        print(f" {side.name} ({side.unpainted} frames asked before the change showed, left out):")
        for case, times in side.times.items():
            label = f"png {case}" if case in CASES or case in ZOOM_CASES else case
            report(label, times, f"{side.sizes[case]:>8} B")


# The PNG writer before bands (c256183): one zlib stream over every row.
_IHDR = struct.Struct(">IIBBBBB")


def png_one_stream(image: Image.Image) -> bytes:
    width, height = image.size
    stride = width * 3
    pixels = memoryview(image.tobytes())
    deflate = zlib.compressobj(PNG_LEVEL)
    rows = b"".join(b"\0" + pixels[at : at + stride] for at in range(0, stride * height, stride))
    idat = deflate.compress(rows) + deflate.flush()
    header = _IHDR.pack(width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + _chunk(b"IHDR", header)
        + _chunk(b"IDAT", idat)
        + _chunk(b"IEND", b"")
    )


def _chunk(kind: bytes, data: bytes) -> bytes:
    crc = zlib.crc32(data, zlib.crc32(kind))
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)


def png_of_pillow(image: Image.Image) -> bytes:
    out = io.BytesIO()
    image.save(out, "PNG", compress_level=PNG_LEVEL)
    return out.getvalue()


class Pixels:
    """The screen as the agent's tile grid holds it: BGRX pixels and their tiles' hashes."""

    def __init__(self, picture: bytes, hasher: FrameHasher) -> None:
        image = Image.open(io.BytesIO(picture)).convert("RGB")
        self.width, self.height = image.size
        self.pixels = bytearray(image.tobytes("raw", "BGRX"))
        self.columns = -(-self.width // 64)
        self.hashes = hasher.tiles(bytes(self.pixels), self.width, self.height)


def old_encode(screen: Pixels) -> bytes:
    # As the agent did: a copy of the grid's pixels, then pillow's BGRX to RGB, then one stream.
    copy = bytes(screen.pixels)
    return png_one_stream(
        Image.frombuffer("RGB", (screen.width, screen.height), copy, "raw", "BGRX", 0, 1)
    )


def cpu_timed(calls: list[Callable[[], object]], rounds: int) -> list[float]:
    """CPU time of each call, the calls taken in turn."""
    times = []
    for n in range(rounds):
        call = calls[n % len(calls)]
        start = time.process_time()
        call()
        times.append(time.process_time() - start)
    return times


def encoder_figures(pictures: dict[str, bytes], rounds: int) -> None:
    hasher = FrameHasher(b"bench")
    still = Pixels(pictures[CASES[0]], hasher)
    typed = Pixels(pictures[CASES[1]], hasher)
    swapped = Pixels(pictures[CASES[2]], hasher)
    cache = BandCache(still.width, still.height)

    def new_encode(screen: Pixels) -> bytes:
        return cache.plan(cast(TileGrid, screen)).png()

    print(f"the encoder alone, on the {still.width}x{still.height} screen's pixels (CPU time):")
    # Each case alternates between two screens: what differs is deflated again each time.
    cases = {
        CASES[0]: [still],
        CASES[1]: [still, typed],
        CASES[2]: [typed, swapped],
    }
    for case, screens in cases.items():
        for name, encode in (("one stream", old_encode), ("bands kept", new_encode)):
            calls: list[Callable[[], object]] = [functools.partial(encode, s) for s in screens]
            for call in calls:
                call()
            report(f"png {name}, {case}", cpu_timed(calls, rounds), f"{len(encode(still)):>8} B")
    image = Image.open(io.BytesIO(pictures[CASES[0]])).convert("RGB")
    report(
        "png of pillow (four filters a row)",
        cpu_timed([lambda: png_of_pillow(image)], rounds),
        f"{len(png_of_pillow(image)):>8} B",
    )
    for fmt in OTHER_FORMATS:
        encoding = Encoding(fmt)
        report(
            fmt,
            cpu_timed([functools.partial(image_bytes, image, encoding)], rounds),
            f"{len(image_bytes(image, encoding)):>8} B",
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=30)
    add_against(parser)
    args = parser.parse_args()
    print(f"load average before: {_load()}  ({os.cpu_count()} cores)")
    with contextlib.ExitStack() as stack:
        bases = [
            (name, base)
            for name, base, _ in served_sides(stack, "hfr-bench-", ["--chromium"], args.against)
        ]

        async def run() -> dict[str, bytes]:
            sides = [Side(name, base) for name, base in bases]
            await rest_figures(sides, args.rounds)
            return sides[0].pictures

        pictures = asyncio.run(run())
    print(f"load average after REST: {_load()}")
    encoder_figures(pictures, args.rounds)
    print(f"load average after:  {_load()}")


def _load() -> str:
    return " ".join(f"{figure:.2f}" for figure in os.getloadavg())


if __name__ == "__main__":
    main()
