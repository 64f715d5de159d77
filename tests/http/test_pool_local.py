"""The warm pool on real local boxes (bubblewrap, Xvfb, Chromium), through holmd's HTTP
API: a create takes a spare and is `ready` in its answer with the trace a cold box of the
same spec gets; two boxes taken from the pool share no files, no cookies and no clipboard;
no spare outlives the server, and a spare left by a server that died is removed, never
adopted. Spares of one box each (HOLM_POOL=default:2) keep the machine's load small."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
import pytest_asyncio
from http_kit import Client, engine_of, ok_json, trace_entries
from local_kit import LocalServer, client_of, started

from holm.adapters.local.runtime import LocalRuntime
from holm.config import parse_pool, server_id_of
from holm.engine.journal import now_ms
from holm.wire.spec import Placement, Spec

pytestmark = [pytest.mark.desktop, pytest.mark.asyncio(loop_scope="module")]

DISPLAY_BASE = 500
# The longest the pool may take to boot its two spares here.
FILL_WAIT_S = 120.0
# The placement a spare is not booted with, so that a box of the same spec starts cold; it
# changes nothing on a box's path until the box is stopped.
COLD = {"placement": {"persistent": True}}
# What the traces of a pooled box and a cold box are compared after.
STEPS: list[tuple[str, str, dict[str, Any] | None]] = [
    ("POST", "exec", {"argv": ["sh", "-c", "echo $HOME; id -un; cat ~/notes 2>&1"]}),
    ("PUT", "screens/0/clipboard", {"text": "one"}),
    ("GET", "screens/0/clipboard", None),
    ("POST", "screens/0/actions", {"actions": [{"type": "move", "to": {"x": 9, "y": 9}}]}),
]
# What differs between two boxes' entries by nature: when, in what order, a batch's random
# ID, the screen at a moment (`frame` entries, written whenever the watcher looks, and a
# step's `frame`).
VARYING = ("at_ms", "seq", "batch", "frame")


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def server() -> AsyncIterator[LocalServer]:
    async with started(DISPLAY_BASE, events_delay_ms=0, pool=parse_pool("default:2")) as running:
        yield running


async def spares_up(client: Client) -> list[str]:
    """The spares once the pool is full again."""
    pool = engine_of(client).pool
    assert pool is not None
    # Bounded; a pool whose spares do not start ends its wait and says why here.
    await asyncio.wait_for(pool.filled(), FILL_WAIT_S)
    failing = [view for view in pool.status() if view.failures]
    assert not failing, failing
    return pool.spares(Spec())


async def create(client: Client, body: dict[str, Any]) -> dict[str, Any]:
    created: dict[str, Any] = await ok_json(await client.post("/v1/boxes", json=body))
    return created


async def do_steps(client: Client, box: str) -> None:
    for method, path, body in STEPS:
        await ok_json(await client.request(method, f"/v1/boxes/{box}/{path}", json=body))


def comparable(entries: list[dict[str, Any]], box: str) -> list[dict[str, Any]]:
    """The entries after `box_created` but what differs by nature, with the box's ID as a
    word (it is in the viewer's and DevTools' socket paths)."""
    return [
        {key: _box_as_word(value, box) for key, value in e.items() if key not in VARYING}
        for e in entries[1:]
        if e["kind"] != "frame"
    ]


def _box_as_word(value: Any, box: str) -> Any:
    if isinstance(value, str):
        return value.replace(box, "BOX")
    if isinstance(value, list):
        return [_box_as_word(v, box) for v in value]
    return value


async def exec_in(client: Client, box: str, script: str) -> dict[str, Any]:
    run: dict[str, Any] = await ok_json(
        await client.post(f"/v1/boxes/{box}/exec", json={"argv": ["sh", "-c", script]})
    )
    return run


async def devtools_of(client: Client, box: str) -> str:
    """Where the box's DevTools socket is, as its `box_ready` entry says."""
    (ready,) = [e for e in await trace_entries(client, box) if e["kind"] == "box_ready"]
    return str(ready["devtools_url"])


