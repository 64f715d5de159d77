"""The screen as a grid of 64×64 tiles, each with its hash, so that a frame's hash costs
reading and hashing only the tiles drawn on since the last one.

The X server's DAMAGE extension tells the capture connection every rectangle drawn on the
screen (what became damaged since the grid last looked, `DeltaRectangles`); before each
hash the grid asks for what is pending (a round trip, after which every drawing done
before is reported), marks the tiles those rectangles touch, reads them (one read per run
of marked tiles in a row of tiles) and hashes them again. A screen nobody drew on since is
answered from the hashes kept, without reading a pixel.

A frame's hash is the hash of its tiles' hashes (`FrameHasher`), so a screen read tile by
tile here and a picture read whole hash the same when the pixels are the same. A region (or
a window) is copied from the grid once its own tiles are refreshed (`refresh(area)`,
`crop`), and hashed as a picture of its own.
"""

from __future__ import annotations

import functools
import hashlib
import operator
from collections.abc import Callable, Iterable, Iterator
from typing import Any, NamedTuple

import msgspec
from Xlib.display import Display
from Xlib.ext import damage

from holm.wire.values import Region

TILE = 64
HASH_PREFIX = "px:"
BYTES_PER_PIXEL = 4

# Reads a rectangle of the screen: its pixels, 32 bits each, row by row.
Reader = Callable[[Region], bytes]


class Reads(msgspec.Struct):
    """Pixels read from the X server and tiles hashed, since the agent started (the tests
    count them)."""

    pixels: int = 0
    tiles: int = 0
    # Tiles read again and found the same as kept, so not hashed again.
    same: int = 0


READS = Reads()


class Grab(NamedTuple):
    """The pixels of a run of tiles along a tile row, read and not hashed yet; or (`row`
    WHOLE) of the whole screen, for the tiles `due`."""

    row: int
    first: int
    last: int
    data: bytes
    due: frozenset[int] = frozenset()


# A `Grab` of the whole screen.
WHOLE = -1
# Past this share of the screen's tiles drawn on, the screen is read whole.
WHOLE_READ_SHARE = 0.5


class FrameHasher:
    """SHA-256 under the server's key, of tiles and of frames made of tiles. SHA-256
    because this machine's CPUs hash it in hardware, faster than BLAKE2; the key (given by
    the server, the same for all its boxes) goes first in every hash."""

    def __init__(self, key: bytes) -> None:
        self._keyed = hashlib.sha256(key)

    def tiles(self, data: bytes, width: int, height: int) -> list[bytes]:
        """The hash of each tile of `width`×`height` pixels (BGRX, row by row), tile rows
        from the top, tiles of a row from the left: of the tile's rows, one after another."""
        view = memoryview(data)
        hashes: list[bytes] = []
        for rows_of in _tile_rows(width, height):
            tile = self._keyed.copy()
            tile.update(b"".join(rows_of(view)))
            hashes.append(tile.digest())
        READS.tiles += len(hashes)
        return hashes

    def picture(
        self,
        data: bytes,
        width: int,
        height: int,
        scale: int = 100,
        pointer: tuple[int, int] | None = None,
    ) -> str:
        """The hash of a capture read whole: the same as a grid of the same pixels."""
        return self.frame(self.tiles(data, width, height), width, height, scale, pointer)

    def frame(
        self,
        tiles: Iterable[bytes],
        width: int,
        height: int,
        scale: int = 100,
        pointer: tuple[int, int] | None = None,
    ) -> str:
        """A frame's hash: its tiles' hashes, its size and how it is shown (scale,
        pointer), so equal hashes mean equal pictures."""
        digest = self._keyed.copy()
        for tile in tiles:
            digest.update(tile)
        shown = f"|{width}x{height}"
        if scale != 100:
            shown += f"@{scale}%"
        if pointer is not None:
            shown += f"+pointer{pointer[0]},{pointer[1]}"
        digest.update(shown.encode())
        return HASH_PREFIX + digest.hexdigest()[:40]


