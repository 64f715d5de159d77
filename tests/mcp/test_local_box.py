"""One real local box (bubblewrap, Xvfb, Chromium) driven through /mcp: a click, and a
screenshot that decodes to a PNG of the box's size; the click is in the trace as an `acted`
step. Then the page tools on a form: run alone they are not recorded, and a `batch` with a
page step is."""

from __future__ import annotations

import base64
import io
import shutil
import tempfile
from pathlib import Path
from urllib.parse import quote

import mcp_types as types
import pytest
from mcp import ClientSession
from mcp_kit import call, holmd, json_of, mcp_session
from PIL import Image

from holm.adapters.local.runtime import LocalRuntime
from holm.config import server_id_of

FORM = "data:text/html," + quote(
    "<title>Form</title><h1>Sign up</h1><label for=n>Name</label><input id=n>"
    "<select aria-label=Colour><option>Red</option><option>Green</option></select>"
    "<button onclick=\"document.body.insertAdjacentHTML('beforeend', '<h2>Details</h2>')\">"
    "Continue</button>"
)

pytestmark = pytest.mark.desktop

# The X displays of this suite (the machine is shared with other test runs).
DISPLAY_BASE = 460
DISPLAY_COUNT = 10


async def page_tools(s: ClientSession, b: str) -> None:
    await call(s, "open_url", box=b, url=FORM, label="form")
    recorded = len(await trace_lines(s, b))
    filled = json_of(await call(s, "fill_field", box=b, query="Name", text="Ada", tab="form"))
    assert (filled["element"]["name"], filled["element"]["value"]) == ("Name", "Ada")
    chosen = json_of(await call(s, "dropdown", box=b, query="Colour", options=["Green"]))
    assert chosen["options"] == ["Green"]
    clicked = json_of(await call(s, "click_element", box=b, query="button Continue"))
    assert [c["name"] for c in clicked["changed"]] == ["Details"]
    found = json_of(await call(s, "find", box=b, query="Details"))
    assert found["elements"][0]["role"] == "heading"
    snap = json_of(await call(s, "snapshot", box=b))
    assert ("textbox", "Name", "Ada") in [
        (c["role"], c["name"], c.get("value")) for c in snap["controls"]
    ]
    read = json_of(await call(s, "read_page", box=b))
    assert "# Sign up" in read["text"] and "## Details" in read["text"]
    title = json_of(await call(s, "evaluate", box=b, expression="document.title", tab="form"))
    assert title["value"] == "Form"
    # Alone, page tools leave nothing in the trace; in a batch, a page step is an `acted`.
    assert len(await trace_lines(s, b)) == recorded
    step = {"type": "on_page", "what": {"op": "fill", "query": "Name", "text": "Bo"}}
    await call(s, "batch", box=b, actions=[step])
    [added] = (await trace_lines(s, b))[recorded:]
    assert 'on_page fill "Name"' in added
    refused = await s.call_tool("click_element", {"box": b, "query": "Nowhere at all"})
    assert refused.is_error and "Nowhere at all" in str(refused.content)


async def trace_lines(s: ClientSession, b: str) -> list[str]:
    """The lines of the box's trace (`SEQ ACTOR WHAT`, docs/trace.md) but its frames, which
    the watcher adds when it likes, and the line that says how to read on."""
    lines = (await call(s, "trace", box=b)).content[0]
    assert isinstance(lines, types.TextContent)
    return [
        line.split(None, 2)[2]
        for line in lines.text.splitlines()
        if not line.startswith("(") and "the screen changed" not in line
    ]


async def test_click_and_screenshot_on_a_local_box() -> None:
    # Short: the boxes' Unix sockets live below it.
    state_dir = Path(tempfile.mkdtemp(prefix="hm-", dir="/tmp"))
    runtime = LocalRuntime(
        state_dir / "boxes",
        server_id_of(state_dir),
        display_base=DISPLAY_BASE,
        display_count=DISPLAY_COUNT,
    )
    try:
        async with holmd(state_dir, runtime) as url, mcp_session(url) as s:
            box = json_of(
                await call(s, "launch_box", spec={"desktop": {"width": 800, "height": 600}})
            )
            b = box["id"]
            try:
                clicked = json_of(await call(s, "click", box=b, at={"x": 400, "y": 300}))
                assert clicked["at"] == {"x": 400, "y": 300}
                shot = await call(s, "screenshot", box=b)
                image = shot.content[1]
                assert isinstance(image, types.ImageContent)
                png = Image.open(io.BytesIO(base64.b64decode(image.data)))
                assert (png.format, png.size) == ("PNG", (800, 600))
                lines = (await call(s, "trace", box=b)).content[0]
                assert isinstance(lines, types.TextContent)
                assert "click" in lines.text
                await page_tools(s, b)
            finally:
                await call(s, "remove_box", box=b)
    finally:
        await runtime.close()
        cleaner = LocalRuntime(state_dir / "boxes", "cleaner", display_base=DISPLAY_BASE)
        for left in await cleaner.list():
            await cleaner.delete(left.box_id)
        await cleaner.close()
        shutil.rmtree(state_dir, ignore_errors=True)
