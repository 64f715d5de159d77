"""A PNG written as bands of rows, each deflated on its own, so that a band of the screen
nobody drew on keeps the bytes it was deflated to last time (band_cache.py).

A PNG's pixels are one zlib stream (RFC 1950) of deflate blocks (RFC 1951). A band deflated
as raw deflate and ended with a full flush ends on a byte boundary and refers to nothing
before its start, so bands deflated apart can stand one after another in one stream, the
way pigz joins the blocks it deflated in parallel: the zlib header, the bands in order, a
last empty block, and the Adler-32 of all the bytes the bands hold, which is computed from
the bands' own Adler-32s without reading those bytes again (`adler32_combine`).

A band is `BAND_ROWS` rows: one row of tiles, so a band's key can be its tiles' hashes. Every
row starts with its filter byte, always 0 (none): a row refers to no other, so a band is
whole in itself, and a screen (flat areas, text, few gradients) compresses as well
unfiltered, in about two thirds of the time of pillow's four filters tried on each row.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Sequence

import msgspec
from PIL import Image

from holm.agent.frames.tiles import TILE

BAND_ROWS = TILE
# zlib's fastest level: a screen's long runs compress well at any level.
PNG_LEVEL = 1
# Raw deflate (no zlib header or trailer), a 32 KiB window.
_RAW_DEFLATE = -15
# CMF 0x78 (deflate, 32 KiB window), FLG 0x01 (the fastest level; the header's check bits).
_ZLIB_HEADER = b"\x78\x01"
# A last block (BFINAL 1) of fixed Huffman codes (BTYPE 01) holding only its end code.
_LAST_BLOCK = b"\x03\x00"
_ADLER_BASE = 65521
_SIGNATURE = b"\x89PNG\r\n\x1a\n"
# 8 bits a channel, truecolour (RGB), deflate, adaptive filtering (each row says its filter:
# here always 0, none), no interlace.
_IHDR = struct.Struct(">IIBBBBB")
_U32 = struct.Struct(">I")


class Band(msgspec.Struct, frozen=True):
    """Rows of a PNG, each with its filter byte, deflated on their own (`deflated`), with the
    Adler-32 and the length of the bytes they hold."""

    deflated: bytes
    adler: int
    size: int


class Deflated(msgspec.Struct):
    """Bands deflated since the agent started (the tests count them)."""

    bands: int = 0


DEFLATED = Deflated()


def rgb(bgrx: bytes, width: int, height: int) -> bytes:
    """Pixels as the X server gives them (BGRX) as a PNG's RGB."""
    return Image.frombuffer("RGB", (width, height), bgrx, "raw", "BGRX", 0, 1).tobytes()


def deflate_band(rgb_rows: bytes | memoryview, width: int) -> Band:
    """Rows of RGB pixels, `width` a row, as a band (blocking: run it in a thread; zlib lets
    go of the GIL while it deflates)."""
    stride = width * 3
    view = memoryview(rgb_rows)
    rows = b"".join(b"\0" + view[at : at + stride] for at in range(0, len(view), stride))
    deflate = zlib.compressobj(PNG_LEVEL, zlib.DEFLATED, _RAW_DEFLATE)
    # The full flush ends the band on a byte boundary with nothing after it referring back
    # into it; the next band starts afresh, so any bands deflated apart may follow it.
    deflated = deflate.compress(rows) + deflate.flush(zlib.Z_FULL_FLUSH)
    DEFLATED.bands += 1
    return Band(deflated, zlib.adler32(rows), len(rows))


def adler32_combine(first: int, second: int, second_size: int) -> int:
    """The Adler-32 of two runs of bytes one after the other, from the Adler-32 of each and
    the second's length (zlib's adler32_combine). Adler-32 is two sums mod 65521: A, 1 plus
    the bytes, and B, the sum of A after each byte. Over the second run A starts from the
    first's A rather than 1, so each of its bytes adds that A less 1 to B."""
    a1, b1 = first & 0xFFFF, first >> 16
    a2, b2 = second & 0xFFFF, second >> 16
    a = (a1 + a2 - 1) % _ADLER_BASE
    b = (b1 + b2 + second_size * (a1 - 1)) % _ADLER_BASE
    return (b << 16) | a


def png_of_bands(width: int, height: int, bands: Sequence[Band]) -> bytes:
    """The PNG of an RGB picture of `width`×`height` from its bands, top to bottom."""
    adler = zlib.adler32(b"")
    for band in bands:
        adler = adler32_combine(adler, band.adler, band.size)
    idat = b"".join(
        [_ZLIB_HEADER, *(band.deflated for band in bands), _LAST_BLOCK, _U32.pack(adler)]
    )
    header = _IHDR.pack(width, height, 8, 2, 0, 0, 0)
    return _SIGNATURE + _chunk(b"IHDR", header) + _chunk(b"IDAT", idat) + _chunk(b"IEND", b"")


def png(image: Image.Image) -> bytes:
    """The PNG of an image (made RGB), band by band, none of them kept: the same bytes as
    the whole screen's PNG made from bands kept, for the same pixels."""
    pixels = memoryview((image if image.mode == "RGB" else image.convert("RGB")).tobytes())
    width, height = image.size
    band_bytes = BAND_ROWS * width * 3
    bands = [
        deflate_band(pixels[at : at + band_bytes], width)
        for at in range(0, len(pixels), band_bytes)
    ]
    return png_of_bands(width, height, bands)


def _chunk(kind: bytes, data: bytes) -> bytes:
    crc = zlib.crc32(data, zlib.crc32(kind))
    return _U32.pack(len(data)) + kind + data + _U32.pack(crc)


__all__ = [
    "BAND_ROWS",
    "DEFLATED",
    "PNG_LEVEL",
    "Band",
    "Deflated",
    "adler32_combine",
    "deflate_band",
    "png",
    "png_of_bands",
    "rgb",
]
