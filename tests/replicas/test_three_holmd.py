"""Three real holmd on one PostgreSQL and one SeaweedFS (store_kit), each with its own
state dir and its own local runtime, clients spread over them (docs/scale.md): a box
created through one is listed, driven, forked and viewed through the others (each request
for it is forwarded to the holmd that holds its lease); the trace of a box driven through
all three is contiguous, reads the same through each, and holds each click in the order
the clients sent them; the events feed reads the same through each."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import aiohttp
import pytest
from kits.holmd import TOKEN, Holmd
from replica_kit import fresh_database, ok, whole_feed, whole_trace
from store_kit import PgServer, S3Server
from yarl import URL

from holm.secrets_box import new_key

pytestmark = pytest.mark.desktop


@pytest.fixture(scope="module")
def cluster(pg_server: PgServer, s3_server: S3Server) -> Iterator[list[Holmd]]:
    url = asyncio.run(fresh_database(pg_server))
    prefix = secrets.token_hex(6)
    key = new_key()
    servers = [
        Holmd(
            display_base=610 + 6 * index,
            display_count=6,
            HOLM_STORAGE_BACKEND="postgres",
            HOLM_DATABASE_URL=url,
            HOLM_BLOB_URL=f"s3://holm-test/{prefix}",
            # One sealing key for all, as docs/scale.md asks (saved browser states).
            HOLM_SECRETS_KEY=key,
            **s3_server.settings,
        )
        for index in range(3)
    ]
    try:
        for server in servers:
            server.start()
        yield servers
    finally:
        for server in servers:
            server.close()


async def test_a_workspace_and_its_key_made_through_two_holmd_work_through_the_third(
    cluster: list[Holmd], http: aiohttp.ClientSession
) -> None:
    a, b, c = cluster
    name = "team-" + secrets.token_hex(4)
    made = await ok(await http.post(f"{a.url}/v1/workspaces", json={"name": name}))
    key = await ok(await http.post(f"{b.url}/v1/keys", json={"workspace": name}))
    own = {"Authorization": f"Bearer {key['key']}"}
    async with aiohttp.ClientSession(headers=own) as workspace:
        # At once through the third: it looks an unknown key up in the database.
        assert (await ok(await workspace.get(f"{c.url}/v1/boxes")))["boxes"] == []
        listed = await ok(await http.get(f"{c.url}/v1/workspaces"))
        assert made["id"] in [found["id"] for found in listed["workspaces"]]
        # Removed through one, it is refused through every one.
        await ok(await http.delete(f"{c.url}/v1/keys/{key['id']}"))
        for server in cluster:
            for _ in range(50):
                answer = await workspace.get(f"{server.url}/v1/boxes")
                if answer.status == 401:
                    break
                await asyncio.sleep(0.1)
            assert answer.status == 401


async def box_ids(http: aiohttp.ClientSession, server: Holmd) -> list[str]:
    listed = await ok(await http.get(f"{server.url}/v1/boxes"))
    return [box["id"] for box in listed["boxes"]]


async def test_a_box_made_through_one_is_listed_driven_forked_and_viewed_through_the_others(
    cluster: list[Holmd], http: aiohttp.ClientSession
) -> None:
    a, b, c = cluster
    # Made with an idempotency key: the same key through another holmd is the same box,
    # and with another body it is refused there too.
    key = {"Idempotency-Key": secrets.token_hex(8)}
    box = (await ok(await http.post(f"{a.url}/v1/boxes", json={}, headers=key)))["id"]
    again = await http.post(f"{b.url}/v1/boxes", json={}, headers=key)
    assert (await ok(again))["id"] == box and again.headers["Idempotent-Replayed"] == "true"
    other = {"placement": {"expires_after_secs": 600}}
    reused = await http.post(f"{c.url}/v1/boxes", json=other, headers=key)
    assert reused.status == 409 and (await reused.json())["code"] == "denied"
    for server in cluster:
        assert box in await box_ids(http, server)
        got = await ok(await http.get(f"{server.url}/v1/boxes/{box}"))
        assert got["id"] == box and got["state"] == "ready"

    # Driven through all three in turn: each click's x says which it was.
    sent = []
    for turn in range(6):
        server = cluster[turn % 3]
        x = 10 + turn
        sent.append(x)
        click = {"actions": [{"type": "click", "at": {"x": x, "y": 20}}]}
        done = await ok(
            await http.post(f"{server.url}/v1/boxes/{box}/screens/0/actions", json=click)
        )
        assert [step["ok"] for step in done["results"]] == [True], done

    traces = [await whole_trace(http, server.url, box) for server in cluster]
    assert traces[0] == traces[1] == traces[2]
    seqs = [item["seq"] for item in traces[0]]
    assert seqs == list(range(len(seqs)))
    clicked = [
        item["action"]["at"]["x"]
        for item in traces[0]
        if item["kind"] == "acted" and item["action"]["type"] == "click"
    ]
    assert clicked == sent

    # Forked through another: the fork is the owner's box, listed and read through all.
    fork = (await ok(await http.post(f"{c.url}/v1/boxes/{box}/fork", json={})))["box"]["id"]
    for server in cluster:
        assert fork in await box_ids(http, server)
    forked = await whole_trace(http, b.url, fork)
    assert forked[0]["kind"] == "box_created"
    assert any(item["kind"] == "forked_from" for item in forked)

    # Viewed: a ticket made through one opens the viewer's socket through another.
    ticket = await ok(
        await http.post(f"{b.url}/v1/boxes/{box}/screens/0/viewer/ticket", json={"mode": "view"})
    )
    socket = f"{c.url}/v1/boxes/{box}/screens/0/viewer/socket?ticket={ticket['ticket']}&mode=view"
    async with aiohttp.ClientSession() as anonymous:
        async with anonymous.ws_connect(socket, protocols=("binary",)) as ws:
            hello = await ws.receive(timeout=20)
            assert hello.type == aiohttp.WSMsgType.BINARY
            assert hello.data.startswith(b"RFB 003.")
        # A made-up ticket is refused through another holmd as through the owner.
        bad = socket.replace(ticket["ticket"], "not-a-ticket")
        with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
            await anonymous.ws_connect(bad, protocols=("binary",))
        assert refused.value.status in (401, 403, 404)

    # DevTools: an address made through one answers through another, JSON and socket.
    address = await ok(await http.post(f"{b.url}/v1/boxes/{box}/cdp", json={}))
    through_c = c.url + URL(address["url"]).path
    socket_c = c.url + URL(address["ws_url"]).path
    async with aiohttp.ClientSession() as anonymous:
        version = await ok(await anonymous.get(f"{through_c}/json/version"))
        assert "Browser" in version
        async with anonymous.ws_connect(socket_c) as ws:
            await ws.send_json({"id": 1, "method": "Browser.getVersion"})
            answer = await ws.receive_json(timeout=20)
            assert answer["id"] == 1 and "product" in answer["result"]
        wrong = c.url + URL(address["url"]).path.replace(".", ".x", 1)
        assert (await anonymous.get(f"{wrong}/json/version")).status == 401

    # A browser state saved from the box through one holmd loads, through another, into
    # a box that a third runs.
    saved = await ok(await http.post(f"{b.url}/v1/boxes/{box}/state/save", json={"name": "s1"}))
    assert saved["name"] == "s1"
    states = await ok(await http.get(f"{c.url}/v1/states"))
    assert [state["name"] for state in states["states"]] == ["s1"]
    elsewhere = (await ok(await http.post(f"{c.url}/v1/boxes", json={})))["id"]
    # Through a to c, which reads the state from the database (a missing one is a 404).
    await ok(await http.post(f"{a.url}/v1/boxes/{elsewhere}/state/load", json={"name": "s1"}))
    await ok(await http.delete(f"{b.url}/v1/states/s1"))
    assert (await ok(await http.get(f"{a.url}/v1/states")))["states"] == []
    await ok(
        await http.delete(
            f"{a.url}/v1/boxes/{elsewhere}", headers={"x-holm-confirm-delete": "true"}
        )
    )

    # The events feed reads the same through each holmd, once the feed's delay passed (but
    # for the viewers' addresses, which name the holmd read).
    await asyncio.sleep(1.0)
    feeds = [await whole_feed(http, server.url) for server in cluster]
    assert feeds[0] == feeds[1] == feeds[2]
    created = [event["box_id"] for event in feeds[0] if event["kind"] == "box.created"]
    assert box in created and fork in created
    assert len({event["seq"] for event in feeds[0]}) == len(feeds[0])

    for server in (b, a):
        await ok(
            await http.delete(
                f"{server.url}/v1/boxes/{fork if server is b else box}",
                headers={"x-holm-confirm-delete": "true"},
            )
        )
    for server in cluster:
        assert not {box, fork} & set(await box_ids(http, server))


async def same_through_each(cluster: list[Holmd], read: Callable[[Holmd], Awaitable[Any]]) -> Any:
    """What `read` answers through every holmd, once the answers agree: a holmd folds what
    another appended within its feed follower's tenth of a second (engine/elsewhere.py)."""
    for _ in range(100):
        answers = [await read(server) for server in cluster]
        if answers[1:] == answers[:-1]:
            return answers[0]
        await asyncio.sleep(0.1)
    assert answers[0] == answers[1] == answers[2]


