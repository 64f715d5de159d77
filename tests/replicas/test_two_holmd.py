"""Two real holmd on one PostgreSQL and one SeaweedFS, each with its own in-memory runtime
(so a box runs on the holmd that made it, and every request for it through the other is
sent there), A with a warm pool and B without (docs/scale.md#replicas):

- an MCP session of the `mcp` SDK's client on B drives a box A runs: its tools are sent
  on to A, recorded in the box's one trace, and refused for a workspace that does not own
  it as they are on A; `list_boxes` through B lists A's boxes too;
- each holmd keeps its own spares: `GET /v1/runtimes/{name}` shows the pool of the holmd
  that answers, and names it; a create through B, which has no pool, works (cold), and
  is driven through A; a create through A is A's;
- a request sent on to a holmd that does not run the box (its sender's idea of the owner
  is old) is answered 421, naming the holmd that does;
- a body over what a forwarding holmd reads first streams through to the owner whole,
  with its length or chunked."""

from __future__ import annotations

import asyncio
import json
import secrets
from base64 import b64decode, b64encode
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import asyncpg
from kits.holmd import TOKEN, Holmd
from mcp_kit import call, json_of, mcp_session
from replica_kit import ok, whole_trace

from holm.config import server_id_of

# The longest A's pool may take to start its one spare of the in-memory runtime.
FILL_WAIT_S = 30.0


async def test_an_mcp_session_on_one_holmd_drives_a_box_another_runs(
    pair: tuple[Holmd, Holmd], http: aiohttp.ClientSession
) -> None:
    a, b = pair
    box = (await ok(await http.post(f"{a.url}/v1/boxes", json={})))["id"]
    async with mcp_session(b.url, token=TOKEN) as session:
        listed = json_of(await call(session, "list_boxes"))
        assert box in [found["id"] for found in listed["boxes"]]
        status = json_of(await call(session, "box_status", box=box))
        assert status["id"] == box and status["state"] == "ready"
        await call(session, "click", box=box, at={"x": 31, "y": 41})
        await call(session, "type_text", box=box, text="across")
        shot = await call(session, "screenshot", box=box)
        assert shot.content[-1].type == "image"
        # A box no holmd has is as unknown through B as anywhere.
        missing = await session.call_tool("box_status", {"box": "box_nothere"})
        assert missing.is_error
        # A tool that makes a box through B makes it on B.
        made = json_of(await call(session, "launch_box"))
    # The calls are in the box's one trace, recorded by A, in the order they were made.
    trace = await whole_trace(http, b.url, box)
    assert [item["seq"] for item in trace] == list(range(len(trace)))
    acted = [item["action"] for item in trace if item["kind"] == "acted"]
    assert [step["type"] for step in acted] == ["click", "type"]
    assert acted[0]["at"] == {"x": 31, "y": 41} and acted[1]["text"] == "across"
    assert await lease_of(pair, made["id"]) == server_id_of(b.state_dir)
    assert await lease_of(pair, box) == server_id_of(a.state_dir)

    # A workspace's key sees its own boxes only, through B as through A.
    name = "mcp-" + secrets.token_hex(4)
    await ok(await http.post(f"{a.url}/v1/workspaces", json={"name": name}))
    key = (await ok(await http.post(f"{a.url}/v1/keys", json={"workspace": name})))["key"]
    async with mcp_session(b.url, token=key) as session:
        refused = await session.call_tool("box_status", {"box": box})
        assert refused.is_error
        said = refused.content[0]
        assert said.type == "text" and said.text.startswith("not_found")
        assert json_of(await call(session, "list_boxes"))["boxes"] == []

    for server, made_box in ((a, box), (b, made["id"])):
        await ok(
            await http.delete(
                f"{server.url}/v1/boxes/{made_box}", headers={"x-holm-confirm-delete": "true"}
            )
        )


async def lease_of(pair: tuple[Holmd, Holmd], box: str) -> str | None:
    """The holmd whose lease `box` is (the id GET /v1/runtimes names as `replica`)."""
    conn = await asyncpg.connect(pair[0].settings["HOLM_DATABASE_URL"])
    try:
        owner = await conn.fetchval("SELECT owner FROM holm_box_leases WHERE box = $1", box)
    finally:
        await conn.close()
    return None if owner is None else str(owner)


async def runtime_view(http: aiohttp.ClientSession, server: Holmd) -> Any:
    return await ok(await http.get(f"{server.url}/v1/runtimes/memory"))


