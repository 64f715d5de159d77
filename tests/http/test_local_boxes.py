"""End to end through HTTP on real local boxes (bubblewrap, Xvfb, Chromium): each area of
the API, and what each call records, read back from the trace with its kind, actor and
fields. Boxes take seconds to start, so the module shares one server and one box for what
does not change a box's life, and makes its own boxes for what does; every box is removed
at the end, whatever happens."""

from __future__ import annotations

import asyncio
import base64
import io
import itertools
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio
from http_kit import Client, engine_of, error_of, kinds, ok_json, trace_entries
from local_kit import LocalServer, client_of, new_box, started
from PIL import Image

from holm.adapters.local.runtime import LocalRuntime
from holm.config import server_id_of
from holm.engine.journal import now_ms
from holm.engine.reaper import reap
from holm.projections import LOST_REASON
from holm.wire.spec import Placement, Spec

pytestmark = [pytest.mark.desktop, pytest.mark.asyncio(loop_scope="module")]

CONFIRM = {"x-holm-confirm-delete": "true"}


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def server() -> AsyncIterator[LocalServer]:
    async with started(events_delay_ms=0) as running:
        yield running


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def box(server: LocalServer) -> str:
    """The shared box: one screen of 1280×800 with Chromium."""
    return await new_box(server)


async def batch(client: Client, box: str, body: dict[str, Any], screen: int = 0) -> Any:
    return await ok_json(await client.post(f"/v1/boxes/{box}/screens/{screen}/actions", json=body))


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def png_size(data: bytes) -> tuple[int, int]:
    with Image.open(io.BytesIO(data)) as image:
        return image.size


async def until(check: Any, tries: int = 100, pause: float = 0.1) -> Any:
    """Poll `check()` (bounded) until it gives something true, and give it back."""
    for _ in range(tries):
        found = await check()
        if found:
            return found
        await asyncio.sleep(pause)
    return await check()


async def test_a_box_is_created_ready_and_listed(server: LocalServer, box: str) -> None:
    client = client_of(server)
    got = await ok_json(await client.get(f"/v1/boxes/{box}"))
    assert (got["state"], got["runtime"], got["screens"], got["width"], got["height"]) == (
        "ready",
        "local",
        1,
        1280,
        800,
    )
    # The box's viewer is the server's page; the trace keeps where the runtime's socket is.
    assert got["viewer_url"].endswith(f"/v1/boxes/{box}/screens/0/view")
    assert box in [b["id"] for b in (await ok_json(await client.get("/v1/boxes")))["boxes"]]
    entries = await trace_entries(client, box)
    created, ready = entries[:2]
    assert (created["kind"], created["actor"], created["runtime"]) == (
        "box_created",
        "agent",
        "local",
    )
    assert created["placement"] == {"runtime": "local"} and created["spec_digest"]
    assert (ready["kind"], ready["actor"]) == ("box_ready", "system")
    assert [url.rsplit("/", 1)[-1] for url in ready["viewer_urls"]] == ["vnc-0.sock"]


