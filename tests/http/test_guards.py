"""What keeps the API from being driven by a web page: a body not said to be JSON gets 415,
a request a browser marks as coming from another site or origin gets 403, and a Host that
does not name the server (DNS rebinding) gets 421; each refused request does nothing. The
routes a ticket or nothing guards pass (docs/api.md, "Browsers")."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from http_kit import Client, MakeClient, error_of, new_box, ok_json, trace_entries

from holm.config import load_config

EXEC = b'{"argv": ["echo", "pwned"]}'
TOKEN = "tok-guards-0123456789"


async def quiet_box(client: Client) -> str:
    """A new box whose trace has settled: its first frame, which the frame watcher records
    a moment after the box is ready, is in. Nothing is recorded after it but what a request
    does."""
    box = await new_box(client)
    for _ in range(500):
        if any(entry["kind"] == "frame" for entry in await trace_entries(client, box)):
            return box
        await asyncio.sleep(0.02)
    raise AssertionError("the box's first frame was never recorded")


async def everything(client: Client, box_id: str) -> dict[str, Any]:
    """What a refused request must leave as it was: the boxes, one box's trace, the feed."""
    return {
        "boxes": (await ok_json(await client.get("/v1/boxes")))["boxes"],
        "trace": await trace_entries(client, box_id),
        "events": (await ok_json(await client.get("/v1/events")))["events"],
    }


def own_host(client: Client) -> str:
    return f"127.0.0.1:{client.port}"


async def test_a_body_not_said_to_be_json_gets_415_and_does_nothing(
    make_client: MakeClient,
) -> None:
    client = await make_client(events_delay_ms=0)
    box = await quiet_box(client)
    before = await everything(client, box)
    refused: list[tuple[str, str, dict[str, Any]]] = [
        # What a cross-site form or a no-cors fetch can send without asking first.
        ("POST", f"/v1/boxes/{box}/exec", {"headers": {"Content-Type": "text/plain"}}),
        ("POST", "/v1/boxes", {"headers": {"Content-Type": "text/plain;charset=UTF-8"}}),
        ("POST", f"/v1/boxes/{box}/exec", {"headers": {"Content-Type": "multipart/form-data"}}),
        (
            "POST",
            f"/v1/boxes/{box}/exec",
            {"headers": {"Content-Type": "application/x-www-form-urlencoded"}},
        ),
        # A Blob without a type: the body goes with no content-type at all.
        ("POST", f"/v1/boxes/{box}/exec", {"skip_auto_headers": ["Content-Type"]}),
        ("PUT", f"/v1/boxes/{box}/files", {"headers": {"Content-Type": "text/plain"}}),
        (
            "POST",
            f"/v1/boxes/{box}/screens/0/actions",
            {"headers": {"Content-Type": "text/plain", "idempotency-key": "k1"}},
        ),
        ("POST", f"/v1/boxes/{box}/pause", {"headers": {"Content-Type": "text/plain"}}),
    ]
    bodies = {
        "/v1/boxes": b"{}",
        f"/v1/boxes/{box}/files": b'{"path": "/tmp/x", "contents_base64": "eA=="}',
        f"/v1/boxes/{box}/screens/0/actions": b'{"actions": [{"type": "cursor"}]}',
    }
    for method, path, options in refused:
        response = await client.request(method, path, data=bodies.get(path, EXEC), **options)
        message = await error_of(response, 415, "bad_request")
        assert "application/json" in message
    assert await everything(client, box) == before
    # The same body said to be JSON (a charset is fine) does the work, so the check above
    # would have seen it.
    headers = {"Content-Type": "application/json; charset=utf-8"}
    ran = await ok_json(await client.post(f"/v1/boxes/{box}/exec", data=EXEC, headers=headers))
    assert ran["stdout"].strip() == "pwned"
    assert await trace_entries(client, box) != before["trace"]


