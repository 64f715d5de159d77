"""A screen of a memory box: its picture is a count of changes, and what is on it (windows,
tabs, what pages were filled in with, the clipboard, held buttons and keys) a few fields."""

from __future__ import annotations

from holm.agent.frames.change_count import ChangeCount
from holm.wire import results as r
from holm.wire.results import WindowInfo
from holm.wire.values import Point


class MemoryScreen:
    def __init__(self, width: int, height: int) -> None:
        self.width = width
        self.height = height
        self.cursor = Point(x=0, y=0)
        self.changes = ChangeCount()
        self.windows: list[WindowInfo] = [
            WindowInfo(id="0x100001", title="about:blank", class_="chromium", active=True)
        ]
        self.clipboard: dict[str, str] = {"clipboard": "", "primary": ""}
        self.tabs: list[r.Tab] = [r.Tab(tab="tab-1", url="about:blank")]
        # What was filled in, checked or chosen on each page: (tab, query) to its value.
        self.values: dict[tuple[str, str], str] = {}
        self.buttons: set[str] = set()
        self.keys: set[str] = set()
        self.recording = r.Recording(recording=False)

    def picture(self) -> str:
        return f"px:{self.width}x{self.height}:{self.changes.value}"
