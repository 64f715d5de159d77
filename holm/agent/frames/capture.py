"""Frames: raw pixels from the X server, their hash, and a PNG (or the JPEG or WebP a reader
asked for) only when one is needed.

A frame's hash (`tiles.FrameHasher`) covers its raw pixels, its size and how it was shown
(scale, pointer), so equal hashes mean equal pictures, and checking "unchanged" never
encodes a PNG.
"""

from __future__ import annotations

import logging

import msgspec
from PIL import Image, ImageDraw
from Xlib import X
from Xlib.display import Display
from Xlib.error import XError

from holm.agent.frames.encoding import image_bytes
from holm.agent.frames.tiles import READS
from holm.agent.x11.shm import SharedImage
from holm.errors import BadRequest
from holm.wire.values import PNG, Encoding, Region

log = logging.getLogger("holm.agent")

MIN_SCALE, MAX_SCALE = 1, 400


class Raw(msgspec.Struct):
    """Pixels as the X server gave them: 32 bits a pixel, BGRX."""

    data: bytes
    width: int
    height: int


class Grabber:
    """Reads pixels from one connection: through a shared memory segment (MIT-SHM) where
    the X server offers it, else through the socket (XGetImage), which costs a copy of
    every byte through python-xlib's reader."""

    def __init__(self, conn: Display, width: int, height: int) -> None:
        self.conn = conn
        self.shm: SharedImage | None = None
        try:
            self.shm = SharedImage(conn, width * height * 4)
        except (OSError, XError) as exc:
            log.info(
                "no MIT-SHM on %s (%s); frames go through the socket", conn.get_display_name(), exc
            )

    def grab(self, region: Region) -> Raw:
        READS.pixels += region.width * region.height
        if self.shm is not None:
            return Raw(self.shm.get_image(region), region.width, region.height)
        root = self.conn.screen().root
        reply = root.get_image(
            region.x, region.y, region.width, region.height, X.ZPixmap, 0xFFFFFFFF
        )
        return Raw(bytes(reply.data), region.width, region.height)

    def close(self) -> None:
        if self.shm is not None:
            self.shm.close()


def clip(region: Region, width: int, height: int) -> Region:
    """`region` cut to the screen; refused when nothing of it is on the screen."""
    x0, y0 = max(region.x, 0), max(region.y, 0)
    x1, y1 = min(region.x + region.width, width), min(region.y + region.height, height)
    if x1 <= x0 or y1 <= y0:
        raise BadRequest(
            f"the region {region.width}x{region.height} at ({region.x}, {region.y}) "
            f"is off the screen of {width}x{height}"
        )
    return Region(x0, y0, x1 - x0, y1 - y0)


def check_scale(scale: int) -> None:
    if not MIN_SCALE <= scale <= MAX_SCALE:
        raise BadRequest(f"scale must be {MIN_SCALE} to {MAX_SCALE} (percent)")


def scaled_size(size: Raw | Region, scale: int) -> tuple[int, int]:
    return max(1, size.width * scale // 100), max(1, size.height * scale // 100)


def encode(
    raw: Raw, scale: int = 100, pointer: tuple[int, int] | None = None, encoding: Encoding = PNG
) -> bytes:
    """The picture of the pixels, PNG unless asked otherwise (blocking; run it in a thread)."""
    image = Image.frombuffer("RGB", (raw.width, raw.height), raw.data, "raw", "BGRX", 0, 1)
    if pointer is not None:
        image = image.copy()
        _draw_pointer(image, pointer)
    if scale != 100:
        image = image.resize(scaled_size(raw, scale), Image.Resampling.BILINEAR)
    return image_bytes(image, encoding)


def _draw_pointer(image: Image.Image, at: tuple[int, int]) -> None:
    # The X server's cursor is not in captured pixels; an arrow shows where it is.
    x, y = at
    arrow = [
        (x, y),
        (x, y + 16),
        (x + 4, y + 12),
        (x + 8, y + 19),
        (x + 10, y + 18),
        (x + 7, y + 11),
        (x + 12, y + 11),
    ]
    ImageDraw.Draw(image).polygon(arrow, fill=(255, 255, 255), outline=(0, 0, 0))