async def test_a_batch_drives_the_screen_and_records_each_step(
    server: LocalServer, box: str
) -> None:
    client = client_of(server)
    actions = [
        {"type": "click", "at": {"x": 640, "y": 400}},
        {"type": "move", "to": {"x": 200, "y": 150}},
        {"type": "type", "text": "hi"},
        {"type": "press", "chord": ["ctrl", "a"]},
        {"type": "cursor"},
        {"type": "read_file", "path": "/nonexistent"},
        {"type": "wait", "ms": 10},
    ]
    result = await batch(client, box, {"actions": actions, "want": ["frame", "cursor"]})
    assert [r["type"] for r in result["results"]] == [
        "click",
        "move",
        "type",
        "press",
        "cursor",
        "read_file",
    ]
    assert result["stopped_at"] == 5
    assert [r["ok"] for r in result["results"]] == [True] * 5 + [False]
    assert result["results"][4]["value"] == {"x": 200, "y": 150}
    assert result["results"][5]["error"]["code"] == "not_found"
    assert result["cursor"] == {"x": 200, "y": 150}
    frame = result["frame"]
    assert png_size(base64.b64decode(frame["png_base64"])) == (1280, 800)
    assert any(w["class"] == "Chromium" for w in result["windows"])
    assert (result["released"], result["holding"]) == ([], [])
    # The screen's Chromium, with the tab it starts with.
    assert len(result["tabs"]) >= 1 and all("tab" in t for t in result["tabs"])
    acted = [e for e in await trace_entries(client, box) if e["kind"] == "acted"][-6:]
    assert [(e["index"], e["ok"], e["actor"], e["screen"]) for e in acted] == [
        (i, i != 5, "agent", 0) for i in range(6)
    ]
    assert len({e["batch"] for e in acted}) == 1
    assert [e["action"] for e in acted] == actions[:6]
    assert acted[5]["error"]["code"] == "not_found" and all(e["key"] for e in acted)
    again = await batch(
        client, box, {"actions": [], "want": ["frame"], "have_frame": frame["hash"]}
    )
    # The screen may have changed since (a caret blinks); when it did not, no image comes.
    if again["frame"]["hash"] == frame["hash"]:
        assert again["frame"]["unchanged"] is True and "png_base64" not in again["frame"]


async def test_batch_answers_follow_windows_and_tabs_the_box_changes_itself(
    server: LocalServer, box: str
) -> None:
    """The windows and tabs of a batch's answer are kept by the agent between batches; a
    window a program opens, renames and closes, and a tab whose page navigates itself,
    show in the answers that come after."""
    client = client_of(server)
    nothing: dict[str, Any] = {"actions": []}
    await batch(client, box, nothing)
    script = "sleep 1; printf '\\033]2;renamed\\007'; sleep 4"
    argv = ["sh", "-c", f'xterm -T opened -e sh -c "{script}" >/dev/null 2>&1 &']
    await batch(client, box, {"actions": [{"type": "exec", "what": {"argv": argv}}]})

    async def titled(title: str) -> bool:
        answer = await batch(client, box, nothing)
        return any(w["title"] == title for w in answer["windows"])

    async def no_xterm() -> bool:
        answer = await batch(client, box, nothing)
        return all(w["class"] != "XTerm" for w in answer["windows"])

    assert await until(lambda: titled("renamed"))
    assert await until(no_xterm)

    # A page that goes to another a moment after it loads.
    pages = {
        "first.html": "<script>setTimeout(() => location.href = 'moved.html', 500)</script>",
        "moved.html": "<title>moved</title>moved",
    }
    writes = [
        {"type": "write_file", "what": {"path": name, "contents_base64": b64(body)}}
        for name, body in pages.items()
    ]
    await batch(client, box, {"actions": writes})
    first = "file:///home/box/first.html"
    await batch(client, box, {"actions": [{"type": "open_url", "url": first}]})

    async def navigated() -> bool:
        answer = await batch(client, box, nothing)
        moved = "file:///home/box/moved.html"
        return any(t["url"] == moved and t["title"] == "moved" for t in answer["tabs"])

    assert await until(navigated)


