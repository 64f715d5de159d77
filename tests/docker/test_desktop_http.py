"""The desktop's recording and native widgets on a real docker box, through holmd's HTTP
API: three seconds of an animated page recorded in the box, fetched through the files
route and read by the host's ffprobe; a Chromium form's field found on the box's
accessibility bus and filled, the frame showing it. One box (the default spec, whose image
the session builds anyway: `video` and `accessibility` are among its features) serves both
tests."""

from __future__ import annotations

import asyncio
import base64
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import docker
import pytest
import pytest_asyncio
from aiohttp.test_utils import TestClient, TestServer
from http_kit import Client, app_config, ok_json, shot, shot_once_changed
from PIL import ImageChops
from video_kit import ANIMATED, frame_at, probe

from holm.adapters.docker.runtime import DockerRuntime
from holm.events import MemoryStore
from holm.http.app import create_app
from holm.wire.api import ImageInfo

pytestmark = [pytest.mark.docker, pytest.mark.asyncio(loop_scope="module")]

FORM = (
    "data:text/html,<title>form</title><form>"
    "<label>Full name <input name=n></label><br>"
    "<label for=s>Street</label><input id=s></form>"
)
RECORD_FOR_S = 3.0


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def client(
    engine: docker.DockerClient, boxes_dir: Path, server_id: str, session_image: ImageInfo
) -> AsyncIterator[Client]:
    """holmd's app over the docker runtime, with a store in memory."""
    runtime = DockerRuntime(boxes_dir, server_id, client=docker.from_env(timeout=600))
    config = app_config(boxes_dir.parent, default_runtime="docker")
    test_client: Client = TestClient(
        TestServer(create_app(config, runtimes={"docker": runtime}, store=MemoryStore()))
    )
    await test_client.start_server()
    try:
        yield test_client
    finally:
        await test_client.close()
        for box in await runtime.list():
            if box.server_id == server_id:
                await runtime.delete(box.box_id)
        await runtime.close()


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def box(client: Client) -> str:
    created = await ok_json(await client.post("/v1/boxes", json={}))
    return str(created["id"])


async def steps(client: Client, box: str, *actions: dict[str, Any]) -> list[Any]:
    body = {"actions": list(actions)}
    done = await ok_json(await client.post(f"/v1/boxes/{box}/screens/0/actions", json=body))
    assert done["stopped_at"] is None, done
    return list(done["results"])


async def test_three_seconds_recorded_in_the_box_are_an_mp4_of_three_seconds_at_its_size(
    client: Client, box: str, tmp_path: Path
) -> None:
    await steps(client, box, {"type": "open_url", "url": ANIMATED})
    url = f"/v1/boxes/{box}/screens/0/recording"

    started = await ok_json(await client.post(url, json={}))
    await asyncio.sleep(RECORD_FOR_S)
    stopped = await ok_json(await client.delete(url))

    assert started["recording"] and not stopped["recording"]
    assert stopped["path"] == started["path"] and stopped["path"].endswith(".mp4")
    got = await ok_json(
        await client.get(f"/v1/boxes/{box}/files", params={"path": stopped["path"]})
    )
    video = tmp_path / "recorded.mp4"
    video.write_bytes(base64.b64decode(got["contents_base64"]))
    found = probe(video)
    assert "mp4" in found["format_name"] and found["codec_name"] == "h264"
    assert (found["width"], found["height"]) == (1280, 800)
    # About 3 s: the time between the start's answer and the stop, as the box measured it.
    span_s = (stopped["stopped_at_ms"] - stopped["started_at_ms"]) / 1000
    assert span_s >= RECORD_FOR_S
    assert abs(found["duration"] - span_s) < 1.0, (found, span_s)
    # The page moved: the recording holds different pictures of it.
    first, last = (frame_at(video, s) for s in (0.5, found["duration"] - 0.5))
    assert ImageChops.difference(first, last).getbbox() is not None


async def test_a_page_field_found_on_the_boxs_bus_is_filled_and_the_frame_shows_it(
    client: Client, box: str
) -> None:
    await steps(client, box, {"type": "open_url", "url": FORM})
    street = {"query": "Street", "role": "text", "app": "chromium"}
    [found] = await steps(client, box, {"type": "on_node", "what": {"op": "find", "node": street}})
    [field, *_] = found["value"]["nodes"]
    assert (field["role"], field["name"], field["value"]) == ("entry", "Street", "")
    before = await shot(client, box, field["bounds"])

    [done] = await steps(
        client,
        box,
        {"type": "on_node", "what": {"op": "set", "node": street, "value": "Elm Row"}},
    )

    assert done["ok"] and done["value"]["node"]["value"] == "Elm Row"
    # The frame shows it once Chromium has drawn it.
    after = await shot_once_changed(client, box, field["bounds"], before)
    assert ImageChops.difference(before, after).getbbox() is not None
    [read] = await steps(
        client,
        box,
        {"type": "evaluate", "what": {"expression": "document.getElementById('s').value"}},
    )
    assert read["value"]["value"] == "Elm Row"
