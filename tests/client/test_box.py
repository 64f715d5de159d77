"""`holm.Box` and `holm.AsyncBox` against a real holmd with a local box (Xvfb, Chromium):
the three-line example of holm/box.py as written, the server found as the CLI finds it
(`HOLM_SERVER_URL`, `HOLM_SERVER_TOKEN`), and what a box object does besides: a page
element, a command, a file, its trace, a fork; removed when its block ends unless kept."""

from __future__ import annotations

import io
import subprocess
import sys
from urllib.parse import quote

import pytest
from e2e_kit import Holmd
from PIL import Image

from holm.client import SyncHolmClient
from holm.errors import Gone, NotFound

pytestmark = pytest.mark.desktop

PAGE = "data:text/html," + quote(
    "<title>Sign in</title><body style='margin:0'>"
    "<button style='position:fixed;left:0;top:0;width:100vw;height:100vh' "
    "onclick=\"document.title='clicked '+event.screenX+','+event.screenY\">Sign in</button>"
)


def _state(holmd: Holmd, box_id: str) -> str:
    with SyncHolmClient(holmd.url, holmd.token) as client:
        try:
            return client.get_box(box_id).state
        except (Gone, NotFound):
            return "gone"


def test_three_lines_as_written(holmd: Holmd, monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in holmd.client_env.items():
        monkeypatch.setenv(name, value)
    from holm import Box

    with Box.create() as box:
        box.open(PAGE)
        box.click(640, 400)
        png = box.screenshot()

        assert box.page.evaluate("document.title") == "clicked 640,400"
        assert box.page.click("Sign in").element is not None
        assert box.page.evaluate("document.title").startswith("clicked ")
        ran = box.exec(["sh", "-c", "echo hi > /tmp/hi.txt; cat /tmp/hi.txt"])
        assert (ran.code, ran.stdout) == (0, "hi\n")
        assert box.files.read("/tmp/hi.txt") == b"hi\n"
        box.files.write("/tmp/note.txt", "a note")
        assert "note.txt" in [entry.name for entry in box.files.list("/tmp")]
        kinds = [type(e).__struct_config__.tag for e in box.trace().entries]
        assert kinds.count("acted") >= 4 and "executed" in kinds and "file_written" in kinds
        box_id = box.id
    picture = Image.open(io.BytesIO(png))
    assert (picture.format, picture.size) == ("PNG", (1280, 800))
    assert _state(holmd, box_id) == "gone"


def test_a_kept_box_stays_and_a_fork_does_it_again(holmd: Holmd) -> None:
    from holm import Box

    with Box.create(keep=True, url=holmd.url, token=holmd.token) as box:
        box.open(PAGE)
        box.click(100, 200)
        with box.fork(keep=False) as forked:
            assert forked.id != box.id
            assert forked.page.evaluate("document.title") == "clicked 100,200"
        assert _state(holmd, forked.id) == "gone"
    assert _state(holmd, box.id) == "ready"
    box.remove()
    assert _state(holmd, box.id) == "gone"


async def test_an_async_box_likewise(holmd: Holmd, monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in holmd.client_env.items():
        monkeypatch.setenv(name, value)
    from holm import AsyncBox

    async with await AsyncBox.create() as box:
        await box.open(PAGE)
        await box.click(640, 400)
        png = await box.screenshot()
        assert await box.page.evaluate("document.title") == "clicked 640,400"
        async with await box.fork() as forked:
            assert await forked.page.evaluate("document.title") == "clicked 640,400"
        # The fork shared its source's connection, and left it open.
        assert (await box.exec(["true"])).code == 0
        box_id = box.id
    assert Image.open(io.BytesIO(png)).size == (1280, 800)
    assert _state(holmd, box_id) == "gone" and _state(holmd, forked.id) == "gone"


def test_importing_holm_loads_no_client() -> None:
    """The in-box agent imports `holm`: `Box`, `AsyncBox` and `Computer` are loaded when
    first asked for, not before."""
    script = (
        "import sys, holm\n"
        "print(' '.join(sorted(m for m in sys.modules if m.startswith('holm'))))\n"
        "holm.Box, holm.AsyncBox, holm.Computer\n"
        "print(' '.join(sorted(m for m in sys.modules if m.startswith('holm.'))))"
    )
    first, then = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert first == "holm"
    assert {"holm.box", "holm.client", "holm.computer"} <= set(then.split())