async def devtools(devtools_url: str, method: str, params: dict[str, Any]) -> dict[str, Any]:
    """One DevTools command to the box's browser, through its socket on the host (as
    holmd's relay reaches it). Chromium may still be opening its DevTools port when the box
    is ready: a bounded number of tries."""
    socket = devtools_url.removeprefix("unix:")
    for _ in range(50):
        try:
            async with aiohttp.ClientSession(
                connector=aiohttp.UnixConnector(path=socket)
            ) as session:
                async with session.get("http://localhost/json/version") as version:
                    target = (await version.json())["webSocketDebuggerUrl"]
                async with session.ws_connect(target) as ws:
                    await ws.send_json({"id": 1, "method": method, "params": params})
                    answer = await ws.receive_json()
                    result: dict[str, Any] = answer["result"]
                    return result
        except (aiohttp.ClientError, KeyError):
            await asyncio.sleep(0.1)
    raise AssertionError(f"the box's DevTools at {socket} did not answer")


async def cookies(devtools_url: str) -> list[tuple[str, str]]:
    got = await devtools(devtools_url, "Storage.getCookies", {})
    return [(c["name"], c["value"]) for c in got["cookies"]]


async def test_a_create_takes_a_spare_ready_at_once_with_the_trace_of_a_cold_box(
    server: LocalServer,
) -> None:
    client = client_of(server)
    spares = await spares_up(client)
    assert len(spares) == 2
    asked = now_ms()
    warm = await create(client, {})
    assert warm["id"] in spares and warm["state"] == "ready"
    cold = await create(client, COLD)
    assert cold["id"] not in spares and cold["state"] == "ready"
    for box in (warm, cold):
        await do_steps(client, box["id"])
    warm_trace = await trace_entries(client, warm["id"])
    cold_trace = await trace_entries(client, cold["id"])
    assert warm_trace[0]["kind"] == cold_trace[0]["kind"] == "box_created"
    assert comparable(warm_trace, warm["id"]) == comparable(cold_trace, cold["id"])
    assert [e["kind"] for e in comparable(warm_trace, warm["id"])] == [
        "box_ready",
        "executed",
        "clipboard_set",
        "clipboard_read",
        "acted",
    ]
    # Nothing of the spare's boot is in the trace: it starts when the box was asked for.
    assert warm_trace[0]["at_ms"] >= asked
    for box in (warm, cold):
        await client.delete(f"/v1/boxes/{box['id']}", headers={"x-holm-confirm-delete": "true"})


async def test_two_boxes_from_the_pool_share_no_files_cookies_or_clipboard(
    server: LocalServer,
) -> None:
    client = client_of(server)
    spares = await spares_up(client)
    one, two = [await create(client, {}) for _ in range(2)]
    assert {one["id"], two["id"]} == set(spares)
    await exec_in(client, one["id"], "echo one > ~/notes; echo one > /tmp/notes")
    await client.put(f"/v1/boxes/{one['id']}/screens/0/clipboard", json={"text": "one's"})
    cookie = {"name": "who", "value": "one", "domain": "pool.test", "path": "/"}
    one_devtools, two_devtools = [await devtools_of(client, b["id"]) for b in (one, two)]
    await devtools(one_devtools, "Storage.setCookies", {"cookies": [cookie]})
    assert ("who", "one") in await cookies(one_devtools)

    seen = await exec_in(client, two["id"], "cat ~/notes /tmp/notes 2>&1")
    assert seen["code"] != 0 and "one" not in seen["stdout"]
    clip = await ok_json(await client.get(f"/v1/boxes/{two['id']}/screens/0/clipboard"))
    assert clip.get("text", "") != "one's"
    assert ("who", "one") not in await cookies(two_devtools)
    for box in (one, two):
        await client.delete(f"/v1/boxes/{box['id']}", headers={"x-holm-confirm-delete": "true"})


async def test_no_spare_outlives_the_server_and_none_left_behind_is_adopted(
    server: LocalServer,
) -> None:
    await spares_up(client_of(server))
    await server.stop()
    boxes = server.state_dir / "boxes"
    looking = LocalRuntime(boxes, "looking", display_base=DISPLAY_BASE)
    assert [b for b in await looking.list() if b.spare] == []
    # A spare of a server that died: its record says this server, and spare.
    dead = LocalRuntime(
        boxes, server_id_of(server.state_dir), display_base=DISPLAY_BASE, chromium=False
    )
    await dead.create_spare("box_left", Spec(), Placement(runtime="local"))
    await dead.close()
    client = await server.start(pool={})
    listed = await ok_json(await client.get("/v1/boxes"))
    assert listed["boxes"] == []
    assert "box_left" not in [b.box_id for b in await looking.list()]
    missing = await client.get("/v1/boxes/box_left/trace")
    assert missing.status == 404
    await looking.close()
