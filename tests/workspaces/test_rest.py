"""Two workspaces over REST, on a real holmd: each key sees and acts on its own boxes, their
traces, frames, forks and diffs, and reads its own events; every route that names a box
answers another workspace's box exactly as it answers a box that never was; the server
token sees everything; a workspace's key cannot manage keys, images or scheduled work."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from workspaces_kit import TOKEN, ids, served_app, two_workspaces, workspace_with_a_box

from holm.adapters.memory.runtime import MemoryWorld
from holm.http.app import declared_routes

ABSENT = "box_" + "0" * 32


def box_routes(auth: str | None = None) -> list[tuple[str, str]]:
    """Every route that names a box and takes a token (or the one `auth` names), as
    (method, path pattern)."""
    return [
        (route.method, route.path)
        for route in declared_routes()
        if route.auth != "none" and "{id}" in route.path and auth in (None, route.auth)
    ]


def filled(pattern: str, box: str, other: str) -> str:
    """The path of `pattern` for `box`; `{b}` (a diff's second box) is `other`."""
    path = pattern.replace("{id}", box).replace("{b}", other)
    return re.sub(r"\{(\w+)(:[^}]*)?\}", lambda m: "0" if m[1] == "screen" else "x", path)


def anonymous(body: Any, box: str) -> Any:
    """An answer with the box's id taken out, to compare two boxes' answers."""
    return (
        body
        if not isinstance(body, dict)
        else {k: str(v).replace(box, "ID") for k, v in body.items()}
    )


async def test_every_route_answers_another_workspaces_box_as_an_absent_one(
    tmp_path: Path,
) -> None:
    async with two_workspaces(tmp_path) as (server, a, b):
        before = await server.ok("GET", f"/v1/boxes/{a.box}/trace")
        routes = box_routes()
        assert len(routes) > 40 and ("GET", "/v1/boxes/{id}/trace/frames/{hash}") in routes
        # A route of the server token's refuses every key alike, before it looks at a box.
        servers = set(box_routes("server"))
        for method, pattern in routes:
            body = {} if method in ("POST", "PUT", "PATCH") else None
            # The box in `{id}`, and for a diff also in `{b}`, beside b's own box.
            for first in (True, False) if "{b}" in pattern else (True,):
                theirs_path, absent_path = (
                    filled(pattern, box, b.box) if first else filled(pattern, b.box, box)
                    for box in (a.box, ABSENT)
                )
                theirs = await server.call(method, theirs_path, b.key, body)
                absent = await server.call(method, absent_path, b.key, body)
                status, code = (
                    (403, "denied") if (method, pattern) in servers else (404, "not_found")
                )
                assert theirs[0] == absent[0] == status, (method, pattern, theirs, absent)
                assert theirs[1]["code"] == code
                assert anonymous(theirs[1], a.box) == anonymous(absent[1], ABSENT), pattern
        # Nothing b sent did anything to a's box: not removed, nothing recorded.
        after = await server.ok("GET", f"/v1/boxes/{a.box}/trace")
        assert after["entries"] == before["entries"]
        assert (await server.ok("GET", f"/v1/boxes/{a.box}", a.key))["state"] == "ready"


async def test_a_key_sees_its_boxes_traces_frames_forks_and_events(tmp_path: Path) -> None:
    async with two_workspaces(tmp_path) as (server, a, b):
        assert ids(await server.ok("GET", "/v1/boxes", a.key)) == {a.box}
        assert ids(await server.ok("GET", "/v1/boxes", b.key)) == {b.box}
        everything = await server.ok("GET", "/v1/boxes")
        assert {(box["id"], box.get("owner")) for box in everything["boxes"]} == {
            (a.box, a.id),
            (b.box, b.id),
        }
        mine = await server.ok("GET", f"/v1/boxes/{a.box}", a.key)
        assert mine["owner"] == a.id

        # Acting on its own box, and forking it: the fork is the workspace's too.
        click = {"actions": [{"type": "click", "at": {"x": 5, "y": 6}}]}
        await server.ok("POST", f"/v1/boxes/{a.box}/screens/0/actions", a.key, click)
        fork = (await server.ok("POST", f"/v1/boxes/{a.box}/fork", a.key, {}))["box"]
        assert fork["owner"] == a.id
        assert ids(await server.ok("GET", "/v1/boxes", a.key)) == {a.box, fork["id"]}
        assert ids(await server.ok("GET", "/v1/boxes", b.key)) == {b.box}

        # The fork's trace ends with a frame of its screen: a reads it, b cannot.
        trace = await server.ok("GET", f"/v1/boxes/{fork['id']}/trace", a.key)
        frames = [entry["frame"] for entry in trace["entries"] if entry["kind"] == "frame"]
        assert frames
        frame_path = f"/v1/boxes/{fork['id']}/trace/frames/{frames[-1]}"
        status, png = await server.call("GET", frame_path, a.key)
        assert status == 200 and png.startswith(b"\x89PNG")
        status, refused = await server.call("GET", frame_path, b.key)
        assert (status, refused["message"]) == (404, f"no box {fork['id']}")

        diff = await server.ok("GET", f"/v1/boxes/{a.box}/diff/{fork['id']}", a.key)
        assert (diff["a"], diff["b"], diff["matched"]) == (a.box, fork["id"], 1)
        status, refused = await server.call("GET", f"/v1/boxes/{a.box}/diff/{b.box}", a.key)
        assert (status, refused["code"]) == (404, "not_found")

        # Boxes named outside the path: the trace list, and a trace page's `with`.
        traces = await server.ok("GET", "/v1/traces", a.key)
        assert {t["trace"] for t in traces["traces"]} == {a.box, fork["id"]}
        assert {t["trace"] for t in (await server.ok("GET", "/v1/traces", b.key))["traces"]} == {
            b.box
        }
        everyone = {t["trace"] for t in (await server.ok("GET", "/v1/traces"))["traces"]}
        assert everyone >= {a.box, fork["id"], b.box}
        view = f"/v1/boxes/{b.box}/trace/view?with="
        theirs = await server.call("GET", view + a.box, b.key)
        absent = await server.call("GET", view + ABSENT, b.key)
        assert theirs[0] == absent[0] == 404 and theirs[1]["code"] == "not_found"
        assert anonymous(theirs[1], a.box) == anonymous(absent[1], ABSENT)
        status, page = await server.call(
            "GET", f"/v1/boxes/{fork['id']}/trace/view?with={a.box}", a.key
        )
        assert status == 200 and a.box.encode() in page

        # Events: each workspace reads its own; the server token reads both.
        def owners(page: dict[str, Any]) -> set[tuple[str | None, str | None]]:
            return {(event.get("owner"), event.get("box_id")) for event in page["events"]}

        assert owners(await server.ok("GET", "/v1/events?limit=1000", a.key)) == {
            (a.id, a.box),
            (a.id, fork["id"]),
        }
        assert owners(await server.ok("GET", "/v1/events?limit=1000", b.key)) == {(b.id, b.box)}
        assert owners(await server.ok("GET", "/v1/events?limit=1000")) >= {
            (a.id, a.box),
            (a.id, fork["id"]),
            (b.id, b.box),
        }


async def test_the_same_idempotency_key_in_two_workspaces_makes_two_boxes(
    tmp_path: Path,
) -> None:
    async with two_workspaces(tmp_path) as (server, a, b):
        made: list[dict[str, Any]] = []
        for key in (a.key, b.key, a.key):
            headers = {"Authorization": f"Bearer {key}", "idempotency-key": "launch-1"}
            async with server.http.post(
                server.url + "/v1/boxes", headers=headers, json={}
            ) as response:
                assert response.status == 200
                made.append(await response.json())
        assert made[0]["id"] != made[1]["id"]
        assert (made[0]["owner"], made[1]["owner"]) == (a.id, b.id)
        # Within one workspace the key still answers the first result.
        assert made[2]["id"] == made[0]["id"]


async def test_a_workspace_key_cannot_manage_keys_images_or_scheduled_work(
    tmp_path: Path,
) -> None:
    async with served_app(tmp_path, MemoryWorld()) as server:
        a = await workspace_with_a_box(server, "alpha")
        for method, path, body in (
            ("GET", "/v1/workspaces", None),
            ("POST", "/v1/workspaces", {"name": "mine"}),
            ("GET", "/v1/keys", None),
            ("POST", "/v1/keys", {"workspace": "alpha"}),
            ("DELETE", f"/v1/keys/{a.key_id}", None),
            ("DELETE", "/v1/runtimes/memory/images/abc", None),
            ("POST", "/v1/jobs/reap", None),
        ):
            status, refused = await server.call(method, path, a.key, body)
            assert (status, refused["code"]) == (403, "denied"), (method, path, refused)
        # What a key may do besides its boxes: read the runtimes and the images.
        await server.ok("GET", "/v1/runtimes", a.key)
        await server.ok("GET", "/v1/images", a.key)
        # Nothing of the above was done.
        kept = await server.ok("GET", "/v1/keys")
        assert [key["id"] for key in kept["keys"]] == [a.key_id]
        assert [ws["name"] for ws in (await server.ok("GET", "/v1/workspaces"))["workspaces"]] == [
            "alpha"
        ]


async def test_a_removed_key_is_refused_at_once_and_a_wrong_one_always(tmp_path: Path) -> None:
    async with served_app(tmp_path, MemoryWorld()) as server:
        a = await workspace_with_a_box(server, "alpha")
        second = await server.ok("POST", "/v1/keys", json={"workspace": a.id})
        await server.ok("GET", "/v1/boxes", second["key"])
        removed = await server.ok("DELETE", f"/v1/keys/{a.key_id}")
        assert removed == {
            "id": a.key_id,
            "workspace": a.id,
            "created_at_ms": removed["created_at_ms"],
        }
        for token in (a.key, a.key[:-1], "holm_sk_" + "A" * 43, None):
            status, refused = await server.call("GET", f"/v1/boxes/{a.box}", token)
            assert (status, refused["code"]) == (401, "denied"), token
        # The workspace's other key still opens its box.
        assert (await server.ok("GET", f"/v1/boxes/{a.box}", second["key"]))["owner"] == a.id
        status, _ = await server.call("DELETE", f"/v1/keys/{a.key_id}", TOKEN)
        assert status == 404


async def test_workspace_names_and_keys_are_checked(tmp_path: Path) -> None:
    async with served_app(tmp_path, MemoryWorld()) as server:
        await server.ok("POST", "/v1/workspaces", json={"name": "alpha"})
        status, refused = await server.call("POST", "/v1/workspaces", TOKEN, {"name": "alpha"})
        assert (status, refused["code"]) == (409, "denied")
        status, refused = await server.call("POST", "/v1/workspaces", TOKEN, {"name": "No Way"})
        assert (status, refused["code"]) == (400, "bad_request")
        status, refused = await server.call("POST", "/v1/keys", TOKEN, {"workspace": "gamma"})
        assert (status, refused["code"]) == (404, "not_found")


async def test_with_auth_off_a_key_still_sees_only_its_workspace(tmp_path: Path) -> None:
    world = MemoryWorld()
    async with served_app(tmp_path, world) as server:
        a = await workspace_with_a_box(server, "alpha")
        b = await workspace_with_a_box(server, "beta")
    async with served_app(tmp_path, world, server_token=None, server_auth="none") as server:
        assert ids(await server.ok("GET", "/v1/boxes", a.key)) == {a.box}
        status, refused = await server.call("GET", f"/v1/boxes/{b.box}", a.key)
        assert (status, refused["code"]) == (404, "not_found")
        # Without a key, the request is the server's.
        assert ids(await server.ok("GET", "/v1/boxes", None)) == {a.box, b.box}