async def test_launch_and_the_windows_routes(server: LocalServer, box: str) -> None:
    client = client_of(server)
    launched = await batch(client, box, {"actions": [{"type": "launch", "app": "xterm"}]})
    window = launched["results"][0]["value"]["window"]
    base = f"/v1/boxes/{box}/screens/0/windows"
    listed = await ok_json(await client.get(base))
    assert window["id"] in [w["id"] for w in listed["windows"]]
    waited = await ok_json(await client.post(f"{base}/wait", json={"class": "XTerm"}))
    assert waited["window"]["id"] == window["id"]
    focused = await ok_json(await client.post(f"{base}/{window['id']}/focus"))
    assert focused == {"id": window["id"]}
    active = await ok_json(await client.get(f"{base}/active"))
    assert [w["id"] for w in active["windows"]] == [window["id"]]
    sized = await ok_json(
        await client.post(
            f"{base}/{window['id']}/arrange", json={"how": "size", "width": 640, "height": 480}
        )
    )
    # xterm sizes itself in whole character cells: at most a cell short of what was asked.
    assert sized["id"] == window["id"]
    assert 620 < sized["window"]["width"] <= 640 and 460 < sized["window"]["height"] <= 480
    closing = await ok_json(await client.delete(f"{base}/{window['id']}"))
    assert closing == {"id": window["id"], "closed": True}

    async def closed() -> bool:
        windows = (await ok_json(await client.get(base)))["windows"]
        return window["id"] not in [w["id"] for w in windows]

    assert await until(closed)
    entries = await trace_entries(client, box)
    acted = next(e for e in reversed(entries) if e["kind"] == "acted")
    app = next(e for e in reversed(entries) if e["kind"] == "app_launched")
    assert acted["action"] == {"type": "launch", "app": "xterm"}
    assert (app["app"], app["window"], app["batch"], app["actor"]) == (
        "xterm",
        window["id"],
        acted["batch"],
        "agent",
    )
    # The window calls outside a batch are not recorded (a fork would not do them again).
    assert not [e for e in entries if e["seq"] > app["seq"] and e["kind"] not in ("frame",)]


async def test_frames_are_recorded_when_the_screen_changes(server: LocalServer, box: str) -> None:
    client = client_of(server)
    before = (await trace_entries(client, box))[-1]["seq"]
    # Text never shown before: an xterm alone could look exactly like the one of an
    # earlier test, whose frame may be the last recorded (a screen that comes back within
    # the watcher's coalescing window is not a change).
    text = f"echo {uuid.uuid4().hex}"
    steps = [{"type": "launch", "app": "xterm"}, {"type": "type", "text": text}]
    launched = await batch(client, box, {"actions": steps})
    assert all(result["ok"] for result in launched["results"])

    async def frame_after_launch() -> Any:
        # A poll may see the window as it maps, before the step's `acted` entry lands.
        entries = await trace_entries(client, box)
        return [e for e in entries if e["kind"] == "frame" and e["seq"] > before]

    # The xterm stays on the screen, so the watcher sees the change.
    (after, *_) = await until(frame_after_launch)
    frames = [e for e in await trace_entries(client, box) if e["kind"] == "frame"]
    assert all(
        (f["actor"], f["screen"], f["width"], f["height"]) == ("agent", 0, 1280, 800)
        for f in frames
    )
    # A frame is recorded only when the screen changed: never twice the same in a row.
    assert all(a["frame"] != b["frame"] for a, b in itertools.pairwise(frames))
    response = await client.get(f"/v1/boxes/{box}/trace/frames/{after['frame']}")
    assert response.status == 200 and response.content_type == "image/png"
    assert png_size(await response.read()) == (1280, 800)


async def test_frame_captures(server: LocalServer, box: str) -> None:
    client = client_of(server)
    base = f"/v1/boxes/{box}/screens/0/frame"
    whole = await ok_json(await client.get(base))
    assert png_size(base64.b64decode(whole["png_base64"])) == (1280, 800)
    half = await ok_json(await client.get(f"{base}?scale=50"))
    assert png_size(base64.b64decode(half["png_base64"])) == (640, 400)
    # A corner of Chromium's blank page does not change between two captures.
    corner = "x=600&y=500&width=100&height=40"
    first = await ok_json(await client.get(f"{base}?{corner}"))
    assert png_size(base64.b64decode(first["png_base64"])) == (100, 40)
    again = await ok_json(await client.get(f"{base}?{corner}&have={first['hash']}"))
    assert again == {"hash": first["hash"], "unchanged": True, "width": 100, "height": 40}
    windows = (await ok_json(await client.get(f"/v1/boxes/{box}/screens/0/windows")))["windows"]
    chromium = next(w for w in windows if w["class"] == "Chromium")
    shot = await ok_json(await client.get(f"{base}?window={chromium['id']}"))
    assert png_size(base64.b64decode(shot["png_base64"]))[0] > 100