async def test_a_request_without_a_body_passes_whatever_its_type(
    make_client: MakeClient,
) -> None:
    client = await make_client()
    box = await new_box(client)
    # aiohttp says application/octet-stream on an empty POST; curl -d '' says a form.
    for content_type in ("application/octet-stream", "application/x-www-form-urlencoded"):
        response = await client.post(
            f"/v1/boxes/{box}/pause", data=b"", headers={"Content-Type": content_type}
        )
        assert (await ok_json(response))["state"] == "paused"
        await ok_json(await client.post(f"/v1/boxes/{box}/resume"))
    created = await client.post("/v1/boxes", skip_auto_headers=["Content-Type"])
    assert (await ok_json(created))["state"] == "ready"


CROSS_SITE: list[dict[str, str]] = [
    {"Sec-Fetch-Site": "cross-site"},
    # Another port of the same host is the same site, and another origin.
    {"Sec-Fetch-Site": "same-site"},
    {"Origin": "http://evil.example"},
    {"Origin": "null"},
    {"Origin": "http://127.0.0.1:1"},
    {"Origin": "http://localhost"},
    {"Origin": "https://127.0.0.1"},
    {"Sec-Fetch-Site": "cross-site", "Origin": "http://evil.example"},
]


@pytest.mark.parametrize("headers", CROSS_SITE, ids=lambda h: " ".join(h.values()))
async def test_a_request_from_a_page_of_another_origin_gets_403_and_does_nothing(
    make_client: MakeClient, headers: dict[str, str]
) -> None:
    client = await make_client(events_delay_ms=0)
    box = await quiet_box(client)
    before = await everything(client, box)
    for method, path, body in (
        ("POST", "/v1/boxes", {}),
        ("POST", f"/v1/boxes/{box}/exec", {"argv": ["echo", "pwned"]}),
        ("DELETE", f"/v1/boxes/{box}", None),
        ("GET", "/v1/boxes", None),
        ("GET", "/v1/jobs/reap", None),
    ):
        sent = {**headers, "x-holm-confirm-delete": "true"}
        response = await client.request(method, path, json=body, headers=sent)
        assert "another origin" in await error_of(response, 403, "denied")
    assert await everything(client, box) == before


async def test_a_page_of_the_server_itself_passes(make_client: MakeClient) -> None:
    client = await make_client()
    for headers in (
        {"Sec-Fetch-Site": "same-origin", "Origin": f"http://{own_host(client)}"},
        # Typed into the address bar, or opened from a bookmark.
        {"Sec-Fetch-Site": "none"},
        {"Origin": f"http://{own_host(client)}"},
        {"Origin": f"HTTP://{own_host(client).upper()}"},
    ):
        await ok_json(await client.post("/v1/boxes", json={}, headers=headers))


async def test_a_token_does_not_let_a_cross_site_request_through(
    make_client: MakeClient,
) -> None:
    client = await make_client(server_token=TOKEN)
    headers = {"Authorization": f"Bearer {TOKEN}", "Sec-Fetch-Site": "cross-site"}
    await error_of(await client.post("/v1/boxes", json={}, headers=headers), 403, "denied")
    assert (
        await ok_json(await client.get("/v1/boxes", headers={**headers, "Sec-Fetch-Site": "none"}))
    )["boxes"] == []


@pytest.mark.parametrize(
    "host",
    [
        "evil.example:{port}",
        "evil.example",
        "127.0.0.1.nip.io:{port}",
        "localhost.evil.example:{port}",
        # Loopback, but not the port the server listens on.
        "127.0.0.1:1",
        "localhost",
        "evil.example@127.0.0.1:{port}",
        "127.0.0.1:{port}/x",
        "[::1",
    ],
)
async def test_a_host_that_does_not_name_the_server_gets_421_and_does_nothing(
    make_client: MakeClient, host: str
) -> None:
    client = await make_client(events_delay_ms=0)
    box = await quiet_box(client)
    before = await everything(client, box)
    headers = {"Host": host.format(port=client.port)}
    for method, path, body in (
        ("POST", "/v1/boxes", {}),
        ("POST", f"/v1/boxes/{box}/exec", {"argv": ["echo", "pwned"]}),
        ("GET", "/v1/boxes", None),
    ):
        response = await client.request(method, path, json=body, headers=headers)
        message = await error_of(response, 421, "denied")
        assert "HOLM_ALLOWED_HOSTS" in message
    assert await everything(client, box) == before


