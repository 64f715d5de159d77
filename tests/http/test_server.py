"""What does not need a desktop, through HTTP on the in-memory runtime: health, runtimes,
catalog, the OpenAPI document, trace paging, events, scheduled work, queued jobs, forks
and a restarted server."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path
from typing import Any

from aiohttp.test_utils import TestClient, TestServer
from http_kit import Client, MakeClient, app_config, kinds, new_box, ok_json, trace_entries

from holm.adapters.memory.runtime import MemoryRuntime, MemoryWorld
from holm.config import server_id_of
from holm.events import MemoryStore
from holm.http.app import create_app
from holm.http.routes import ALL_ROUTES

CLICK = {"actions": [{"type": "click", "at": {"x": 1, "y": 1}}]}


async def test_health_runtimes_and_catalog(client: Client) -> None:
    assert await ok_json(await client.get("/v1/health")) == {"ok": True, "service": "holm-server"}
    runtimes = await ok_json(await client.get("/v1/runtimes"))
    (memory,) = runtimes["runtimes"]
    assert (memory["name"], memory["default"]) == ("memory", True)
    assert memory["can"]["pause"] is True and memory["can"]["max_screens"] == 8
    assert await ok_json(await client.get("/v1/runtimes/memory")) == memory
    catalog = await ok_json(await client.get("/v1/catalog"))
    assert {"chromium", "xterm"} <= set(catalog["apps"])


async def test_a_box_has_the_shape_of_the_reference(client: Client) -> None:
    desktop = {"width": 1024, "height": 768, "screens": 2}
    placement = {"expires_after_secs": 600, "idle_timeout_secs": 300}
    body = {"spec": {"desktop": desktop}, "placement": placement}
    box = await ok_json(await client.post("/v1/boxes", json=body))
    assert box["id"].startswith("box_") and box["state"] == "ready"
    assert (box["screens"], box["width"], box["height"]) == (2, 1024, 768)
    assert box["expires_at_ms"] - box["created_at_ms"] == 600_000
    assert box["spec"]["desktop"] == desktop
    assert box["placement"] == {**placement, "runtime": "memory"}
    assert box["spec_digest"].startswith("sha256:")
    assert box["viewer_url"] == box["viewer_urls"][0]
    assert "owner" not in box and "reason" not in box
    assert await ok_json(await client.get(f"/v1/boxes/{box['id']}")) == box
    listed = await ok_json(await client.get("/v1/boxes"))
    assert listed["boxes"] == [box]


async def test_a_box_lives_one_hour_by_default(client: Client) -> None:
    box = await ok_json(await client.post("/v1/boxes", json={}))
    assert box["expires_at_ms"] - box["created_at_ms"] == 3_600_000


async def test_the_openapi_document_lists_every_route(client: Client) -> None:
    document = await ok_json(await client.get("/v1/openapi.json"))
    paths = document["paths"]
    for route in ALL_ROUTES:
        path = route.path.replace("{screen:\\d+}", "{screen}").replace("{rest:.*}", "{rest}")
        methods = ["get", "post"] if route.method == "*" else [route.method.lower()]
        for method in methods:
            operation = paths[path][method]
            assert operation["responses"]["default"]["content"]["application/json"]["schema"] == {
                "$ref": "#/components/schemas/ErrorBody"
            }
    create = paths["/v1/boxes"]["post"]
    assert create["requestBody"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/CreateBox"
    }
    assert set(create["responses"]) >= {"200", "202", "400", "404", "409"}
    schemas = document["components"]["schemas"]
    assert {"ActionsRequest", "ActionsResult", "BoxView", "TracePage", "Click", "ErrorBody"} <= set(
        schemas
    )
    trace = paths["/v1/boxes/{id}/trace"]["get"]
    limit = next(p for p in trace["parameters"] if p["name"] == "limit")
    assert limit["schema"]["maximum"] == 500 and limit["in"] == "query"
    # Beyond the spec: a frame's format and quality, with their limits.
    frame = paths["/v1/boxes/{id}/screens/{screen}/frame"]["get"]["parameters"]
    schema = {p["name"]: p["schema"] for p in frame}
    assert sorted(schema["format"]["enum"]) == ["jpeg", "png", "webp"]
    [quality, _none] = schema["quality"]["anyOf"]
    assert (quality["minimum"], quality["maximum"]) == (1, 100)
    batch = schemas["ActionsRequest"]["properties"]
    assert batch["frame_format"] == schema["format"] and batch["frame_quality"] == schema["quality"]


async def test_no_two_schemas_of_the_openapi_document_share_a_name(client: Client) -> None:
    # A client generator (openapi-python-client) names a model by its schema's title, and
    # keeps one of two that share it: a component named by its module path is such a clash.
    document = await ok_json(await client.get("/v1/openapi.json"))
    schemas = document["components"]["schemas"]
    titles = [schema.get("title", name) for name, schema in schemas.items()]
    assert len(titles) == len(set(titles)), sorted(t for t in titles if titles.count(t) > 1)
    assert [name for name in schemas if "." in name] == []
    assert {"PageShotTaken", "PageCaptured", "TracePage"} <= set(schemas)


async def settled_trace(client: Client, box: str) -> list[Any]:
    """The trace once the frame watcher is done with what the test did: the same on two
    reads a while apart (bounded; the test then checks what it holds)."""
    before = await trace_entries(client, box)
    for _ in range(50):
        await asyncio.sleep(0.2)
        now = await trace_entries(client, box)
        if now == before:
            break
        before = now
    return before


async def test_the_trace_is_read_a_page_at_a_time(client: Client) -> None:
    box = await new_box(client)
    for _ in range(6):
        await ok_json(await client.post(f"/v1/boxes/{box}/exec", json={"argv": ["true"]}))
    # A frame the watcher appends between two reads would be in one and not the other.
    await settled_trace(client, box)
    first = await ok_json(await client.get(f"/v1/boxes/{box}/trace?limit=3"))
    assert [e["seq"] for e in first["entries"]] == [0, 1, 2]
    assert (first["next"], first["more"], first["incomplete"]) == (2, True, False)
    # Every key of docs/api.md's `{entries, next, more, incomplete, first_seq}`, 0 included.
    assert first["first_seq"] == 0
    everything = await trace_entries(client, box)
    assert [e["seq"] for e in everything] == list(range(len(everything)))
    rest = await ok_json(await client.get(f"/v1/boxes/{box}/trace?after={first['next']}"))
    assert rest["entries"] == everything[3:]
    assert rest["more"] is False and rest["next"] == everything[-1]["seq"]
    empty = await ok_json(await client.get(f"/v1/boxes/{box}/trace?after={rest['next']}"))
    assert (empty["entries"], empty["next"], empty["more"]) == ([], rest["next"], False)


async def test_a_frame_of_the_trace_is_a_png(client: Client) -> None:
    box = await new_box(client)
    for _ in range(200):
        frames = [e for e in await trace_entries(client, box) if e["kind"] == "frame"]
        if frames:
            break
        await asyncio.sleep(0.05)
    response = await client.get(f"/v1/boxes/{box}/trace/frames/{frames[0]['frame']}")
    assert response.status == 200 and response.content_type == "image/png"
    assert (await response.read()).startswith(b"\x89PNG")


async def test_events_show_what_happened_to_boxes(make_client: MakeClient) -> None:
    client = await make_client(events_delay_ms=0)
    box = await new_box(client)
    shown = await ok_json(await client.get(f"/v1/boxes/{box}"))
    await ok_json(await client.post(f"/v1/boxes/{box}/pause"))
    await ok_json(
        await client.delete(f"/v1/boxes/{box}", headers={"x-holm-confirm-delete": "true"})
    )
    page = await ok_json(await client.get("/v1/events"))
    assert [e["kind"] for e in page["events"]] == [
        "box.created",
        "box.ready",
        "box.paused",
        "box.removed",
    ]
    # The viewers as the box names them: the server's pages, not the runtime's sockets.
    assert page["events"][1]["data"]["viewer_urls"] == shown["viewer_urls"] != []
    assert {e["box_id"] for e in page["events"]} == {box}
    seqs = [e["seq"] for e in page["events"]]
    assert seqs == sorted(seqs) and page["next"] == seqs[-1] and page["more"] is False
    after = await ok_json(await client.get(f"/v1/events?after={seqs[1]}&limit=1"))
    assert [e["kind"] for e in after["events"]] == ["box.paused"] and after["more"] is True


async def test_events_show_only_after_the_delay(make_client: MakeClient) -> None:
    client = await make_client(events_delay_ms=60_000)
    await new_box(client)
    assert (await ok_json(await client.get("/v1/events")))["events"] == []


async def test_reap_and_prune_as_scheduled_work(
    make_client: MakeClient, world: MemoryWorld
) -> None:
    client = await make_client()
    box = await new_box(client)
    del world.boxes[box]
    assert await ok_json(await client.post("/v1/jobs/reap")) == {"removed": 1}
    # The runtime answered without it: gone (unreachable is for a runtime that cannot answer).
    written = kinds(await trace_entries(client, box))
    assert written[-1] == "gone" and "box_unreachable" not in written
    assert await ok_json(await client.get("/v1/jobs/reap")) == {"removed": 0}
    assert await ok_json(await client.get("/v1/jobs/prune")) == {
        "frames": 0,
        "entries": 0,
        "boxes": 0,
    }


async def test_the_internal_reaper_removes_a_lost_box(
    make_client: MakeClient, world: MemoryWorld
) -> None:
    client = await make_client(schedule="internal", reap_secs=1)
    box = await new_box(client)
    del world.boxes[box]
    for _ in range(200):
        if kinds(await trace_entries(client, box))[-1] == "gone":
            break
        await asyncio.sleep(0.05)
    gone = (await trace_entries(client, box))[-1]
    assert (gone["kind"], gone["actor"]) == ("gone", "system")
    assert (await client.get(f"/v1/boxes/{box}")).status == 410


async def test_queued_launches_answer_202_then_become_ready(
    make_client: MakeClient, world: MemoryWorld
) -> None:
    client = await make_client(jobs="queue")
    created = await client.post("/v1/boxes", json={})
    assert created.status == 202
    box = await created.json()
    assert box["state"] == "starting"
    assert await ok_json(await client.post("/v1/jobs/run")) == {"ran": 1}
    ready = await ok_json(await client.get(f"/v1/boxes/{box['id']}"))
    assert ready["state"] == "ready"


async def test_queued_launches_run_at_once_with_an_internal_schedule(
    make_client: MakeClient, world: MemoryWorld
) -> None:
    runtime = MemoryRuntime(world=world, create_delay=0.05)
    client = await make_client(jobs="queue", schedule="internal", runtime=runtime)
    created = await client.post("/v1/boxes", json={})
    assert created.status == 202
    box_id = (await created.json())["id"]
    for _ in range(400):
        state = (await ok_json(await client.get(f"/v1/boxes/{box_id}")))["state"]
        if state != "starting":
            break
        await asyncio.sleep(0.01)
    assert state == "ready"


async def test_a_fork_replays_the_trace_into_a_new_box(client: Client) -> None:
    box = await new_box(client)
    await ok_json(await client.post(f"/v1/boxes/{box}/screens/0/actions", json=CLICK))
    await ok_json(await client.post(f"/v1/boxes/{box}/exec", json={"argv": ["echo", "x"]}))
    file = {"path": "/tmp/a", "contents_base64": "aGk="}
    await ok_json(await client.put(f"/v1/boxes/{box}/files", json=file))
    result = await ok_json(
        await client.post(f"/v1/boxes/{box}/fork", json={}, headers={"idempotency-key": "f1"})
    )
    new = result["box"]
    assert new["state"] == "ready" and new["id"] != box
    assert new["forked_from"] == {"source": box}
    report = result["replay"]
    assert (report["attempted"], report["ok"], report["truncated"]) == (2, 2, False)
    assert [s["kind"] for s in report["skipped"]] == ["file_written"]
    forked = await trace_entries(client, new["id"])
    assert kinds(forked)[:3] == ["box_created", "forked_from", "box_ready"]
    again = await ok_json(
        await client.post(f"/v1/boxes/{box}/fork", json={}, headers={"idempotency-key": "f1"})
    )
    assert again == result


async def test_a_queued_fork_answers_202_with_an_empty_report(make_client: MakeClient) -> None:
    client = await make_client(jobs="queue")
    created = await client.post("/v1/boxes", json={})
    source = (await created.json())["id"]
    await ok_json(await client.post("/v1/jobs/run"))
    await ok_json(await client.post(f"/v1/boxes/{source}/exec", json={"argv": ["true"]}))
    forked = await client.post(f"/v1/boxes/{source}/fork", json={"up_to": 99})
    assert forked.status == 202
    result = await forked.json()
    assert result["box"]["state"] == "starting"
    assert result["replay"] == {
        "attempted": 0,
        "ok": 0,
        "stopped_at": None,
        "truncated": False,
        "skipped": [],
    }
    assert await ok_json(await client.post("/v1/jobs/run")) == {"ran": 1}
    new_id = result["box"]["id"]
    assert (await ok_json(await client.get(f"/v1/boxes/{new_id}")))["state"] == "ready"
    forked_trace = await trace_entries(client, new_id)
    assert kinds(forked_trace).count("box_created") == 1
    assert "executed" in kinds(forked_trace)


async def test_a_restarted_server_continues_each_trace(
    make_client: MakeClient, world: MemoryWorld
) -> None:
    first = await make_client(store="local")
    box = await new_box(first)
    await ok_json(await first.post(f"/v1/boxes/{box}/screens/0/actions", json=CLICK))
    before = await trace_entries(first, box)
    await first.close()
    second = await make_client(store="local")
    assert [b["id"] for b in (await ok_json(await second.get("/v1/boxes")))["boxes"]] == [box]
    await ok_json(await second.post(f"/v1/boxes/{box}/screens/0/actions", json=CLICK))
    after = await trace_entries(second, box)
    assert after[: len(before)] == before
    assert [e["seq"] for e in after] == list(range(len(after)))
    assert "adopted" not in kinds(after)


async def test_a_queued_job_wakes_the_server_through_its_public_url(
    tmp_path: Path, world: MemoryWorld
) -> None:
    """With an external schedule, HOLM_PUBLIC_URL and CRON_SECRET, queuing a launch makes
    the server call its own /v1/jobs/run, so the box does not wait for the scheduler."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    config = app_config(
        tmp_path,
        jobs="queue",
        public_url=f"http://127.0.0.1:{port}",
        cron_secret="cron",
        server_token="token",
    )
    runtime = MemoryRuntime(server_id=server_id_of(tmp_path), world=world)
    app = create_app(config, runtimes={"memory": runtime}, store=MemoryStore())
    async with TestClient(TestServer(app, port=port)) as client:
        headers = {"Authorization": "Bearer token"}
        created = await client.post("/v1/boxes", json={}, headers=headers)
        assert created.status == 202
        box_id = (await created.json())["id"]
        for _ in range(200):
            box = await ok_json(await client.get(f"/v1/boxes/{box_id}", headers=headers))
            if box["state"] != "starting":
                break
            await asyncio.sleep(0.02)
        assert box["state"] == "ready"