async def test_cursor_and_clipboard(server: LocalServer, box: str) -> None:
    client = client_of(server)
    await batch(client, box, {"actions": [{"type": "move", "to": {"x": 33, "y": 44}}]})
    assert await ok_json(await client.get(f"/v1/boxes/{box}/screens/0/cursor")) == {
        "x": 33,
        "y": 44,
    }
    clip = f"/v1/boxes/{box}/screens/0/clipboard"
    for selection, text in (("clipboard", "héllo clipboard"), ("primary", "primary text")):
        size = len(text.encode())
        put = await ok_json(await client.put(clip, json={"text": text, "selection": selection}))
        assert put == {"selection": selection, "length": size}
        got = await ok_json(await client.get(f"{clip}?selection={selection}"))
        assert got == {"selection": selection, "length": size, "text": text}
    entries = await trace_entries(client, box)
    clips = [e for e in entries if e["kind"] in ("clipboard_set", "clipboard_read")]
    assert [(e["kind"], e["selection"], e["bytes"], e["actor"]) for e in clips[-4:]] == [
        ("clipboard_set", "clipboard", 16, "agent"),
        ("clipboard_read", "clipboard", 16, "agent"),
        ("clipboard_set", "primary", 12, "agent"),
        ("clipboard_read", "primary", 12, "agent"),
    ]
    assert "héllo" not in str(entries)


async def test_commands_and_files(server: LocalServer, box: str) -> None:
    client = client_of(server)
    run = f"/v1/boxes/{box}/exec"
    echoed = await ok_json(await client.post(run, json={"argv": ["echo", "hello"]}))
    assert echoed == {
        "code": 0,
        "stdout": "hello\n",
        "stderr": "",
        "timed_out": False,
        "truncated": False,
    }
    failed = await ok_json(await client.post(run, json={"argv": ["sh", "-c", "exit 3"]}))
    assert failed["code"] == 3
    slow = await ok_json(await client.post(run, json={"argv": ["sleep", "30"], "timeout_ms": 300}))
    assert slow["timed_out"] is True
    files = f"/v1/boxes/{box}/files"
    secret = b"a secret line\nanother line\n"
    body = {"path": "/home/box/notes/a.txt", "contents_base64": base64.b64encode(secret).decode()}
    assert await ok_json(await client.put(files, json=body)) == {
        "path": "/home/box/notes/a.txt",
        "size": len(secret),
    }
    read = await ok_json(await client.get(f"{files}?path=/home/box/notes/a.txt"))
    assert base64.b64decode(read["contents_base64"]) == secret
    listed = await ok_json(await client.get(f"{files}/list?path=/home/box/notes"))
    assert [(e["name"], e["size"]) for e in listed["entries"]] == [("a.txt", len(secret))]
    grep = await ok_json(
        await client.post(f"{files}/grep", json={"pattern": "another", "path": "/home/box"})
    )
    assert [(m["path"], m["line"]) for m in grep["matches"]] == [("/home/box/notes/a.txt", 2)]
    assert grep["cut"] is False
    found = await ok_json(await client.get(f"{files}/glob?pattern=**/*.txt&path=/home/box"))
    assert found == {"paths": ["/home/box/notes/a.txt"], "cut": False}
    entries = await trace_entries(client, box)
    ran = [e for e in entries if e["kind"] == "executed"][-3:]
    assert [(e["argv"], e["code"], e["timed_out"], e["actor"]) for e in ran] == [
        (["echo", "hello"], 0, False, "agent"),
        (["sh", "-c", "exit 3"], 3, False, "agent"),
        (["sleep", "30"], None, True, "agent"),
    ]
    assert ran[0]["stdout"] == "hello\n" and ran[2]["timeout_ms"] == 300
    moved = [e for e in entries if e["kind"] in ("file_written", "file_read")]
    assert [(e["kind"], e["path"], e["bytes"]) for e in moved[-2:]] == [
        ("file_written", "/home/box/notes/a.txt", len(secret)),
        ("file_read", "/home/box/notes/a.txt", len(secret)),
    ]
    assert "secret line" not in str(entries)


