"""The error table of rest-api.md, row by row: each failure answers the error body
`{"code", "message", "retryable"}` with its code and status, and nothing else; lower-layer
errors never leak as a bare 500."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest
from http_kit import Client, MakeClient, engine_of, error_of, new_box, ok_json

from holm.adapters.memory.runtime import MemoryDesktop, MemoryRuntime, MemoryWorld
from holm.events import MemoryStore
from holm.http.app import declared_routes
from holm.wire.entries import Entry
from holm.wire.runtime import Capabilities

CLICK = {"actions": [{"type": "click", "at": {"x": 1, "y": 1}}]}
CONFIRM = {"x-holm-confirm-delete": "true"}
# A body or query each route that needs one takes, by the end of its path, so that a call
# passes decoding and meets the box's state.
_BODIES: dict[str, dict[str, Any]] = {
    "/apps": {"apps": ["gimp"]},
    "/actions": CLICK,
    "/clipboard": {"text": "x"},
    "/arrange": {"how": "maximise"},
    "/page/element": {"op": "focus", "query": "x"},
    "/page/evaluate": {"expression": "1"},
    "/cookies": {"cookies": [{"name": "a", "value": "b"}], "url": "http://x/"},
    "/desktop/node": {"op": "tree"},
    "/state/load": {"session_json": "{}"},
    "/exec": {"argv": ["true"]},
    "/files": {"path": "/tmp/a", "contents_base64": ""},
    "/files/grep": {"pattern": "x"},
    "/computer/anthropic": {"action": "screenshot"},
    "/computer/openai": {"type": "screenshot"},
}
_QUERIES = {
    "/files": "path=/tmp",
    "/files/list": "path=/tmp",
    "/files/glob": "pattern=x",
    "/page/find": "q=x",
}
# The box's history, which stays readable after it is removed (and while it starts).
# The trace outlives its box: these read it, or (shredding its data key) change what of it
# can be opened, on a removed box too.
_HISTORY = ("/trace", "/trace/frames/{hash}", "/trace/view", "/diff/{b}", "/trace/secrets")


def calls_into(box: str) -> list[tuple[str, str, dict[str, Any] | None]]:
    """One call of each route that names a box by its bearer token (a ticket's routes
    check the ticket first), with a body or query that decodes; the history reads aside."""
    calls = []
    for route in declared_routes():
        if "{id}" not in route.path or route.auth == "none" or route.path.endswith(_HISTORY):
            continue
        path = route.path.replace("{id}", box).replace("{screen:\\d+}", "0")
        path = path.replace("{window}", "0x1").replace("{tab}", "t1")
        sends = route.method in ("POST", "PUT")
        body = next((b for end, b in _BODIES.items() if path.endswith(end)), {})
        query = next((q for end, q in _QUERIES.items() if path.endswith(end)), "")
        if sends:
            calls.append((route.method, path, body))
        else:
            calls.append((route.method, f"{path}?{query}" if query else path, None))
    return calls


# bad_request, 400 (and the statuses chosen for what the table does not name)


async def test_malformed_json(client: Client) -> None:
    response = await client.post(
        "/v1/boxes", data=b'{"spec": ', headers={"content-type": "application/json"}
    )
    assert "not valid JSON" in await error_of(response, 400, "bad_request")


async def test_an_unknown_key_is_named_with_its_path(client: Client) -> None:
    box = await new_box(client)
    body = {"actions": [{"type": "click", "att": {"x": 1, "y": 1}}]}
    response = await client.post(f"/v1/boxes/{box}/screens/0/actions", json=body)
    message = await error_of(response, 400, "bad_request")
    assert "unknown field `att`" in message and "`$.actions[0]`" in message
    response = await client.post("/v1/boxes", json={"spec": {"desktop": {"widht": 800}}})
    assert "`widht`" in await error_of(response, 400, "bad_request")


async def test_a_wrong_type_is_named(client: Client) -> None:
    response = await client.post("/v1/boxes", json={"spec": {"desktop": {"width": "wide"}}})
    message = await error_of(response, 400, "bad_request")
    assert "Expected `int | null`, got `str`" in message and "$.spec.desktop.width" in message


@pytest.mark.parametrize(
    ("body", "named"),
    [
        ({"placement": {"expires_after_secs": 59}}, "expires_after_secs must be at least 60"),
        ({"placement": {"idle_timeout_secs": 30}}, "idle_timeout_secs must be at least 60"),
        ({"spec": {"desktop": {"screens": 9}}}, "screens must be 1 to 8"),
        ({"spec": {"apps": {"thing": {}}}}, "spec.apps.thing needs a command"),
        ({"spec": {"apps": {"t": {"command": []}}}}, "spec.apps.t.command is empty"),
        (
            {"spec": {"apps": {"gimp": {"packages": ["-oDebug=1"]}}}},
            "spec.apps.gimp.packages has an invalid package name",
        ),
        ({"spec": {"desktop": {"packages": ["-y"]}}}, "invalid package name '-y'"),
        ({"spec": {"policy": {"advertise": "a.example/#"}}}, "advertise must be a host name"),
        # An IPv6 zone may hold `]`, `@` and `#`: `http://[::1%]@evil.example:80#]:8080/…`
        # is evil.example's page, with the ticket in its fragment.
        (
            {"spec": {"policy": {"advertise": "::1%]@evil.example:80#"}}},
            "advertise must be a host name",
        ),
    ],
)
async def test_minimums_and_limits_of_a_create(
    client: Client, body: dict[str, Any], named: str
) -> None:
    assert named in await error_of(await client.post("/v1/boxes", json=body), 400, "bad_request")


async def test_bad_query_values(client: Client) -> None:
    box = await new_box(client)
    for query in ("limit=501", "limit=0", "after=x"):
        response = await client.get(f"/v1/boxes/{box}/trace?{query}")
        assert "bad query" in await error_of(response, 400, "bad_request")
    for query in ("scale=0", "scale=401", "x=1"):
        response = await client.get(f"/v1/boxes/{box}/screens/0/frame?{query}")
        await error_of(response, 400, "bad_request")
    response = await client.get(f"/v1/boxes/{box}/screens/0/frame?colour=red")
    assert "unknown field `colour`" in await error_of(response, 400, "bad_request")


async def test_exec_longer_than_ten_minutes(client: Client) -> None:
    box = await new_box(client)
    body = {"argv": ["true"], "timeout_ms": 600_001}
    response = await client.post(f"/v1/boxes/{box}/exec", json=body)
    assert "<= 600000" in await error_of(response, 400, "bad_request")


async def test_delete_needs_its_confirmation_header(client: Client) -> None:
    box = await new_box(client)
    message = await error_of(await client.delete(f"/v1/boxes/{box}"), 400, "bad_request")
    assert "x-holm-confirm-delete: true" in message
    await ok_json(await client.get(f"/v1/boxes/{box}"))


async def test_a_method_a_path_does_not_take(client: Client) -> None:
    response = await client.put("/v1/health")
    assert "PUT is not allowed" in await error_of(response, 405, "bad_request")
    assert response.headers["Allow"] == "GET, HEAD"


async def test_a_body_over_the_limit(make_client: MakeClient) -> None:
    client = await make_client(max_body_bytes=1000)
    big = {"spec": {"desktop": {"packages": ["x" * 2000]}}}
    message = await error_of(await client.post("/v1/boxes", json=big), 413, "bad_request")
    assert "larger than 1000 bytes" in message

    async def chunks() -> Any:
        for _ in range(4):
            yield b" " * 400

    chunked = await client.post(
        "/v1/boxes", data=chunks(), headers={"content-type": "application/json"}
    )
    await error_of(chunked, 413, "bad_request")


# unsupported, 400


async def test_what_the_runtime_cannot_do(client: Client) -> None:
    response = await client.post("/v1/boxes", json={"spec": {"desktop": {"packages": ["jq"]}}})
    assert "cannot give packages" in await error_of(response, 400, "unsupported")
    box = await new_box(client)
    response = await client.post(f"/v1/boxes/{box}/apps", json={"apps": ["xterm"]})
    await error_of(response, 400, "unsupported")
    response = await client.post(f"/v1/boxes/{box}/fork", json={"mode": "snapshot"})
    assert "snapshot" in await error_of(response, 400, "unsupported")


# not_found, 404


async def test_what_does_not_exist(client: Client) -> None:
    await error_of(await client.get("/v1/boxes/box_nope"), 404, "not_found")
    await error_of(
        await client.post("/v1/boxes/box_nope/exec", json={"argv": ["true"]}), 404, "not_found"
    )
    await error_of(await client.get("/v1/boxes/box_nope/trace"), 404, "not_found")
    await error_of(await client.get("/v1/nothing/here"), 404, "not_found")
    await error_of(await client.get("/v1/runtimes/cloud"), 404, "not_found")
    response = await client.post("/v1/boxes", json={"placement": {"runtime": "cloud"}})
    await error_of(response, 404, "not_found")
    box = await new_box(client)
    await error_of(await client.get(f"/v1/boxes/{box}/trace/frames/px:00"), 404, "not_found")
    await error_of(await client.get(f"/v1/boxes/{box}/files?path=/nope"), 404, "not_found")
    response = await client.post(f"/v1/boxes/{box}/screens/1/actions", json=CLICK)
    assert "no screen 1" in await error_of(response, 404, "not_found")


# gone, 410


async def test_a_removed_box_answers_gone_but_its_trace_stays(client: Client) -> None:
    box = await new_box(client)
    await ok_json(
        await client.delete(f"/v1/boxes/{box}", headers={"x-holm-confirm-delete": "true"})
    )
    for method, path, body in [
        ("GET", f"/v1/boxes/{box}", None),
        ("POST", f"/v1/boxes/{box}/screens/0/actions", CLICK),
        ("POST", f"/v1/boxes/{box}/exec", {"argv": ["true"]}),
        ("POST", f"/v1/boxes/{box}/pause", None),
        ("GET", f"/v1/boxes/{box}/screens/0/frame", None),
    ]:
        response = await client.request(method, path, json=body)
        await error_of(response, 410, "gone")
    response = await client.delete(f"/v1/boxes/{box}", headers={"x-holm-confirm-delete": "true"})
    await error_of(response, 410, "gone")
    for method, path, body in calls_into(box):
        if not path.endswith("/fork"):
            # "each later call to it answers 410" (rest-api.md); a fork reads its trace.
            response = await client.request(method, path, json=body, headers=CONFIRM)
            await error_of(response, 410, "gone")
    listed = await ok_json(await client.get("/v1/boxes"))
    assert listed["boxes"] == []
    page = await ok_json(await client.get(f"/v1/boxes/{box}/trace"))
    assert page["entries"][-1]["kind"] == "box_deleted"


# denied, 409 (401 for a missing token: test_auth.py)


async def test_a_person_holding_the_screen(client: Client) -> None:
    box = await new_box(client)
    engine = engine_of(client)
    # As the takeover route does, without the viewer the memory runtime has none of.
    assert await engine.take_over(box, 0)
    response = await client.post(f"/v1/boxes/{box}/screens/0/actions", json=CLICK)
    message = await error_of(response, 409, "denied")
    assert "a person has screen 0" in message
    body = {"text": "x"}
    response = await client.put(f"/v1/boxes/{box}/screens/0/clipboard", json=body)
    await error_of(response, 409, "denied")


async def test_a_starting_box_refuses_calls(make_client: MakeClient) -> None:
    client = await make_client(jobs="queue")
    created = await client.post("/v1/boxes", json={})
    assert created.status == 202
    box = (await created.json())["id"]
    response = await client.post(f"/v1/boxes/{box}/exec", json={"argv": ["true"]})
    assert "starting" in await error_of(response, 409, "denied")
    # "A box that is starting or failed refuses other calls with 409": all but reading it
    # and deleting it.
    for method, path, body in calls_into(box):
        if path != f"/v1/boxes/{box}":
            response = await client.request(method, path, json=body, headers=CONFIRM)
            await error_of(response, 409, "denied")


# screen_unavailable, 409


async def test_a_paused_box(client: Client) -> None:
    box = await new_box(client)
    await ok_json(await client.post(f"/v1/boxes/{box}/pause"))
    response = await client.post(f"/v1/boxes/{box}/screens/0/actions", json=CLICK)
    assert "paused" in await error_of(response, 409, "screen_unavailable")


# failed, 422


async def test_a_launch_the_runtime_could_not_do(
    make_client: MakeClient, world: MemoryWorld
) -> None:
    runtime = MemoryRuntime(world=world)
    runtime.fail_create = "Xvfb did not start"
    client = await make_client(runtime=runtime)
    response = await client.post("/v1/boxes", json={})
    assert "Xvfb did not start" in await error_of(response, 422, "failed")
    (box,) = (await ok_json(await client.get("/v1/boxes")))["boxes"]
    assert (box["state"], box["reason"]) == ("failed", "Xvfb did not start")
    for method, path, body in calls_into(box["id"]):
        if path != f"/v1/boxes/{box['id']}":
            response = await client.request(method, path, json=body, headers=CONFIRM)
            await error_of(response, 409, "denied")


# transport, 502


class LostDesktopRuntime(MemoryRuntime):
    """A runtime whose desktops fail with a raw OS error, as an unmapped lower layer would."""

    async def desktop(self, box_id: str) -> MemoryDesktop:
        raise ConnectionResetError(104, "Connection reset by peer")


async def test_a_lower_layer_error_becomes_transport(
    make_client: MakeClient, world: MemoryWorld
) -> None:
    client = await make_client(runtime=LostDesktopRuntime(world=world))
    box = await new_box(client)
    response = await client.post(f"/v1/boxes/{box}/exec", json={"argv": ["true"]})
    message = await error_of(response, 502, "transport")
    assert "Connection reset by peer" in message
    assert (await response.json())["retryable"] is True


# unavailable, 503


class FailingStore(MemoryStore):
    broken = False

    async def append(self, trace: str, entries: Sequence[Entry]) -> list[Entry]:
        if self.broken:
            raise OSError(28, "No space left on device")
        return await super().append(trace, entries)


async def test_a_store_that_fails(make_client: MakeClient, world: MemoryWorld) -> None:
    store = FailingStore()
    client = await make_client(store=store)
    box = await new_box(client)
    store.broken = True
    response = await client.post(f"/v1/boxes/{box}/exec", json={"argv": ["true"]})
    assert "No space left" in await error_of(response, 503, "unavailable")


# timeout, 504


async def test_a_wait_that_did_not_end_in_time(client: Client) -> None:
    box = await new_box(client)
    body = {"class": "gimp", "within_ms": 10}
    response = await client.post(f"/v1/boxes/{box}/screens/0/windows/wait", json=body)
    await error_of(response, 504, "timeout")


# internal, 500


class BuggyRuntime(MemoryRuntime):
    def can(self) -> Capabilities:
        raise RuntimeError("a bug with a secret path /srv/secret")


async def test_a_bug_is_an_internal_error_that_does_not_leak_details(
    make_client: MakeClient, world: MemoryWorld
) -> None:
    client = await make_client(runtime=BuggyRuntime(world=world))
    message = await error_of(await client.get("/v1/runtimes"), 500, "internal")
    assert "/srv/secret" not in message


async def test_errors_under_load_keep_their_shape(client: Client) -> None:
    answers = await asyncio.gather(*(client.get(f"/v1/boxes/box_{n}") for n in range(50)))
    for response in answers:
        await error_of(response, 404, "not_found")
