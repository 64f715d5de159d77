"""A box writes its run folder, where holmd finds the sockets the box serves: its agent's,
its viewers' and its DevTools'. holmd (root, on the host) connects to them by name, for the
box's caller and for whoever holds a ticket or a DevTools token of the box. A box that puts
a link there in place of a socket would lead holmd to any socket of the host: the Docker
Engine's (root on the host, and every container), another box's agent or viewer.

Here a real box, through its exec, replaces each of its sockets with a link to a socket of
the host (outside the box); holmd's DevTools relay, viewer relay and agent connection (as a
restarted holmd makes it) must reach the box's own socket or nothing, never the host's
(docs/security.md, "A box's sockets are its own").
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import aiohttp
import pytest
import pytest_asyncio
from http_kit import Client, ok_json
from local_kit import LocalServer, client_of, new_box, started

from holm.adapters.local.sandbox import AGENT_SITE
from holm.http.routes import cdp

pytestmark = [pytest.mark.desktop, pytest.mark.asyncio(loop_scope="module")]

# X displays no other test uses (tests/security/conftest.py has 420 to 439).
DISPLAY_BASE = 440
SOCKETS = ("devtools.sock", "vnc-0.sock", "agent.sock")


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def server() -> AsyncIterator[LocalServer]:
    async with started(display_base=DISPLAY_BASE, events_delay_ms=0) as running:
        yield running


async def box_exec(client: Client, box: str, *argv: str) -> str:
    done = await ok_json(await client.post(f"/v1/boxes/{box}/exec", json={"argv": list(argv)}))
    assert done["code"] == 0, done
    return str(done["stdout"])


async def viewer_reached(client: Client, box: str) -> bool:
    """Whether a view ticket's WebSocket got as far as a greeting."""
    path = f"/v1/boxes/{box}/screens/0/viewer/ticket"
    made = await ok_json(await client.post(path, json={"mode": "view"}))
    socket = f"/v1/boxes/{box}/screens/0/viewer/socket?ticket={made['ticket']}&mode=view"
    try:
        async with client.ws_connect(socket, protocols=("binary",)) as ws:
            await ws.send_bytes(b"RFB 003.008\n")
            first = await ws.receive(timeout=30)
            second = await ws.receive(timeout=30)
    except aiohttp.WSServerHandshakeError:
        return False
    return first.type == aiohttp.WSMsgType.BINARY and second.type == aiohttp.WSMsgType.BINARY


async def test_holmd_follows_no_link_a_box_puts_where_its_sockets_were(
    server: LocalServer,
) -> None:
    client = client_of(server)
    box = await new_box(server)
    run = server.state_dir / "boxes" / box / "run"
    # A socket of the host, out of the box's sight: what the Docker Engine's is to a box.
    reached: list[str] = []

    async def host_service(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        reached.append("connected")
        # Answered as the box's own server would be: a greeting, or DevTools' JSON.
        writer.write(b"RFB 003.008\n")
        first = await reader.read(64)
        if first.startswith(b"GET"):
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}")
        await writer.drain()
        writer.close()

    host_socket = server.state_dir / "host.sock"
    host = await asyncio.start_unix_server(host_service, path=str(host_socket))
    try:
        # A DevTools address made while the box's socket was its own.
        address = await ok_json(await client.post(f"/v1/boxes/{box}/cdp"))
        prefix = "/v1/cdp/" + address["url"].split("/v1/cdp/", 1)[1]
        assert (await client.get(f"{prefix}/json/version")).status == 200
        assert await viewer_reached(client, box)

        # The box puts a link to the host's socket in place of each of its own.
        swap = "; ".join(f"mv {n} {n}.own && ln -s {host_socket} {n}" for n in SOCKETS)
        await box_exec(client, box, "sh", "-c", f"cd /run/holm && {swap}")
        assert all((run / name).is_symlink() for name in SOCKETS)

        assert (await client.get(f"{prefix}/json/version")).status != 200
        assert reached == []
        assert not await viewer_reached(client, box)
        assert reached == []
        # A restarted holmd connects to the box's agent anew.
        await server.stop()
        client = await server.start(events_delay_ms=0)
        done = await client.post(f"/v1/boxes/{box}/exec", json={"argv": ["true"]})
        assert done.status != 200
        assert reached == []

        # With its own sockets back (put back from the host), the box answers again.
        for name in SOCKETS:
            (run / name).unlink()
            (run / f"{name}.own").rename(run / name)
        assert await box_exec(client, box, "echo", "back") == "back\n"
        address = await ok_json(await client.post(f"/v1/boxes/{box}/cdp"))
        prefix = "/v1/cdp/" + address["url"].split("/v1/cdp/", 1)[1]
        assert (await client.get(f"{prefix}/json/version")).status == 200
        assert await viewer_reached(client, box)
        assert reached == []
    finally:
        host.close()
        await host.wait_closed()
        await client_of(server).delete(
            f"/v1/boxes/{box}", headers={"x-holm-confirm-delete": "true"}
        )