class TileGrid:
    """The hashes of the whole screen's tiles, kept up to date from DAMAGE, and the pixels
    they were read from. Used on the capture thread only, with the capture connection.
    Without DAMAGE, every tile is read for every hash."""

    def __init__(
        self, conn: Display, hasher: FrameHasher, width: int, height: int, read: Reader
    ) -> None:
        self.conn = conn
        self.hasher = hasher
        self.width = width
        self.height = height
        self._read = read
        self.columns = -(-width // TILE)
        self.rows = -(-height // TILE)
        self.hashes: list[bytes] = [b""] * (self.columns * self.rows)
        self.pixels = bytearray(width * height * BYTES_PER_PIXEL)
        self._marked = set(range(len(self.hashes)))
        self._damage: int | None = None
        if conn.has_extension("DAMAGE"):
            self._damage = subscribe(conn, damage.DamageReportDeltaRectangles)

    def frame_hash(self, scale: int = 100, pointer: tuple[int, int] | None = None) -> str:
        self.refresh()
        return self.hasher.frame(self.hashes, self.width, self.height, scale, pointer)

    def hash_if_clean(self, scale: int = 100, pointer: tuple[int, int] | None = None) -> str | None:
        """The frame's hash when nothing was drawn since the last refresh, from the hashes
        kept (asking the X server what is pending is a round trip; no pixel is read); None
        when tiles must be read again first (`frame_hash`)."""
        self._collect()
        if self._marked:
            return None
        return self.hasher.frame(self.hashes, self.width, self.height, scale, pointer)

    @property
    def tracks_damage(self) -> bool:
        """Whether DAMAGE keeps the grid: without it every refresh reads every tile."""
        return self._damage is not None

    def refresh(self, area: Region | None = None) -> None:
        """Read and hash again the tiles drawn on since the last refresh; with `area`, only
        those that meet it (the others stay marked for the next refresh)."""
        self.absorb(self.grab_due(area))

    def grab_due(self, area: Region | None = None) -> list[Grab]:
        """The first half of `refresh`: read the pixels of the tiles drawn on since (with
        `area`, of those that meet it), not hashed yet. `absorb` must take them before the
        grid is used again, or the tiles they hold are lost."""
        self._collect()
        if area is None:
            due, self._marked = self._marked, set()
        else:
            due = self._marked.intersection(self._tiles_meeting(area))
            self._marked -= due
        if area is None and len(due) > len(self.hashes) * WHOLE_READ_SHARE:
            # Most of the screen (a page that repainted its window): one read of it all,
            # one round trip rather than one a row of tiles.
            whole = self._read(Region(0, 0, self.width, self.height))
            return [Grab(WHOLE, 0, 0, whole, frozenset(due))]
        return [
            Grab(top, first, last, self._read(self._run_area(top, first, last)))
            for top, first, last in _runs(due, self.columns)
        ]

    def absorb(self, grabs: Iterable[Grab]) -> None:
        """The second half of `refresh`: hash the tiles `grab_due` read and keep them."""
        for grab in grabs:
            if grab.row == WHOLE:
                self._keep_whole(grab.data, grab.due)
            else:
                self._keep_run(grab)

    def same_as_kept(self, grabs: list[Grab]) -> bool:
        """Whether every grab holds the very pixels kept of its tiles (a page drew them
        again unchanged): absorbing them would change nothing. One comparison a grab, no
        hash: cheap enough for the agent's loop."""
        if not all(self.hashes):
            return False
        for grab in grabs:
            kept = self.pixels if grab.row == WHOLE else self._kept_run(grab)
            if grab.data != kept:
                return False
        READS.same += sum(len(g.due) if g.row == WHOLE else g.last - g.first + 1 for g in grabs)
        return True

    def _kept_run(self, grab: Grab) -> bytes:
        """The pixels kept of a run's tiles, row by row."""
        area = self._run_area(grab.row, grab.first, grab.last)
        span, stride = area.width * BYTES_PER_PIXEL, self.width * BYTES_PER_PIXEL
        start = area.y * stride + area.x * BYTES_PER_PIXEL
        with memoryview(self.pixels) as pixels:
            return b"".join(
                pixels[at : at + span] for at in range(start, start + area.height * stride, stride)
            )

    def _keep_whole(self, data: bytes, due: frozenset[int]) -> None:
        """The tiles `due` of a whole screen read: none hashed again when no pixel of it
        changed (one comparison), else run by run."""
        if all(self.hashes) and data == self.pixels:
            READS.same += len(due)
            return
        stride = self.width * BYTES_PER_PIXEL
        with memoryview(data) as pixels:
            for top, first, last in _runs(set(due), self.columns):
                area = self._run_area(top, first, last)
                start, span = area.y * stride + area.x * BYTES_PER_PIXEL, area.width * 4
                rows = range(start, start + area.height * stride, stride)
                run = b"".join(pixels[at : at + span] for at in rows)
                self._keep_run(Grab(top, first, last, run))

    def kept_hash(self, scale: int = 100, pointer: tuple[int, int] | None = None) -> str:
        """The frame's hash from the tiles as last read, with no look at what was drawn
        since."""
        return self.hasher.frame(self.hashes, self.width, self.height, scale, pointer)

    def clean_in(self, area: Region) -> bool:
        """Whether none of the tiles `area` touches was drawn on since its last refresh
        (a round trip to the X server, as `hash_if_clean`; no pixel is read)."""
        self._collect()
        return self._marked.isdisjoint(self._tiles_meeting(area))

    def hashes_meeting(self, area: Region) -> bytes:
        """The hashes of the tiles `area` touches, as of their last refresh: the same
        hashes, the same pixels of `area`."""
        return b"".join(self.hashes[tile] for tile in self._tiles_meeting(area))

    def crop(self, area: Region) -> bytes:
        """The pixels of `area` (on the screen) as of its tiles' last refresh, row by row."""
        stride, span = self.width * BYTES_PER_PIXEL, area.width * BYTES_PER_PIXEL
        start = area.y * stride + area.x * BYTES_PER_PIXEL
        with memoryview(self.pixels) as pixels:
            return b"".join(
                pixels[at : at + span] for at in range(start, start + area.height * stride, stride)
            )

    def snapshot(self) -> bytes:
        """The screen's pixels as of the last refresh (a copy: an encoder may hold it while
        the grid reads on)."""
        return bytes(self.pixels)

    def _collect(self) -> None:
        if self._damage is None:
            self._marked.update(range(len(self.hashes)))
            return
        # Cleared first: what is drawn from now on is reported again; what was drawn
        # before was reported already and is in the queue once the round trip is done.
        self.conn.damage_subtract(self._damage)
        self.conn.sync()
        notify = self.conn.extension_event.DamageNotify
        while self.conn.pending_events():
            event = self.conn.next_event()
            if event.type == notify:
                self._mark(event.area)

    def _mark(self, area: Any) -> None:
        self._marked.update(self._tiles_meeting(area))

    def _tiles_meeting(self, area: Any) -> Iterator[int]:
        """The tiles a rectangle (x, y, width, height) touches; none off the screen."""
        x0, y0 = max(area.x, 0), max(area.y, 0)
        x1 = min(area.x + area.width, self.width)
        y1 = min(area.y + area.height, self.height)
        if x1 <= x0 or y1 <= y0:
            return
        for row in range(y0 // TILE, (y1 - 1) // TILE + 1):
            first = row * self.columns
            yield from range(first + x0 // TILE, first + (x1 - 1) // TILE + 1)

    def _run_area(self, row: int, first: int, last: int) -> Region:
        """Tiles `first` to `last` (columns) of tile row `row`, on the screen."""
        left, top = first * TILE, row * TILE
        return Region(
            left, top, min((last + 1) * TILE, self.width) - left, min(TILE, self.height - top)
        )

    def _keep_run(self, grab: Grab) -> None:
        """Hash the tiles of a run read and keep their pixels."""
        row, first, last, data, _ = grab
        area = self._run_area(row, first, last)
        left, top = area.x, area.y
        base = row * self.columns
        span, stride = area.width * BYTES_PER_PIXEL, self.width * BYTES_PER_PIXEL
        start = top * stride + left * BYTES_PER_PIXEL
        if all(self.hashes[base + first : base + last + 1]) and self._kept_run(grab) == data:
            # Drawn again with the same pixels (a page repainting its whole window
            # for a caret): the hashes kept are theirs. Comparing costs a tenth of
            # hashing them again.
            READS.same += last - first + 1
            return
        self.hashes[base + first : base + last + 1] = self.hasher.tiles(
            data, area.width, area.height
        )
        for line in range(area.height):
            at = start + line * stride
            self.pixels[at : at + span] = data[line * span : (line + 1) * span]

    def close(self) -> None:
        if self._damage is not None:
            self.conn.damage_destroy(self._damage)
            self._damage = None


@functools.lru_cache(maxsize=64)
def _tile_rows(width: int, height: int) -> list[Callable[[memoryview], tuple[memoryview, ...]]]:
    """For a buffer of `width`×`height` pixels, what gathers each tile's rows: one Python
    call per tile rather than one per row of it (a whole screen has 16,000), which takes
    hashing it tile by tile from about 4.8 ms to 4.3 ms at best here."""
    stride = width * BYTES_PER_PIXEL
    gatherers: list[Callable[[memoryview], tuple[memoryview, ...]]] = []
    for top in range(0, height, TILE):
        rows = min(TILE, height - top)
        for left in range(0, width, TILE):
            span = min(TILE, width - left) * BYTES_PER_PIXEL
            start = top * stride + left * BYTES_PER_PIXEL
            ends = [slice(at, at + span) for at in range(start, start + rows * stride, stride)]
            # itemgetter of one item gives the item, not a tuple of it.
            gatherers.append(operator.itemgetter(*ends) if rows > 1 else _one(ends[0]))
    return gatherers


def _one(row: slice) -> Callable[[memoryview], tuple[memoryview, ...]]:
    return lambda view: (view[row],)


def subscribe(conn: Display, level: int) -> int:
    """A damage object of the whole screen on `conn`, reporting at `level`."""
    # The X server refuses DAMAGE requests of a client that did not ask its version first.
    conn.damage_query_version()
    damage_id: int = conn.screen().root.damage_create(level)
    conn.sync()
    return damage_id


def _runs(marked: set[int], columns: int) -> Iterator[tuple[int, int, int]]:
    """Runs of marked tiles along each tile row: (row, first column, last column)."""
    run: tuple[int, int, int] | None = None
    for index in sorted(marked):
        row, column = divmod(index, columns)
        if run is not None and run[0] == row and run[2] == column - 1:
            run = (row, run[1], column)
            continue
        if run is not None:
            yield run
        run = (row, column, column)
    if run is not None:
        yield run


__all__ = [
    "HASH_PREFIX",
    "READS",
    "TILE",
    "FrameHasher",
    "Grab",
    "Reader",
    "Reads",
    "TileGrid",
    "subscribe",
]
