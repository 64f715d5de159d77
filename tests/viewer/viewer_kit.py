"""What the viewer tests share: a TCP port that bridges to the viewer WebSocket (so a
plain RFB client, vncdotool, goes through holmd's relay exactly as noVNC does), and a
page whose title counts the clicks and keys it receives."""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import aiohttp
import yarl
from http_kit import Client, ok_json

# A page that shows in its title (and so in its window's title) the clicks and keys it got.
PAGE_HTML = (
    "<title>c0k</title>"
    "<body style='margin:0;height:100vh;background:#fff'>"
    "<script>var c=0,k='';"
    "function u(){document.title='c'+c+'k'+k}"
    "document.onmousedown=function(){c++;u()};"
    "document.onkeydown=function(e){k+=e.key;u()};"
    "</script></body>"
)
PAGE_URL = "data:text/html," + quote(PAGE_HTML)


@contextlib.asynccontextmanager
async def bridge(client: Client, path: str) -> AsyncIterator[int]:
    """A port on 127.0.0.1 whose every connection is relayed to the WebSocket at `path`
    of the test server (binary frames), as websockify would do the other way."""
    pumps: set[asyncio.Task[None]] = set()

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            ws = await client.ws_connect(path, protocols=("binary",))
        except aiohttp.WSServerHandshakeError:
            writer.close()
            return

        async def up() -> None:
            while data := await reader.read(65536):
                await ws.send_bytes(data)
            await ws.close()

        async def down() -> None:
            async for msg in ws:
                if msg.type == aiohttp.WSMsgType.BINARY:
                    writer.write(msg.data)
                    await writer.drain()
            writer.close()

        tasks = [asyncio.create_task(up()), asyncio.create_task(down())]
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        for task in tasks:
            task.cancel()
        await ws.close()
        writer.close()

    def track(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.create_task(serve(reader, writer))
        pumps.add(task)
        task.add_done_callback(pumps.discard)

    server = await asyncio.start_server(track, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield port
    finally:
        server.close()
        for task in list(pumps):
            task.cancel()
        await server.wait_closed()


def vnc_do(port: int, steps: list[tuple[str, tuple[Any, ...]]]) -> None:
    """Connect vncdotool to `port` (blocking: call it in a thread), do `steps` (method
    name and arguments of vncdotool's client), and disconnect."""
    from vncdotool import api

    client = api.connect(f"127.0.0.1::{port}", timeout=30)
    try:
        for name, args in steps:
            getattr(client, name)(*args)
    finally:
        client.disconnect()


# What a viewer does to the page: a click and two keys (the page counts them in its title).
CLICK_AND_TYPE: list[tuple[str, tuple[Any, ...]]] = [
    ("mouseMove", (640, 450)),
    ("mousePress", (1,)),
    ("keyPress", ("x",)),
    ("keyPress", ("y",)),
]


async def ticket(client: Client, box: str, mode: str = "view", screen: int = 0) -> Any:
    path = f"/v1/boxes/{box}/screens/{screen}/viewer/ticket"
    return await ok_json(await client.post(path, json={"mode": mode}))


def socket_path(box: str, value: str, mode: str = "view", screen: int = 0) -> str:
    return f"/v1/boxes/{box}/screens/{screen}/viewer/socket?ticket={value}&mode={mode}"


async def page_title(client: Client, box: str) -> str:
    """The page's title as its Chromium window shows it (class `Chromium` on X11,
    app id `chromium` on Wayland)."""
    windows = (await ok_json(await client.get(f"/v1/boxes/{box}/screens/0/windows")))["windows"]
    titles = [w.get("title", "") for w in windows if w.get("class", "").lower() == "chromium"]
    return next((t for t in titles if re.match(r"c\d+k", t)), "")


async def until_title(client: Client, box: str, wanted: str, tries: int = 100) -> str:
    title = ""
    for _ in range(tries):
        title = await page_title(client, box)
        if title.startswith(wanted):
            return title
        await asyncio.sleep(0.1)
    return title


async def open_page(client: Client, box: str) -> None:
    body = {"actions": [{"type": "open_url", "url": PAGE_URL}]}
    await ok_json(await client.post(f"/v1/boxes/{box}/screens/0/actions", json=body))
    assert (await until_title(client, box, "c0k")).startswith("c0k")


async def view_input_is_dropped_and_control_input_arrives(
    client: Client, box: str, shot: Path
) -> None:
    """A view viewer sees the screen (a frame passes) and its clicks and keys are dropped;
    a control viewer's arrive."""
    await open_page(client, box)
    view = await ticket(client, box, "view")
    async with bridge(client, socket_path(box, view["ticket"], "view")) as port:
        await asyncio.to_thread(vnc_do, port, [*CLICK_AND_TYPE, ("captureScreen", (str(shot),))])
    assert shot.stat().st_size > 0
    control = await ticket(client, box, "control")
    async with bridge(client, socket_path(box, control["ticket"], "control")) as port:
        await asyncio.to_thread(vnc_do, port, CLICK_AND_TYPE)
    # Had the view viewer's input arrived, the page would count two clicks and xyxy.
    assert await until_title(client, box, "c1kxy") == "c1kxy - Chromium"


@contextlib.asynccontextmanager
async def novnc_open(client: Client, box: str, profile: Path) -> AsyncIterator[None]:
    """Headless Chromium opens the URL a control ticket gives: noVNC loads from holmd,
    connects to the socket with the ticket, and shows the 1280x800 screen; the body runs
    while it is connected."""
    from kits.chromium import CHROMIUM, Chromium

    assert CHROMIUM.exists(), "needs Debian's chromium (scripts/setup)"
    made = await ticket(client, box, "control")
    url = str(client.make_url(yarl.URL(made["url"]).path_qs))
    async with Chromium(profile) as chromium:
        await chromium.open(url)
        width = None
        # Bounded polling (Chromium on a busy machine can take a while), not a timing.
        for _ in range(600):
            width = await chromium.evaluate(
                "(document.querySelector('#noVNC_container canvas') || {}).width || null"
            )
            if width == 1280:
                break
            await asyncio.sleep(0.1)
        assert width == 1280
        yield
