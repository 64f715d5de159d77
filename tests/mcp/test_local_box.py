"""One real local box (bubblewrap, Xvfb) driven through /mcp: a click, and a screenshot
that decodes to a PNG of the box's size; the click is in the trace as an `acted` step."""

from __future__ import annotations

import base64
import io
import shutil
import tempfile
from pathlib import Path

import mcp_types as types
import pytest
from mcp_kit import call, holmd, json_of, mcp_session
from PIL import Image

from holm.adapters.local.runtime import LocalRuntime
from holm.config import server_id_of

pytestmark = pytest.mark.desktop

# The X displays of this suite (the machine is shared with other test runs).
DISPLAY_BASE = 460
DISPLAY_COUNT = 10


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
            finally:
                await call(s, "remove_box", box=b)
    finally:
        await runtime.close()
        cleaner = LocalRuntime(state_dir / "boxes", "cleaner", display_base=DISPLAY_BASE)
        for left in await cleaner.list():
            await cleaner.delete(left.box_id)
        await cleaner.close()
        shutil.rmtree(state_dir, ignore_errors=True)
