"""A PNG checked the way a strict reader would, then decoded: what the agent's own PNG
writer (holm/agent/frames/png_bands.py) must give every reader."""

from __future__ import annotations

import io
import struct
import zlib

from PIL import Image

SIGNATURE = b"\x89PNG\r\n\x1a\n"


def chunks(data: bytes) -> list[tuple[bytes, bytes]]:
    """The PNG's chunks, (kind, data), each one's CRC checked."""
    assert data.startswith(SIGNATURE)
    found, at = [], len(SIGNATURE)
    while at < len(data):
        (size,) = struct.unpack(">I", data[at : at + 4])
        kind, body = data[at + 4 : at + 8], data[at + 8 : at + 8 + size]
        (crc,) = struct.unpack(">I", data[at + 8 + size : at + 12 + size])
        assert crc == zlib.crc32(body, zlib.crc32(kind)), kind
        found.append((kind, body))
        at += 12 + size
    return found


def decoded(data: bytes) -> Image.Image:
    """The picture of a PNG of RGB rows, once zlib has read its pixels whole (every block to
    the last, and the Adler-32 of them all), every row says no filter, and pillow has
    verified it."""
    parts = chunks(data)
    assert [kind for kind, _ in parts] == [b"IHDR", b"IDAT", b"IEND"]
    width, height = struct.unpack(">II", parts[0][1][:8])
    inflate = zlib.decompressobj()
    rows = inflate.decompress(parts[1][1])
    assert inflate.eof and not inflate.unused_data
    stride = width * 3 + 1
    assert len(rows) == height * stride
    assert rows[::stride] == bytes(height)
    Image.open(io.BytesIO(data)).verify()
    image = Image.open(io.BytesIO(data))
    image.load()
    assert (image.format, image.mode, image.size) == ("PNG", "RGB", (width, height))
    return image


__all__ = ["chunks", "decoded"]
