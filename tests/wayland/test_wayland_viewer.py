"""The viewer on a Wayland box end to end, through holmd: a control ticket's clicks and keys
reach the page through the relay and the screen's wayvnc (a view ticket's are dropped),
and noVNC in a browser shows the screen: the X11 viewer's tests (tests/viewer/
test_viewer_local.py), through viewer_kit, on a Wayland box."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
from http_kit import ok_json
from local_kit import LocalServer, client_of, started
from viewer_kit import novnc_open, view_input_is_dropped_and_control_input_arrives

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


async def test_view_input_is_dropped_and_control_input_arrives(
    server: LocalServer, box: str, tmp_path: Path
) -> None:
    await view_input_is_dropped_and_control_input_arrives(
        client_of(server), box, tmp_path / "seen.png"
    )


async def test_novnc_in_a_browser_shows_the_wayland_screen(
    server: LocalServer, box: str, tmp_path: Path
) -> None:
    client = client_of(server)
    async with novnc_open(client, box, tmp_path / "chromium"):
        counted = await ok_json(await client.get(f"/v1/boxes/{box}/screens/0/viewers"))
        assert (counted["watching"], counted["driving"]) == (1, 1)
