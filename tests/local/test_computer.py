"""`holm.Computer`: a local box of the test's own process, no holmd, driven with the methods
of `holm.Box`. After its block nothing of it is left (no process, no folder), unless it is
kept with `keep_on_drop`: then it runs on, and the local runtime ends it."""

from __future__ import annotations

import asyncio
import io
import os
import shutil
import tempfile
from pathlib import Path
from urllib.parse import quote

import pytest
from PIL import Image

from holm.adapters.local.records import BoxPaths, read_record
from holm.adapters.local.runtime import LocalRuntime
from holm.errors import Unsupported

pytestmark = pytest.mark.desktop

# The X displays of these tests (the machine is shared).
DISPLAY_BASE = 560
DISPLAY_COUNT = 4
PAGE = "data:text/html," + quote(
    "<title>Sign in</title><body style='margin:0'>"
    "<button style='position:fixed;left:0;top:0;width:100vw;height:100vh' "
    "onclick=\"document.title='clicked '+event.screenX+','+event.screenY\">Sign in</button>"
)


def processes(boxes_dir: Path, box_id: str) -> list[int]:
    """The box's init and its network stack, as its record names them, that still run as
    the processes it started (same pid, same start time)."""
    record = read_record(BoxPaths(boxes_dir, box_id).record)
    assert record is not None and record.init_pid is not None
    alive = []
    for pid, start in ((record.init_pid, record.init_start), (record.net_pid, record.net_start)):
        if pid is None:
            continue
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except FileNotFoundError:
            continue
        if start is None or int(stat.rsplit(")", 1)[1].split()[19]) == start:
            alive.append(pid)
    return alive


def running(pids: list[int]) -> list[int]:
    """Those of `pids` that run: not gone, and not ended (a zombie is an ended process
    whose parent, here PID 1 once its own parent ended, has not reaped it yet)."""
    alive = []
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except FileNotFoundError:
            continue
        if state not in ("Z", "X"):
            alive.append(pid)
    return alive


def test_a_computer_is_a_box_without_a_server_and_leaves_nothing() -> None:
    from holm import Computer

    with Computer(display_base=DISPLAY_BASE, display_count=DISPLAY_COUNT) as computer:
        boxes_dir = computer.boxes_dir
        folder = BoxPaths(boxes_dir, computer.id).dir
        pids = processes(boxes_dir, computer.id)
        assert pids
        computer.open(PAGE)
        computer.click(640, 400)
        png = computer.screenshot()
        assert computer.page.evaluate("document.title") == "clicked 640,400"
        assert (computer.exec(["sh", "-c", "echo hi"])).stdout == "hi\n"
        computer.files.write("/tmp/a.txt", "some text")
        assert computer.files.read("/tmp/a.txt") == b"some text"
        with pytest.raises(Unsupported):
            computer.trace()
        with pytest.raises(Unsupported):
            computer.fork()
    assert Image.open(io.BytesIO(png)).size == (1280, 800)
    assert running(pids) == []
    assert not folder.exists() and not boxes_dir.exists()


def test_a_computer_kept_on_drop_runs_on() -> None:
    from holm import Computer

    boxes_dir = Path(tempfile.mkdtemp(prefix="hk-", dir="/tmp"))
    try:
        computer = Computer(
            keep_on_drop=True,
            boxes_dir=boxes_dir,
            display_base=DISPLAY_BASE,
            display_count=DISPLAY_COUNT,
        )
        box_id = computer.id
        pids = processes(boxes_dir, box_id)
        computer.type("kept")
        del computer  # dropped: kept all the same
        assert running(pids) == pids
        assert BoxPaths(boxes_dir, box_id).dir.exists()
        asyncio.run(_delete(boxes_dir, box_id))
        assert running(pids) == []
    finally:
        asyncio.run(_end_all(boxes_dir))
        shutil.rmtree(boxes_dir, ignore_errors=True)


def test_a_dropped_computer_is_removed() -> None:
    from holm import Computer

    computer = Computer(display_base=DISPLAY_BASE, display_count=DISPLAY_COUNT)
    boxes_dir, pids = computer.boxes_dir, processes(computer.boxes_dir, computer.id)
    del computer
    assert running(pids) == []
    assert not boxes_dir.exists()
    assert os.path.isdir("/tmp")


async def _delete(boxes_dir: Path, box_id: str) -> None:
    runtime = LocalRuntime(boxes_dir, display_base=DISPLAY_BASE, display_count=DISPLAY_COUNT)
    try:
        await runtime.delete(box_id)
    finally:
        await runtime.close()


async def _end_all(boxes_dir: Path) -> None:
    if not boxes_dir.exists():
        return
    runtime = LocalRuntime(boxes_dir, display_base=DISPLAY_BASE, display_count=DISPLAY_COUNT)
    try:
        for box in await runtime.list():
            await runtime.delete(box.box_id)
    finally:
        await runtime.close()