async def test_a_trace_is_listed_and_read_the_same_through_each_holmd_after_its_box_is_gone(
    cluster: list[Holmd], http: aiohttp.ClientSession
) -> None:
    a, b, c = cluster
    name = "traces-" + secrets.token_hex(4)
    await ok(await http.post(f"{a.url}/v1/workspaces", json={"name": name}))
    key = await ok(await http.post(f"{a.url}/v1/keys", json={"workspace": name}))
    await ok(await http.post(f"{a.url}/v1/workspaces", json={"name": name + "-other"}))
    other_key = await ok(await http.post(f"{a.url}/v1/keys", json={"workspace": name + "-other"}))
    own = aiohttp.ClientSession(headers={"Authorization": f"Bearer {key['key']}"})
    stranger = aiohttp.ClientSession(headers={"Authorization": f"Bearer {other_key['key']}"})
    async with own, stranger:
        # Made through a, driven through b, deleted through c: a ran it all along.
        box = (await ok(await own.post(f"{a.url}/v1/boxes", json={})))["id"]
        click = {"actions": [{"type": "click", "at": {"x": 30, "y": 40}}]}
        await ok(await own.post(f"{b.url}/v1/boxes/{box}/screens/0/actions", json=click))

        # A workspace's secret set through c is typed by a, which runs the box, for a step
        # sent through b; its name and length list the same through each.
        secret = {"value": "hunter2-" + secrets.token_hex(4)}
        await ok(await own.put(f"{c.url}/v1/secrets/SIGN_IN", json=secret))

        async def named(server: Holmd) -> Any:
            return (await ok(await own.get(f"{server.url}/v1/secrets")))["secrets"]

        assert [item["name"] for item in await same_through_each(cluster, named)] == ["SIGN_IN"]
        typing = {"actions": [{"type": "type", "secret": "SIGN_IN"}]}
        typed = await ok(await own.post(f"{b.url}/v1/boxes/{box}/screens/0/actions", json=typing))
        assert [step["ok"] for step in typed["results"]] == [True], typed

        async def workspace_traces(server: Holmd) -> Any:
            return (await ok(await own.get(f"{server.url}/v1/traces")))["traces"]

        live = await same_through_each(cluster, workspace_traces)
        assert [trace["trace"] for trace in live] == [box] and live[0]["state"] == "ready"

        deleted = await own.delete(
            f"{c.url}/v1/boxes/{box}", headers={"x-holm-confirm-delete": "true"}
        )
        assert deleted.status == 200, await deleted.text()
        listed = await same_through_each(cluster, workspace_traces)
        assert [trace["trace"] for trace in listed] == [box]
        assert listed[0]["entries"] > live[0]["entries"] and listed[0]["state"] == "gone"

        # The server token lists every trace, the same through each.
        async def every_trace(server: Holmd) -> Any:
            return (await ok(await http.get(f"{server.url}/v1/traces")))["traces"]

        assert box in [trace["trace"] for trace in await same_through_each(cluster, every_trace)]

        # Read, viewed and its box asked for through each: one answer.
        trace = await same_through_each(cluster, lambda server: whole_trace(own, server.url, box))
        assert [item["seq"] for item in trace] == list(range(len(trace)))
        assert trace[-1]["kind"] == "box_deleted"

        async def page(server: Holmd) -> tuple[int, str]:
            answer = await own.get(f"{server.url}/v1/boxes/{box}/trace/view?fork=false")
            return answer.status, await answer.text()

        status, html = await same_through_each(cluster, page)
        assert status == 200 and box in html

        async def asked(server: Holmd) -> tuple[int, str]:
            answer = await own.get(f"{server.url}/v1/boxes/{box}")
            return answer.status, (await answer.json())["code"]

        assert await same_through_each(cluster, asked) == (410, "gone")

        async def driven(server: Holmd) -> tuple[int, str]:
            url = f"{server.url}/v1/boxes/{box}/screens/0/actions"
            answer = await own.post(url, json=click)
            return answer.status, (await answer.json())["code"]

        assert await same_through_each(cluster, driven) == (410, "gone")

        # Forked through a holmd that never ran it, from the trace the store keeps: the
        # secret typed again from the workspace's, which that holmd read from the store.
        made = await ok(await own.post(f"{b.url}/v1/boxes/{box}/fork", json={}))
        fork = made["box"]["id"]
        forked = await whole_trace(own, c.url, fork)
        assert any(item["kind"] == "forked_from" for item in forked)
        steps = [item["action"] for item in forked if item["kind"] == "acted"]
        assert [step["type"] for step in steps] == ["click", "type"]
        assert steps[0]["at"] == {"x": 30, "y": 40} and steps[1]["secret"] == "SIGN_IN"
        assert all(item["ok"] for item in forked if item["kind"] == "acted")
        confirm = {"x-holm-confirm-delete": "true"}
        await ok(await own.delete(f"{a.url}/v1/boxes/{fork}", headers=confirm))

        # Another workspace sees none of it, through any holmd.
        for server in cluster:
            assert (await ok(await stranger.get(f"{server.url}/v1/traces")))["traces"] == []
            refused = await stranger.get(f"{server.url}/v1/boxes/{box}/trace")
            assert refused.status == 404