async def test_each_holmd_keeps_its_own_pool_and_a_create_through_either_works(
    pair: tuple[Holmd, Holmd], http: aiohttp.ClientSession
) -> None:
    a, b = pair
    # A's spare, once it is up; the view names the holmd whose pool it is.
    through_a = await pool_ready(http, a)
    assert through_a["replica"] == server_id_of(a.state_dir)
    assert through_a["pool"][0]["count"] == 1 and through_a["pool"][0]["ready"] == 1
    through_b = await runtime_view(http, b)
    assert through_b["replica"] == server_id_of(b.state_dir)
    assert "pool" not in through_b

    # Through B, which keeps no spares: a cold box of B's, driven through A.
    cold = await ok(await http.post(f"{b.url}/v1/boxes", json={}))
    assert cold["state"] == "ready"
    assert await lease_of(pair, cold["id"]) == server_id_of(b.state_dir)
    click = {"actions": [{"type": "click", "at": {"x": 5, "y": 6}}]}
    done = await ok(await http.post(f"{a.url}/v1/boxes/{cold['id']}/screens/0/actions", json=click))
    assert [step["ok"] for step in done["results"]] == [True]

    # Through A, which keeps the spare: a box of A's, and A's pool fills up again (the
    # pool taking a spare is tests/http/test_pool_local.py's; here, that it is A's).
    warm = await ok(await http.post(f"{a.url}/v1/boxes", json={}))
    assert warm["state"] == "ready"
    assert await lease_of(pair, warm["id"]) == server_id_of(a.state_dir)
    await pool_ready(http, a)
    for server, box in ((b, cold["id"]), (a, warm["id"])):
        await ok(
            await http.delete(
                f"{server.url}/v1/boxes/{box}", headers={"x-holm-confirm-delete": "true"}
            )
        )


async def pool_ready(http: aiohttp.ClientSession, server: Holmd) -> Any:
    """The runtime's view through `server` once its pool's one spare is up."""
    for _ in range(int(FILL_WAIT_S / 0.1)):
        view = await runtime_view(http, server)
        if view["pool"][0]["ready"] == 1:
            return view
        await asyncio.sleep(0.1)
    raise AssertionError(f"the pool did not fill: {view}")


async def test_a_holmd_sent_a_request_for_a_box_it_does_not_run_names_the_one_that_does(
    pair: tuple[Holmd, Holmd], http: aiohttp.ClientSession
) -> None:
    a, b = pair
    box = (await ok(await http.post(f"{b.url}/v1/boxes", json={})))["id"]
    # As a holmd whose idea of the owner is old sends it: A does not serve it, and says
    # whose it is (the sender then asks the database again and sends it there).
    sent_on = {"x-holm-forwarded-by": server_id_of(b.state_dir)}
    answer = await http.get(f"{a.url}/v1/boxes/{box}", headers=sent_on)
    assert answer.status == 421 and (await answer.json())["code"] == "denied"
    assert answer.headers["x-holm-not-mine"] == server_id_of(b.state_dir)
    # Sent by a client, it is forwarded to B as any request.
    assert (await ok(await http.get(f"{a.url}/v1/boxes/{box}")))["id"] == box
    await ok(
        await http.delete(f"{b.url}/v1/boxes/{box}", headers={"x-holm-confirm-delete": "true"})
    )


async def test_a_large_body_streams_through_to_the_holmd_that_runs_the_box(
    pair: tuple[Holmd, Holmd], http: aiohttp.ClientSession
) -> None:
    a, b = pair
    box = (await ok(await http.post(f"{b.url}/v1/boxes", json={})))["id"]
    files = f"{a.url}/v1/boxes/{box}/files"
    # Over the size a forwarding holmd reads before sending on: streamed, once with its
    # length and once chunked (no length said).
    for name, size in (("long.bin", 1_200_000), ("chunked.bin", 900_000)):
        data = secrets.token_bytes(size)
        body = json.dumps({"path": f"/tmp/{name}", "contents_base64": b64encode(data).decode()})
        sent: bytes | AsyncIterator[bytes] = body.encode()
        if name == "chunked.bin":
            sent = in_pieces(body.encode())
        headers = {"Content-Type": "application/json"}
        saved = await ok(await http.put(files, data=sent, headers=headers))
        assert saved["size"] == size
        read = await ok(await http.get(files, params={"path": f"/tmp/{name}"}))
        assert b64decode(read["contents_base64"]) == data
    await ok(
        await http.delete(f"{b.url}/v1/boxes/{box}", headers={"x-holm-confirm-delete": "true"})
    )


async def in_pieces(body: bytes) -> AsyncIterator[bytes]:
    for start in range(0, len(body), 256 * 1024):
        yield body[start : start + 256 * 1024]
