"""The viewer on a Wayland box end to end, through holmd: a control ticket's clicks and keys
reach the page through the relay and the screen's wayvnc (a view ticket's are dropped),
and noVNC in a browser shows the screen."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
import yarl
from http_kit import Client, ok_json
from local_kit import LocalServer, client_of, started
from viewer_kit import PAGE_URL, bridge, vnc_do

pytestmark = [pytest.mark.desktop, pytest.mark.asyncio(loop_scope="module")]


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def server() -> AsyncIterator[LocalServer]:
    # vncdotool's reactor is stopped once, after every module (tests/conftest.py).
    async with started(events_delay_ms=0) as running:
        yield running


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def box(server: LocalServer) -> str:
    spec = {"desktop": {"server": "wayland", "features": ["wide_fonts"]}}
    created = await ok_json(await client_of(server).post("/v1/boxes", json={"spec": spec}))
    return str(created["id"])


async def ticket(client: Client, box: str, mode: str) -> Any:
    path = f"/v1/boxes/{box}/screens/0/viewer/ticket"
    return await ok_json(await client.post(path, json={"mode": mode}))


def socket_path(box: str, value: str, mode: str) -> str:
    return f"/v1/boxes/{box}/screens/0/viewer/socket?ticket={value}&mode={mode}"


async def until_title(client: Client, box: str, wanted: str) -> str:
    title = ""
    for _ in range(100):
        windows = (await ok_json(await client.get(f"/v1/boxes/{box}/screens/0/windows")))["windows"]
        titles = [w.get("title", "") for w in windows if w.get("class") == "chromium"]
        title = next((t for t in titles if re.match(r"c\d+k", t)), "")
        if title.startswith(wanted):
            return title
        await asyncio.sleep(0.1)
    return title


CLICK_AND_TYPE = [
    ("mouseMove", (640, 450)),
    ("mousePress", (1,)),
    ("keyPress", ("x",)),
    ("keyPress", ("y",)),
]


async def test_view_input_is_dropped_and_control_input_arrives(
    server: LocalServer, box: str, tmp_path: Path
) -> None:
    client = client_of(server)
    body = {"actions": [{"type": "open_url", "url": PAGE_URL}]}
    await ok_json(await client.post(f"/v1/boxes/{box}/screens/0/actions", json=body))
    assert (await until_title(client, box, "c0k")).startswith("c0k")
    shot = tmp_path / "seen.png"
    view = await ticket(client, box, "view")
    async with bridge(client, socket_path(box, view["ticket"], "view")) as port:
        await asyncio.to_thread(vnc_do, port, [*CLICK_AND_TYPE, ("captureScreen", (str(shot),))])
    assert shot.stat().st_size > 0
    control = await ticket(client, box, "control")
    async with bridge(client, socket_path(box, control["ticket"], "control")) as port:
        await asyncio.to_thread(vnc_do, port, CLICK_AND_TYPE)
    # Had the view viewer's input arrived, the page would count two clicks and xyxy.
    assert await until_title(client, box, "c1kxy") == "c1kxy - Chromium"


async def test_novnc_in_a_browser_shows_the_wayland_screen(
    server: LocalServer, box: str, tmp_path: Path
) -> None:
    from kits.chromium import CHROMIUM, Chromium

    assert CHROMIUM.exists(), "needs Debian's chromium (scripts/setup)"
    client = client_of(server)
    made = await ticket(client, box, "control")
    url = str(client.make_url(yarl.URL(made["url"]).path_qs))
    async with Chromium(tmp_path / "chromium") as chromium:
        await chromium.open(url)
        width = None
        for _ in range(600):
            width = await chromium.evaluate(
                "(document.querySelector('#noVNC_container canvas') || {}).width || null"
            )
            if width == 1280:
                break
            await asyncio.sleep(0.1)
        assert width == 1280