async def test_a_runtime_added_through_one_holmd_is_every_ones_until_removed(
    cluster: list[Holmd], http: aiohttp.ClientSession
) -> None:
    a, b, c = cluster
    name = "far-" + secrets.token_hex(3)
    # c as a runtime of provider holm: another holmd (docs/runtimes.md).
    body = {
        "name": name,
        "provider": "holm",
        "fields": {"url": c.url},
        "secrets": {"api_key": TOKEN},
    }
    added = await ok(await http.post(f"{a.url}/v1/runtimes", json=body))
    assert added["secrets"] == ["api_key"] and TOKEN not in str(added)

    async def shown(server: Holmd) -> Any:
        answer = await http.get(f"{server.url}/v1/runtimes/{name}")
        got = await answer.json()
        return answer.status, got.get("provider"), got.get("fields")

    assert await same_through_each(cluster, shown) == (200, "holm", {"url": c.url})
    await ok(await http.patch(f"{b.url}/v1/runtimes/{name}", json={"fields": {"url": c.url + "/"}}))
    assert await same_through_each(cluster, shown) == (200, "holm", {"url": c.url + "/"})
    removed = await http.delete(f"{c.url}/v1/runtimes/{name}")
    assert removed.status in (200, 204), await removed.text()
    assert await same_through_each(cluster, shown) == (404, None, None)
