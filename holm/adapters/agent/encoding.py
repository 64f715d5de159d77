"""A frame's picture in the format its reader asked for: PNG (what a trace keeps, lossless)
or JPEG or WebP at a quality, which a model reads as well in fewer bytes.

Every encoder here is set for speed, since a frame is on an agent's path. The PNG is written
here rather than by pillow, whose encoder tries four filters on every row: a screen (flat
areas, text, few gradients) compresses as well unfiltered, in about two thirds of the time
(bench/frames.py).
"""

from __future__ import annotations

import io
import struct
import zlib

from PIL import Image

from holm.wire.values import Encoding

# zlib's fastest level: a screen's long runs compress well at any level.
PNG_LEVEL = 1
# libwebp's fastest method (0 to 6): the others cost three to seven times the time for a
# fifth fewer bytes.
WEBP_METHOD = 0

_SIGNATURE = b"\x89PNG\r\n\x1a\n"
# 8 bits a channel, truecolour (RGB), deflate, adaptive filtering (each row says its filter:
# here always 0, none), no interlace.
_IHDR = struct.Struct(">IIBBBBB")


def image_bytes(image: Image.Image, encoding: Encoding) -> bytes:
    """`image` encoded as `encoding` says (blocking; run it in a thread)."""
    match encoding.format:
        case "png":
            return png(image)
        case "jpeg":
            return _saved(image, "JPEG", quality=encoding.quality)
        case "webp":
            return _saved(image, "WEBP", quality=encoding.quality, method=WEBP_METHOD)


def png(image: Image.Image) -> bytes:
    """The PNG of an RGB image, its rows unfiltered, deflated at `PNG_LEVEL`."""
    rgb = image if image.mode == "RGB" else image.convert("RGB")
    width, height = rgb.size
    stride = width * 3
    pixels = memoryview(rgb.tobytes())
    deflate = zlib.compressobj(PNG_LEVEL)
    rows = b"".join(b"\0" + pixels[at : at + stride] for at in range(0, stride * height, stride))
    idat = deflate.compress(rows) + deflate.flush()
    header = _IHDR.pack(width, height, 8, 2, 0, 0, 0)
    return _SIGNATURE + _chunk(b"IHDR", header) + _chunk(b"IDAT", idat) + _chunk(b"IEND", b"")


def _chunk(kind: bytes, data: bytes) -> bytes:
    crc = zlib.crc32(data, zlib.crc32(kind))
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)


def _saved(image: Image.Image, format: str, **options: int) -> bytes:
    out = io.BytesIO()
    image.save(out, format, **options)
    return out.getvalue()


__all__ = ["PNG_LEVEL", "image_bytes", "png"]
