"""The whole screen's PNG from the bands deflated last time, deflating again only the bands
drawn on since.

An agent mostly asks for the whole screen after a small change (a click, a few letters), and
the screen's tile grid (tiles.py) knows which tiles changed. A band of the PNG (png_bands.py)
is one row of tiles, kept deflated under its key: the hashes of the row's tiles, one after
another. The tile hashes are keyed SHA-256 of the tiles' pixels, so equal keys mean equal
pixels (a box that could make two bands with one key could as well make two frames with one
hash: docs/agent.md, Frames), and a band kept under the key the grid gives now is the band
those pixels deflate to.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from holm.agent.frames.png_bands import (
    BAND_ROWS,
    Band,
    deflate_band,
    png_of_bands,
    rgb,
)
from holm.agent.frames.tiles import BYTES_PER_PIXEL, TileGrid


class Missed(msgspec.Struct, frozen=True):
    """A band not kept under its key: its pixels (BGRX, copied from the grid) to deflate."""

    row: int
    key: bytes
    bgrx: bytes
    height: int


class BandCache:
    """One screen's bands as last deflated, each with its key: one entry per row of tiles,
    so at most the size of one deflated screen."""

    def __init__(self, width: int, height: int) -> None:
        self.width = width
        self.height = height
        self._kept: list[tuple[bytes, Band] | None] = [None] * -(-height // BAND_ROWS)

    def plan(self, grid: TileGrid) -> WholePng:
        """What the screen's PNG is made of: the bands kept under the keys of the grid's
        tiles, and the pixels of the others. On the capture thread, after the grid's refresh
        and before it reads again, so every key is that of the pixels beside it; only the
        bands missed are copied."""
        stride = self.width * BYTES_PER_PIXEL
        parts: list[Band | Missed] = []
        with memoryview(grid.pixels) as pixels:
            for row, kept in enumerate(self._kept):
                key = b"".join(grid.hashes[row * grid.columns : (row + 1) * grid.columns])
                if kept is not None and kept[0] == key:
                    parts.append(kept[1])
                    continue
                top = row * BAND_ROWS
                rows = min(BAND_ROWS, self.height - top)
                band = bytes(pixels[top * stride : (top + rows) * stride])
                parts.append(Missed(row, key, band, rows))
        return WholePng(self, parts)

    def keep(self, missed: Missed, band: Band) -> None:
        # From the PNG pool's threads. Two frames may both miss a band and both deflate it:
        # the same pixels give the same bytes, so whichever is kept last is right; a frame
        # of older pixels may put back an older band, which the next frame's key misses.
        # One assignment of a whole (key, band) pair, so a reader never sees a key with
        # another key's band.
        self._kept[missed.row] = (missed.key, band)


class WholePng:
    """The whole screen's PNG to be: bands kept and bands missed, one a row of tiles, top
    to bottom."""

    def __init__(self, cache: BandCache, parts: Sequence[Band | Missed]) -> None:
        self._cache = cache
        self._parts = list(parts)

    def missed(self) -> list[Missed]:
        return [part for part in self._parts if isinstance(part, Missed)]

    def deflate(self, missed: Sequence[Missed]) -> None:
        """Deflate bands missed and keep them (blocking: run it on the PNG pool)."""
        width = self._cache.width
        for part in missed:
            band = deflate_band(rgb(part.bgrx, width, part.height), width)
            self._cache.keep(part, band)
            self._parts[part.row] = band

    def png(self) -> bytes:
        """The PNG, once every band missed is deflated (blocking: run it on the PNG pool)."""
        self.deflate(self.missed())
        bands = [part for part in self._parts if isinstance(part, Band)]
        return png_of_bands(self._cache.width, self._cache.height, bands)


__all__ = ["BandCache", "Missed", "WholePng"]
