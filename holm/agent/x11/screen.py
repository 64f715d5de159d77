"""One screen of the box, as the event loop sees it.

Each screen has its own X connections, each used by one thread only, so that nothing slow
on one path holds up another: input (XTEST), capture (pixel reads and their hash, kept
per tile from DAMAGE reports: tiles.py), queries (windows, pointer), the clipboard, and
the damage watch (damage_watch.py). PNG encoding runs in a pool shared by the screens; the
whole screen's PNG deflates only the bands drawn on since the last (band_cache.py).
Every method here is a coroutine that hands blocking work to the right thread.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from Xlib.display import Display

from holm.agent.frames import capture
from holm.agent.frames.band_cache import BandCache, WholePng
from holm.agent.frames.capture import Raw
from holm.agent.frames.tiles import FrameHasher, Grab, TileGrid
from holm.agent.x11 import windows
from holm.agent.x11.clipboard import ClipboardOwner
from holm.agent.x11.damage_watch import DamageWatch
from holm.agent.x11.input import Input
from holm.agent.x11.lane import Lane
from holm.agent.x11.window_list import WindowTracker
from holm.agent.x11.window_watch import WindowWatch
from holm.errors import BadRequest, NotFound, ScreenUnavailable
from holm.wire.actions import Arrange
from holm.wire.results import Stillness, WindowInfo
from holm.wire.runtime import FrameResult
from holm.wire.values import PNG, Encoding, Point, Region, Selection

T = TypeVar("T")
# A region as asked (its place, scale and pointer) and the hashes of its tiles.
PartKey = tuple[Region, int, tuple[int, int] | None, bytes]
C = TypeVar("C")

STILL_POLL_S = 0.05
WINDOW_POLL_S = 0.03
# How long input done on the agent's loop may owe the X server's wait (input.py) when
# nothing that needs it comes: a few ms, past the next step of a batch, so that the wait
# seldom holds the loop while a request is being answered.
SETTLE_S = 0.02
# How long a window listing waits for the window watch to take the events it was sent
# (window_watch.py) before it reads the windows afresh instead.
WINDOWS_SETTLE_S = 0.003
# How many pictures read for steps' traces a screen keeps until they are fetched: a batch's
# next step may read one before the last is fetched.
KEPT_BEFORE = 8


class Screen:
    def __init__(
        self,
        index: int,
        width: int,
        height: int,
        png_pool: ThreadPoolExecutor,
        hasher: FrameHasher,
    ) -> None:
        self.index = index
        self.width = width
        self.height = height
        self.display_name = ""
        self.vnc_socket: str | None = None
        self.devtools_port: int | None = None
        self.up = asyncio.Event()
        self.failure: str | None = None
        self._png_pool = png_pool
        self.input_lane = Lane(f"input-{index}")
        self.capture_lane = Lane(f"capture-{index}")
        self._query_thread = ThreadPoolExecutor(1, thread_name_prefix=f"query-{index}")
        self._input: Input | None = None
        # When the X server's wait that input on the loop owes is paid if nothing asks first.
        self._settling: asyncio.TimerHandle | None = None
        # Whether `_send_input` is scheduled (input.py, `send_unsent`).
        self._sending = False
        self._grabber: capture.Grabber | None = None
        self.hasher = hasher
        self._grid: TileGrid | None = None
        self._bands = BandCache(width, height)
        # The last picture encoded but the whole screen's plain PNG (which keeps its bands
        # instead), by its hash and encoding. The hash is of the pixels, their size, the
        # scale and the pointer drawn, so the same hash in the same encoding is the same
        # bytes: a still screen asked again as JPEG or WebP is not encoded again.
        self._encoded: tuple[str, Encoding, bytes] | None = None
        # The last region asked (its place, scale, pointer and the hashes of its tiles) and
        # its hash: on the capture thread only.
        self._part_hash: tuple[PartKey, str] | None = None
        # The PNGs of the pictures read for a step's trace (`look_before`), by hash, being
        # encoded or done: the last few only (`KEPT_BEFORE`), oldest first.
        self._kept_before: dict[str, asyncio.Future[bytes]] = {}
        # The damage watch's count before the grid last read the whole screen, and the hash
        # it found: while the count has not moved, nothing was drawn since (as fresh as the
        # watch's word, about a millisecond: engine/still_screens.py argues the same).
        self._clean_at: tuple[int, str] | None = None
        self._damage: DamageWatch | None = None
        self._query_conn: Display | None = None
        # Made on the query thread at the first listing.
        self._window_list: WindowTracker | None = None
        self.window_watch: WindowWatch | None = None
        # The last listing and the watch's count it was made at.
        self._listed: tuple[int, list[WindowInfo]] | None = None
        self.windows_settle_s = WINDOWS_SETTLE_S
        self.clipboard: ClipboardOwner | None = None

    async def connect(self, display_name: str) -> None:
        """Open the screen's connections (the display is up)."""
        self.display_name = display_name
        loop = asyncio.get_running_loop()

        def open_input() -> Input:
            return Input(Display(display_name), self.width, self.height)

        self._input = await self.input_lane.run(open_input)
        self._grabber = await self.capture_lane.run(
            lambda: capture.Grabber(Display(display_name), self.width, self.height),
        )
        grabber = self._grabber
        self._grid = await self.capture_lane.run(
            lambda: TileGrid(
                grabber.conn,
                self.hasher,
                self.width,
                self.height,
                lambda area: grabber.grab(area).data,
            ),
        )
        self._damage = await asyncio.to_thread(DamageWatch, display_name, loop)
        self._query_conn = await loop.run_in_executor(self._query_thread, Display, display_name)
        self.window_watch = await asyncio.to_thread(WindowWatch, display_name)
        self.clipboard = await asyncio.to_thread(ClipboardOwner, display_name)

    def _up(self, conn: C | None) -> C:
        if conn is None or self._input is None:
            why = self.failure or "it is still starting"
            raise ScreenUnavailable(f"screen {self.index} is not up: {why}")
        return conn

    async def on_input(
        self, work: Callable[[Input], T], inline_if: Callable[[Input], bool] | None = None
    ) -> T:
        """Run `work` with the screen's input, on the agent's loop when `inline_if` says it
        cannot sleep and the input thread is idle (lane.py; `inline_if` is asked only then,
        so it may read what the thread's work changes), else on the input thread."""
        conn = self._up(self._input)
        if inline_if is not None and self.input_lane.idle and inline_if(conn):
            # The X server's wait is owed, not waited (input.py): more input on this
            # connection needs none, and what needs it pays it first.
            conn.deferring = True
            try:
                return work(conn)
            finally:
                conn.deferring = False
                if conn.unsent and not self._sending:
                    # Sent in the loop's next turn, after this answer is written and
                    # before any other request is read (input.py).
                    self._sending = True
                    asyncio.get_running_loop().call_soon(self._send_input)
                if conn.owed and self._settling is None:
                    self._settling = asyncio.get_running_loop().call_later(
                        SETTLE_S, self._settle_input
                    )
        # Owed only by work done here while the thread was idle, and paid here (on the
        # loop) before the thread gets anything: never two calls on the connection at once.
        self._settle_input()
        return await self.input_lane.run(lambda: work(conn))

    def _send_input(self) -> None:
        self._sending = False
        # Work given to the input thread since was preceded by a settle, which sent it all.
        if self._input is not None and self.input_lane.idle:
            self._input.send_unsent()

    def _settle_input(self) -> None:
        if self._settling is not None:
            self._settling.cancel()
            self._settling = None
        if self._input is not None:
            self._input.settle()

    async def on_query(self, work: Callable[[Display], T]) -> T:
        conn = self._up(self._query_conn)
        # A query on its own connection sees what the input before it did (the pointer
        # where a click left it).
        self._settle_input()
        return await asyncio.get_running_loop().run_in_executor(
            self._query_thread, lambda: work(conn)
        )

    async def end_input_batch(
        self,
    ) -> tuple[list[str], list[str], list[str], list[str], int | None]:
        """`Input.end_batch` on the input thread, or at once when nothing is down: only the
        batch's steps, all done by now, put a button or key down (a hold running out only
        lets one up), so a batch that put none down has nothing to release."""
        down = self._up(self._input)
        if not down.buttons and not down.keys:
            return [], [], [], [], None
        # Releasing never sleeps (only a key going down waits for a click to land).
        return await self.on_input(lambda i: i.end_batch(), Input.never_waits)

    # Frames

    def _region(self, region: Region | None) -> Region:
        whole = Region(0, 0, self.width, self.height)
        return whole if region is None else capture.clip(region, self.width, self.height)

    async def frame_hash(self) -> tuple[str, int, int]:
        grid = self._up(self._grid)
        # A screen nobody drew on is answered here, without the hop to the capture thread.
        digest = self.capture_lane.here(grid.hash_if_clean)
        if digest is None:
            digest = await self.capture_lane.run(grid.frame_hash)
        return digest, self.width, self.height

    async def frame(
        self,
        have: str | None = None,
        window: str | None = None,
        region: Region | None = None,
        scale: int = 100,
        pointer: bool = False,
        encoding: Encoding = PNG,
    ) -> FrameResult:
        capture.check_scale(scale)
        if window is not None:
            if region is not None:
                raise BadRequest("capture a window or a region, not both")
            region = await self._window_region(window)
        area = self._region(region)
        at: tuple[int, int] | None = None
        if pointer:
            where = await self.cursor()
            at = (where.x - area.x, where.y - area.y)
        whole = region is None and scale == 100 and at is None
        # Read before the picture is taken: every change counted so far is in it.
        changes = self._changes_counted() if whole else None
        digest, raw = await self._read_frame(region is None, area, have, scale, at, encoding)
        width, height = capture.scaled_size(area, scale)
        if digest == have or raw is None:
            return FrameResult(
                hash=digest, unchanged=True, width=width, height=height, changes=changes
            )
        loop = asyncio.get_running_loop()
        if isinstance(raw, WholePng):
            image = await loop.run_in_executor(self._png_pool, raw.png)
        elif isinstance(raw, bytes):
            image = raw  # kept: encoded before, from the same pixels
        else:
            image = await loop.run_in_executor(
                self._png_pool, capture.encode, raw, scale, at, encoding
            )
            self._encoded = (digest, encoding, image)
        return FrameResult(
            hash=digest,
            image=image,
            format=encoding.format,
            width=width,
            height=height,
            changes=changes,
        )

    # What a display server's screen does its own way (holm/agent/wayland/screen.py):
    # where a window is, the count of changes, and the pixel read.

    async def _window_region(self, window: str) -> Region:
        found = await self.on_query(lambda c: windows.get_window(c, window))
        return Region(found.x, found.y, found.width, found.height)

    def _changes_counted(self) -> int | None:
        damage = self._damage
        return damage.count.value if damage is not None and damage.telling() else None

    async def _read_frame(
        self,
        whole_screen: bool,
        area: Region,
        have: str | None,
        scale: int,
        at: tuple[int, int] | None,
        encoding: Encoding,
    ) -> tuple[str, Raw | WholePng | bytes | None]:
        """The frame's hash and, unless it is `have`, its pixels or what stands for them
        (None: unchanged): the X server's, through the tile grid."""
        grid = self._up(self._grid)
        kept_hash: Callable[[], str | None]
        read: Callable[[], tuple[str, Raw | WholePng | bytes | None]]
        if whole_screen:
            kept_hash = functools.partial(grid.hash_if_clean, scale, at)
            read = functools.partial(self._whole, grid, have, scale, at, encoding)
        else:
            kept_hash = functools.partial(self._part_if_kept, grid, area, scale, at)
            read = functools.partial(self._part, grid, area, have, scale, at, encoding)
        # Only a frame that may be `have` is worth the check here, on the loop: any other
        # is read on the capture thread, which asks the X server what was drawn again.
        kept = self.capture_lane.here(kept_hash) if have is not None else None
        if kept is not None and kept == have:
            return kept, None
        return await self.capture_lane.run(read)

    def _whole(
        self,
        grid: TileGrid,
        have: str | None,
        scale: int,
        at: tuple[int, int] | None,
        encoding: Encoding,
    ) -> tuple[str, Raw | WholePng | bytes | None]:
        """The whole screen's hash from the grid, and unless it is `have` its pixels, or for
        its plain PNG the bands kept and the pixels of the others (band_cache.py), or the
        picture last encoded of these pixels in this encoding."""
        digest = grid.frame_hash(scale, at)
        if digest == have:
            return digest, None
        if scale == 100 and at is None and encoding.format == "png":
            return digest, self._bands.plan(grid)
        kept = self._encoded_as(digest, encoding)
        if kept is not None:
            return digest, kept
        return digest, Raw(grid.snapshot(), self.width, self.height)

    def _part_if_kept(
        self, grid: TileGrid, area: Region, scale: int, at: tuple[int, int] | None
    ) -> str | None:
        """A region's hash when none of its tiles was drawn on since it was last asked for
        (the same place, scale and pointer), from what was kept then; None when its pixels
        must be read (`_part`)."""
        if self._part_hash is None or not grid.tracks_damage or not grid.clean_in(area):
            return None
        return self._kept_part_hash(self._part_key(grid, area, scale, at))

    @staticmethod
    def _part_key(grid: TileGrid, area: Region, scale: int, at: tuple[int, int] | None) -> PartKey:
        return (area, scale, at, grid.hashes_meeting(area))

    def _kept_part_hash(self, key: PartKey) -> str | None:
        """The hash kept of the last region asked, when it was asked as `key`."""
        kept = self._part_hash
        return kept[1] if kept is not None and kept[0] == key else None

    def _part(
        self,
        grid: TileGrid,
        area: Region,
        have: str | None,
        scale: int,
        at: tuple[int, int] | None,
        encoding: Encoding,
    ) -> tuple[str, Raw | bytes | None]:
        """A region's hash and, unless it is `have`, its pixels or the picture last encoded
        of them; on the capture thread. Where DAMAGE keeps the grid, only the region's
        tiles drawn on since are read, and a region whose tiles hash as when it was last
        asked for has the hash it had then; else the region is read whole."""
        shot: Raw | None
        if not grid.tracks_damage:
            shot = self._up(self._grabber).grab(area)
            digest = self.hasher.picture(shot.data, shot.width, shot.height, scale, at)
        else:
            grid.refresh(area)
            key = self._part_key(grid, area, scale, at)
            kept = self._kept_part_hash(key)
            if kept is not None:
                digest, shot = kept, None  # its pixels are copied only if needed
            else:
                shot = Raw(grid.crop(area), area.width, area.height)
                digest = self.hasher.picture(shot.data, shot.width, shot.height, scale, at)
                self._part_hash = (key, digest)
        if digest == have:
            return digest, None
        encoded = self._encoded_as(digest, encoding)
        if encoded is not None:
            return digest, encoded
        return digest, shot or Raw(grid.crop(area), area.width, area.height)

    def _encoded_as(self, digest: str, encoding: Encoding) -> bytes | None:
        kept = self._encoded
        if kept is not None and kept[0] == digest and kept[1] == encoding:
            return kept[2]
        return None

    async def look_before(
        self, have: str | None, read: asyncio.Future[None], with_png: bool = False
    ) -> FrameResult:
        """The whole screen's hash as the next step finds it (`p.LookBefore`). `read` is
        resolved as soon as the pixels of the tiles drawn on since the grid last looked
        are read (the step waits for that); they are hashed after, beside the step, and
        the PNG of a changed screen is then encoded, kept for `kept_frame`. While the
        damage watch has counted nothing since the grid found `have`, the answer costs not
        even a round trip to the X server; a screen nobody drew on since the grid last
        looked costs that round trip, on the loop, and no pixel read."""
        loop = asyncio.get_running_loop()
        plan: WholePng | None = None
        # The PNG when the grid's thread encoded it right after the hash.
        png: bytes | None = None
        try:
            grid = self._up(self._grid)
            damage = self._damage
            changes = damage.count.value if damage is not None and damage.telling() else None
            if have is not None and changes is not None and self._clean_at == (changes, have):
                digest = have
            elif self.capture_lane.idle:
                # The grid's thread has nothing to do: its work is done here, up to the
                # read, and handed to it right after, before any other work on the grid.
                grabs = grid.grab_due()
                read.set_result(None)
                if grabs and not grid.same_as_kept(grabs):
                    finish = functools.partial(self._finish_and_encode, grid, grabs, have, with_png)
                    digest, plan, png = await self.capture_lane.run(finish)
                else:
                    # Nothing drawn, or drawn again the same: no hash, no thread.
                    digest = grid.kept_hash()
                    if digest != have:
                        digest, plan = self._finish_look(grid, [], have)
            else:

                def look() -> tuple[str, WholePng | None, bytes | None]:
                    grabs = grid.grab_due()
                    loop.call_soon_threadsafe(_resolve, read)
                    return self._finish_and_encode(grid, grabs, have, with_png)

                digest, plan, png = await self.capture_lane.run(look)
            if changes is not None:
                self._clean_at = (changes, digest)
        finally:
            _resolve(read)
        if plan is not None and digest not in self._kept_before:
            encoding: asyncio.Future[bytes]
            if png is not None:
                encoding = loop.create_future()
                encoding.set_result(png)
            else:
                encoding = loop.run_in_executor(self._png_pool, plan.png)
            # Fetched or not, a failed encode must not be left unretrieved.
            encoding.add_done_callback(lambda done: done.cancelled() or done.exception())
            self._kept_before[digest] = encoding
            while len(self._kept_before) > KEPT_BEFORE:
                del self._kept_before[next(iter(self._kept_before))]
        return FrameResult(
            hash=digest,
            unchanged=plan is None,
            image=await self._kept_png(digest) if plan is not None and with_png else None,
            width=self.width,
            height=self.height,
            changes=changes,
        )

    async def _kept_png(self, digest: str) -> bytes | None:
        """The PNG of a changed screen a look read, in the look's answer: holmd stores it
        before the step's entries, and asking for it (`kept_frame`) once the look answered
        cost a round trip more on the step's answer. None when the encode failed (holmd
        then asks, and records no frame)."""
        encoding = self._kept_before.get(digest)
        if encoding is None:
            return None
        try:
            return await asyncio.shield(encoding)
        except Exception:
            return None

    def _finish_and_encode(
        self, grid: TileGrid, grabs: list[Grab], have: str | None, with_png: bool
    ) -> tuple[str, WholePng | None, bytes | None]:
        """`_finish_look` on the grid's thread, and with `with_png` the PNG of a changed
        screen encoded right there (only the bands drawn on are deflated): handing it to
        the PNG pool cost a wake-up of another thread, and one of the loop between, on the
        answer of a step whose screen changed. None when it was not asked, encoded
        already, or failed (the pool then tries); a look not asked for it leaves the
        encode to the pool, beside the steps after it."""
        digest, plan = self._finish_look(grid, grabs, have)
        if not with_png or plan is None or digest in self._kept_before:
            return digest, plan, None
        try:
            return digest, plan, plan.png()
        except Exception:
            return digest, plan, None

    def _finish_look(
        self, grid: TileGrid, grabs: list[Grab], have: str | None
    ) -> tuple[str, WholePng | None]:
        """The tiles a look read, hashed and kept; the screen's hash as they left it (not
        read again: what was drawn since is after the step began), and unless it is `have`
        what its PNG is made of. On the capture thread, or where it would run."""
        grid.absorb(grabs)
        digest = grid.kept_hash()
        if digest == have:
            return digest, None
        return digest, self._bands.plan(grid)

    async def kept_frame(self, digest: str) -> FrameResult:
        """The PNG of a picture `look_before` read, once encoded."""
        encoding = self._kept_before.get(digest)
        if encoding is None:
            raise NotFound(f"the picture {digest} of screen {self.index} is not kept")
        image = await asyncio.shield(encoding)
        return FrameResult(hash=digest, image=image, width=self.width, height=self.height)

    async def await_change(self, after: int, within_ms: int) -> int:
        """The screen's count of changes once it is past `after` (damage_watch.py)."""
        return await self._up(self._damage).count.wait_past(after, within_ms)

    async def wait_still(self, settle_ms: int, within_ms: int) -> Stillness:
        """Wait until the screen's pixels stay the same for `settle_ms`."""
        start = time.monotonic()
        deadline = start + within_ms / 1000
        last, _, _ = await self.frame_hash()
        since = time.monotonic()
        while True:
            now = time.monotonic()
            if now - since >= settle_ms / 1000:
                return Stillness(still=True, waited_ms=round((now - start) * 1000), hash=last)
            if now >= deadline:
                return Stillness(still=False, waited_ms=round((now - start) * 1000), hash=last)
            await asyncio.sleep(min(STILL_POLL_S, max(0.0, deadline - now)))
            current, _, _ = await self.frame_hash()
            if current != last:
                last, since = current, time.monotonic()

    # Pointer and windows

    async def cursor(self) -> Point:
        def query(conn: Display) -> Point:
            pointer = conn.screen().root.query_pointer()
            return Point(int(pointer.root_x), int(pointer.root_y))

        return await self.on_query(query)

    async def windows(self) -> list[WindowInfo]:
        """The screen's windows: the last listing while the window watch has told of no
        change since (window_watch.py; waiting `windows_settle_s` at most for it to take
        the events it was sent), else a listing on the query thread."""
        watch, listed = self.window_watch, self._listed
        if watch is None:
            return await self.on_query(self._listing)
        if (
            listed is not None
            and listed[0] == watch.changes
            and await watch.settle(self.windows_settle_s)
            and listed[0] == watch.changes
        ):
            return listed[1]
        # The count before the listing: a change told during it makes the next one fresh.
        changes = watch.changes
        listing = await self.on_query(self._listing)
        self._listed = (changes, listing)
        return listing

    def known_windows(self) -> list[WindowInfo] | None:
        """The last listing when the window watch has told of no change since and has
        taken every event it was sent, known without waiting; None when `windows` must
        look further."""
        watch, listed = self.window_watch, self._listed
        if watch is None or listed is None or listed[0] != watch.changes:
            return None
        return listed[1] if watch.settled() else None

    def window_changes(self) -> int:
        """The window watch's count of changes (0 before it is up)."""
        return 0 if self.window_watch is None else self.window_watch.changes

    def pointer_landed(self, x: int, y: int, button: int) -> None:
        """A page of this screen's Chromium took a press (tab_watch.py)."""
        if self._input is not None:
            self._input.pointer_landed(x, y, button)

    def pointer_released(self, x: int, y: int, button: int) -> None:
        """A page of this screen's Chromium took a release (tab_watch.py)."""
        if self._input is not None:
            self._input.pointer_released(x, y, button)

    def key_landed(self) -> None:
        """A page of this screen's Chromium took a key (tab_watch.py)."""
        if self._input is not None:
            self._input.key_landed()

    def _listing(self, conn: Display) -> list[WindowInfo]:
        if self._window_list is None or self._window_list.conn is not conn:
            self._window_list = WindowTracker(conn)
        return self._window_list.listing()

    async def active_window(self) -> WindowInfo | None:
        return await self.on_query(windows.active_window)

    async def window_ids(self) -> set[int]:
        return await self.on_query(lambda c: {w.id for w in windows.client_windows(c)})

    async def wait_window(
        self,
        class_: str | None,
        title: str | None,
        within_ms: int,
        ignore: set[int] | None = None,
        still_trying: Callable[[], None] | None = None,
    ) -> WindowInfo:
        """Poll (on the query thread, a short call each time) until a mapped window that
        matches appears; `still_trying` may raise to give up early."""
        ignored = ignore or set()
        deadline = time.monotonic() + within_ms / 1000
        while True:
            found = await self.on_query(lambda c: windows.find_window(c, class_, title, ignored))
            if found is not None:
                return found
            if time.monotonic() >= deadline:
                raise windows.no_window(class_, title, within_ms)
            if still_trying is not None:
                still_trying()
            await asyncio.sleep(WINDOW_POLL_S)

    async def focus_window(self, window: str) -> None:
        await self.on_query(lambda c: windows.focus(c, window))

    async def arrange_window(self, window: str, how: Arrange) -> WindowInfo:
        return await self.on_query(lambda c: windows.arrange(c, window, how))

    async def close_window(self, window: str) -> None:
        await self.on_query(lambda c: windows.close(c, window))

    # Clipboard

    async def clipboard_get(self, selection: Selection) -> str:
        return await asyncio.to_thread(self._up(self.clipboard).get, selection)

    async def clipboard_set(self, selection: Selection, text: str) -> None:
        await asyncio.to_thread(self._up(self.clipboard).set, selection, text)

    def close(self) -> None:
        if self._settling is not None:
            self._settling.cancel()
        if self.clipboard is not None:
            self.clipboard.close()
        if self._damage is not None:
            self._damage.close()
        if self.window_watch is not None:
            self.window_watch.close()
        self.input_lane.shutdown()
        self.capture_lane.shutdown()
        self._query_thread.shutdown(wait=False, cancel_futures=True)


def _resolve(read: asyncio.Future[None]) -> None:
    if not read.done():
        read.set_result(None)