async def test_events_of_the_boxes(server: LocalServer, box: str) -> None:
    page = await ok_json(await client_of(server).get("/v1/events?limit=1000"))
    mine = [e["kind"] for e in page["events"] if e.get("box_id") == box]
    assert mine[:2] == ["box.created", "box.ready"]


async def test_the_life_of_a_box(server: LocalServer) -> None:
    client = client_of(server)
    created = await ok_json(
        await client.post("/v1/boxes", json={"placement": {"persistent": True}})
    )
    box = created["id"]
    path = f"/v1/boxes/{box}"
    await ok_json(await client.post(f"{path}/exec", json={"argv": ["sh", "-c", "echo kept > ~/k"]}))
    assert (await ok_json(await client.post(f"{path}/pause")))["state"] == "paused"
    response = await client.post(
        f"{path}/screens/0/actions", json={"actions": [{"type": "cursor"}]}
    )
    await error_of(response, 409, "screen_unavailable")
    assert (await ok_json(await client.post(f"{path}/resume")))["state"] == "ready"
    assert (await ok_json(await client.post(f"{path}/stop")))["state"] == "stopped"
    started = await ok_json(await client.post(f"{path}/resume"))
    assert started["state"] == "ready"
    kept = await ok_json(await client.post(f"{path}/exec", json={"argv": ["cat", "/home/box/k"]}))
    assert kept["stdout"] == "kept\n"
    # A local box has the host's programs, and this host has no GIMP.
    refused = await client.post(f"{path}/apps", json={"apps": ["gimp"]})
    assert "apt-get install gimp" in await error_of(refused, 400, "unsupported")
    await ok_json(await client.delete(path, headers=CONFIRM))
    await error_of(await client.get(path), 410, "gone")
    await error_of(await client.post(f"{path}/exec", json={"argv": ["true"]}), 410, "gone")
    assert not (server.state_dir / "boxes" / box).exists()
    entries = await trace_entries(client, box)
    life = [(e["kind"], e["actor"]) for e in entries if e["kind"].startswith("box_")]
    assert life == [
        ("box_created", "agent"),
        ("box_ready", "system"),
        ("box_paused", "agent"),
        ("box_resumed", "agent"),
        ("box_stopped", "agent"),
        ("box_started", "agent"),
        ("box_ready", "system"),
        ("box_deleted", "agent"),
    ]
    # The refused install recorded nothing.
    assert "apps_installed" not in kinds(entries)


async def test_the_reaper_removes_lost_and_expired_boxes(server: LocalServer) -> None:
    client = client_of(server)
    lost = (await ok_json(await client.post("/v1/boxes", json={})))["id"]
    expiring = (
        await ok_json(
            await client.post("/v1/boxes", json={"placement": {"expires_after_secs": 60}})
        )
    )["id"]
    # The runtime loses a box behind the server's back.
    other = LocalRuntime(server.state_dir / "boxes", "another object")
    await other.delete(lost)
    await other.close()
    assert await ok_json(await client.post("/v1/jobs/reap")) == {"removed": 1}
    entries = await trace_entries(client, lost)
    # The runtime answered without it: gone at once (unreachable is for a runtime that
    # cannot answer at all, docs/runtimes.md).
    assert (entries[-1]["kind"], entries[-1]["actor"], entries[-1]["reason"]) == (
        "gone",
        "system",
        LOST_REASON,
    )
    assert "box_unreachable" not in [e["kind"] for e in entries]
    # The deadline is a minute away; the reaper is asked as it would be a minute later.
    assert await reap(engine_of(client), now_ms() + 61_000) == 1
    gone = (await trace_entries(client, expiring))[-1]
    assert (gone["kind"], gone["actor"]) == ("gone", "system")
    assert gone["reason"].startswith("expired")
    assert not (server.state_dir / "boxes" / expiring).exists()
    await error_of(await client.get(f"/v1/boxes/{expiring}"), 410, "gone")