# The box's own server on its DevTools socket, its agent's moved aside: a page, an answer
# larger than any of Chromium's, and a large WebSocket message. (aiohttp is in the agent's
# site-packages, which the box sees at AGENT_SITE.)
HOSTILE_DEVTOOLS = """
import os
from aiohttp import web

SOCKET = "/run/holm/devtools.sock"
PAGE = "<script>fetch('/v1/boxes', {method: 'POST', body: '{}'})</script>"


async def page(request):
    return web.Response(text=PAGE, content_type="text/html")


async def elsewhere(request):
    # Addresses of another host than the box's, as a box may name them.
    return web.json_response([{
        "url": "https://example.com/?ws=10.9.8.7:9/x",
        "webSocketDebuggerUrl": "ws://10.9.8.7:9222/devtools/page/P",
        "devtoolsFrontendUrl": "/devtools/inspector.html?ws=10.9.8.7:9222/devtools/page/P",
    }])


async def large(request):
    return web.Response(body=b"[" + b" " * (17 << 20) + b"]", content_type="application/json")


async def socket(request):
    ws = web.WebSocketResponse()
    await ws.prepare(request)
    await ws.send_bytes(b"x" * (2 << 20))
    await ws.send_str("small")
    await ws.receive()
    return ws


os.rename(SOCKET, SOCKET + ".own")
app = web.Application()
app.router.add_get("/json/version", page)
app.router.add_get("/json/protocol", large)
app.router.add_get("/json/list", elsewhere)
app.router.add_get("/devtools/page/large", socket)
if os.fork() == 0:
    os.setsid()
    quiet = os.open("/dev/null", os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(quiet, fd)
    with open("/tmp/devtools-server.pid", "w") as pid:
        pid.write(str(os.getpid()))
    web.run_app(app, path=SOCKET, print=None)
else:
    while not os.path.exists(SOCKET):
        os.sched_yield()
"""
PUT_BACK = (
    "kill $(cat /tmp/devtools-server.pid); cd /run/holm && mv -f devtools.sock.own devtools.sock"
)


@contextlib.asynccontextmanager
async def hostile_devtools(server: LocalServer) -> AsyncIterator[tuple[Client, str, str]]:
    """A box serving HOSTILE_DEVTOOLS, the relay's prefix of a DevTools address made for it
    before, and the box; then Chromium's own DevTools again."""
    client = client_of(server)
    box = await new_box(server)
    try:
        address = await ok_json(await client.post(f"/v1/boxes/{box}/cdp"))
        prefix = "/v1/cdp/" + address["url"].split("/v1/cdp/", 1)[1]
        site = f"PYTHONPATH={AGENT_SITE}"
        await box_exec(client, box, "env", site, "python3", "-c", HOSTILE_DEVTOOLS)
        yield client, prefix, box
        await box_exec(client, box, "sh", "-c", PUT_BACK)
        # Chromium's own answers: JSON stays JSON.
        version = await client.get(f"{prefix}/json/version")
        assert version.content_type == "application/json" and "Browser" in await version.json()
    finally:
        await client.delete(f"/v1/boxes/{box}", headers={"x-holm-confirm-delete": "true"})


async def test_what_a_box_serves_through_the_devtools_relay_is_no_page_of_holmd(
    server: LocalServer,
) -> None:
    """The DevTools relay answers on holmd's own origin: a page there would run its script
    as the server's own page (with auth off, one the guards let drive every box)."""
    async with hostile_devtools(server) as (client, prefix, _):
        answer = await client.get(f"{prefix}/json/version")
        assert answer.status == 200 and "<script>" in await answer.text()
        assert answer.content_type == "text/plain"
        assert answer.headers["X-Content-Type-Options"] == "nosniff"


async def test_the_devtools_relay_holds_no_more_of_a_boxs_answer_than_its_limit(
    server: LocalServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The relay holds each answer of the box whole before it passes it on: without a
    limit, a box would grow holmd's memory as far as it likes."""
    # A WebSocket message over the relay's limit, scaled down (256 MiB would be a slow test).
    monkeypatch.setattr(cdp, "MAX_MESSAGE", 1 << 20)
    async with hostile_devtools(server) as (client, prefix, _):
        large = await client.get(f"{prefix}/json/protocol")
        assert large.status == 503 and len(await large.read()) < 1000
        async with client.ws_connect(f"{prefix}/devtools/page/large") as ws:
            first = await ws.receive(timeout=60)
        assert first.type == aiohttp.WSMsgType.CLOSE, first.type


async def test_the_devtools_relay_names_no_address_a_box_gives_but_its_own(
    server: LocalServer,
) -> None:
    """A client connects where the relay's answers say: an address of another host that a
    box names would send it there, out of the relay."""
    async with hostile_devtools(server) as (client, prefix, box):
        [page] = await ok_json(await client.get(f"{prefix}/json/list"))
        token = prefix.split("/v1/cdp/")[1]
        assert page["webSocketDebuggerUrl"].endswith(f"/v1/cdp/{token}/devtools/page/P")
        assert "10.9.8.7" not in page["devtoolsFrontendUrl"]
        # A page's own URL is the page's, whatever it holds.
        assert page["url"] == "https://example.com/?ws=10.9.8.7:9/x"
        # No browser address at all: no DevTools address is made, and no 500.
        refused = await client.post(f"/v1/boxes/{box}/cdp")
        assert refused.status == 503, await refused.text()