async def test_the_server_answers_to_its_own_addresses(make_client: MakeClient) -> None:
    client = await make_client()
    port = client.port
    for host in (f"127.0.0.1:{port}", f"localhost:{port}", f"LocalHost:{port}", f"[::1]:{port}"):
        await ok_json(await client.get("/v1/boxes", headers={"Host": host}))


async def test_the_public_url_and_the_allowed_hosts_are_its_names_too(
    make_client: MakeClient,
) -> None:
    client = await make_client(
        public_url="https://holm.example.com/",
        allowed_hosts=["box-host.internal", "10.1.2.3", "Mixed.Example"],
    )
    for host in (
        "holm.example.com",
        "holm.example.com:443",
        "box-host.internal:9999",
        "10.1.2.3:8080",
        "mixed.example",
    ):
        await ok_json(await client.get("/v1/boxes", headers={"Host": host}))
    await error_of(await client.get("/v1/boxes", headers={"Host": "other.example"}), 421, "denied")
    # A page served at the public URL (behind a proxy) is the server's own.
    own = {"Host": "holm.example.com", "Origin": "https://holm.example.com"}
    await ok_json(await client.post("/v1/boxes", json={}, headers=own))
    foreign = {"Host": "holm.example.com", "Origin": "https://evil.example"}
    await error_of(await client.post("/v1/boxes", json={}, headers=foreign), 403, "denied")


async def test_a_star_takes_any_host(make_client: MakeClient) -> None:
    client = await make_client(allowed_hosts=["*"])
    await ok_json(await client.get("/v1/boxes", headers={"Host": "anything.example"}))


def test_allowed_hosts_are_read_as_a_list() -> None:
    config = load_config({"HOLM_ALLOWED_HOSTS": "a.example, b.example  c.example,"})
    assert config.allowed_hosts == ("a.example", "b.example", "c.example")
    assert load_config({}).allowed_hosts == ()


async def test_a_malformed_allowed_host_stops_the_start(make_client: MakeClient) -> None:
    with pytest.raises(ValueError, match="HOLM_ALLOWED_HOSTS"):
        await make_client(allowed_hosts=["a/b"])


BROWSER_AND_ELSEWHERE = {
    "Host": "evil.example",
    "Sec-Fetch-Site": "cross-site",
    "Origin": "http://evil.example",
    "Content-Type": "text/plain",
}


async def test_health_and_the_ticket_routes_are_not_guarded(make_client: MakeClient) -> None:
    """They change nothing, or a ticket in their URL authorises them: a page may ask."""
    client = await make_client(server_token=TOKEN)
    headers = BROWSER_AND_ELSEWHERE
    assert (await ok_json(await client.get("/v1/health", headers=headers)))["ok"] is True
    await ok_json(await client.get("/v1/openapi.json", headers=headers))
    # The viewer socket refuses for its ticket (401 denied, no bearer challenge), not for
    # a guard's reason.
    socket = await client.get("/v1/boxes/box_x/screens/0/viewer/socket?ticket=t", headers=headers)
    assert "ticket" in await error_of(socket, 401, "denied")
    assert "WWW-Authenticate" not in socket.headers
    # The DevTools relay: an unknown token is the answer (401, no bearer challenge either),
    # not a guard's refusal.
    for method, path in (
        ("GET", "/v1/cdp/t/json"),
        ("PUT", "/v1/cdp/t/json/new"),
        ("GET", "/v1/cdp/t/devtools/page/1"),
    ):
        response = await client.request(method, path, headers=headers, data=b"x")
        assert "DevTools address" in await error_of(response, 401, "denied")
        assert "WWW-Authenticate" not in response.headers


async def test_no_answer_gives_a_browser_leave_to_read_it(make_client: MakeClient) -> None:
    client = await make_client()
    preflight = await client.options(
        "/v1/boxes",
        headers={
            "Origin": "http://evil.example",
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "content-type",
        },
    )
    assert preflight.status == 405
    assert not any(name.lower().startswith("access-control-") for name in preflight.headers)
    answer = await client.get("/v1/boxes")
    assert not any(name.lower().startswith("access-control-") for name in answer.headers)