async def test_a_fork_of_a_real_box(server: LocalServer) -> None:
    client = client_of(server)
    source = (await ok_json(await client.post("/v1/boxes", json={})))["id"]
    await ok_json(
        await client.post(
            f"/v1/boxes/{source}/exec", json={"argv": ["sh", "-c", "echo forked > ~/f"]}
        )
    )
    result = await ok_json(await client.post(f"/v1/boxes/{source}/fork", json={}))
    new = result["box"]["id"]
    assert result["replay"]["attempted"] == 1 and result["replay"]["ok"] == 1
    replayed = await ok_json(
        await client.post(f"/v1/boxes/{new}/exec", json={"argv": ["cat", "/home/box/f"]})
    )
    assert replayed["stdout"] == "forked\n"
    for box in (source, new):
        await ok_json(await client.delete(f"/v1/boxes/{box}", headers=CONFIRM))
    # Fork fidelity, read after both boxes are gone: their traces stay.
    diff = await ok_json(await client.get(f"/v1/boxes/{source}/diff/{new}"))
    assert (diff["a"], diff["b"], diff["matched"]) == (source, new, 1)
    # The `cat` this test ran in the fork afterwards is the one step the source lacks.
    assert diff["missing"] == []
    assert [step["kind"] for step in diff["extra"]] == ["executed"]
    assert [frame["screen"] for frame in diff["frames"]] == [0]
    await error_of(await client.get(f"/v1/boxes/{source}/diff/box_nothere"), 404, "not_found")


async def test_a_restarted_server_keeps_traces_and_adopts_boxes(
    server: LocalServer, box: str
) -> None:
    client = client_of(server)
    await batch(client, box, {"actions": [{"type": "click", "at": {"x": 5, "y": 5}}]})
    before = await trace_entries(client, box)
    await server.stop()
    # While the server is down, a box of this server appears that its store never saw.
    runtime = LocalRuntime(server.state_dir / "boxes", server_id_of(server.state_dir))
    orphan = "box_" + "0" * 31 + "1"
    await runtime.create(orphan, Spec(), server_placement(), owner="ws_orphans")
    await runtime.close()
    client = await server.start(events_delay_ms=0, jobs="queue", schedule="internal")
    assert (await ok_json(await client.get(f"/v1/boxes/{box}")))["state"] == "ready"
    await batch(client, box, {"actions": [{"type": "click", "at": {"x": 6, "y": 6}}]})
    after = await trace_entries(client, box)
    assert after[: len(before)] == before
    assert [e["seq"] for e in after] == list(range(len(after)))
    assert "adopted" not in kinds(after)
    adopted = await trace_entries(client, orphan)
    assert (adopted[0]["kind"], adopted[0]["actor"], adopted[0]["seq"]) == ("adopted", "system", 0)
    assert adopted[0]["placement"]["expires_after_secs"] == 600
    got = await ok_json(await client.get(f"/v1/boxes/{orphan}"))
    assert (got["state"], got["adopted"], got["owner"]) == ("ready", True, "ws_orphans")
    # Its desktop's addresses come from the runtime: its viewer and DevTools stay usable.
    assert got["viewer_url"].endswith(f"/v1/boxes/{orphan}/screens/0/view")
    cdp = await ok_json(await client.post(f"/v1/boxes/{orphan}/cdp", json={}))
    assert cdp["ws_url"].startswith("ws://")
    ran = await ok_json(await client.post(f"/v1/boxes/{orphan}/exec", json={"argv": ["true"]}))
    assert ran["code"] == 0
    # This server queues its launches: 202 with a starting box, then ready.
    created = await client.post("/v1/boxes", json={})
    assert created.status == 202
    queued = (await created.json())["id"]

    async def settled() -> Any:
        state = (await ok_json(await client.get(f"/v1/boxes/{queued}")))["state"]
        return state if state != "starting" else None

    assert await until(settled, tries=300) == "ready"


def server_placement() -> Placement:
    return Placement(runtime="local", expires_after_secs=600)


@pytest.mark.parametrize("path", ["/v1/boxes/box_missing", "/v1/boxes/box_missing/trace"])
async def test_an_absent_box(server: LocalServer, path: str) -> None:
    await error_of(await client_of(server).get(path), 404, "not_found")
