"""Tickets and viewer routes over the in-memory double (no real screens)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import aiohttp
import msgspec
from http_kit import Client, MakeClient, error_of, new_box, ok_json

from holm.adapters.memory.runtime import MemoryRuntime, MemoryWorld
from holm.http.viewer.relay import SERVER_VERSION
from holm.streams import Stream
from holm.wire.runtime import Capabilities, StreamKind


async def test_a_runtime_without_viewers_says_so(make_client: MakeClient) -> None:
    client = await make_client()
    box = await new_box(client)
    await error_of(
        await client.post(f"/v1/boxes/{box}/screens/0/viewer/ticket", json={}), 400, "unsupported"
    )
    await error_of(
        await client.post("/v1/boxes/box_none/screens/0/viewer/ticket", json={}), 404, "not_found"
    )
    await error_of(
        await client.post(f"/v1/boxes/{box}/screens/0/viewer/ticket", json={"mode": "drive"}),
        400,
        "bad_request",
    )


async def test_the_socket_wants_a_ticket_and_no_token(make_client: MakeClient) -> None:
    client = await make_client(server_token="s3cret")
    path = "/v1/boxes/box_x/screens/0/viewer/socket?ticket=nope"
    # Refused for the ticket, not for a missing bearer token: 401 with code denied.
    message = await error_of(await client.get(path), 401, "denied")
    assert "ticket" in message


class SocketRuntime(MemoryRuntime):
    """The memory double whose screens' viewer is a Unix socket the test serves."""

    socket_path: Path

    def can(self) -> Capabilities:
        return msgspec.structs.replace(super().can(), viewer=True)

    async def open_stream(
        self, box_id: str, kind: StreamKind, screen: int = 0, *, limit: int = 1 << 16
    ) -> Stream:
        await self.desktop(box_id)
        assert kind == "vnc"
        return await asyncio.open_unix_connection(self.socket_path, limit=limit)


async def socket_client(make_client: MakeClient, world: MemoryWorld, path: Path) -> Client:
    """A test server whose boxes' viewer is the Unix socket at `path`."""
    runtime = SocketRuntime(server_id="srv", world=world)
    runtime.socket_path = path
    return await make_client(runtime=runtime)


@contextlib.asynccontextmanager
async def relayed_to(
    serve: Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]],
    make_client: MakeClient,
    world: MemoryWorld,
    tmp_path: Path,
) -> AsyncIterator[aiohttp.ClientWebSocketResponse]:
    """A viewer WebSocket, through the relay, to a VNC server that `serve` plays."""
    path = tmp_path / "vnc.sock"
    server = await asyncio.start_unix_server(serve, str(path))
    client = await socket_client(make_client, world, path)
    box = await new_box(client)
    made = await ok_json(await client.post(f"/v1/boxes/{box}/screens/0/viewer/ticket", json={}))
    ws = await client.ws_connect(
        f"/v1/boxes/{box}/screens/0/viewer/socket?ticket={made['ticket']}",
        protocols=("binary",),
        autoclose=False,
    )
    try:
        yield ws
    finally:
        await ws.close()
        server.close()


async def test_a_viewer_that_does_not_read_holds_back_the_box_not_holdmd_s_memory(
    make_client: MakeClient, world: MemoryWorld, tmp_path: Path
) -> None:
    """A VNC server that sends without end to a viewer that reads nothing: the relay stops
    reading the server once the viewer's side is full, so what the server manages to send
    levels off at a few buffers' worth instead of growing in holmd."""
    sent = 0
    plateau = asyncio.Event()

    async def flood(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal sent
        chunk = b"\0" * 65536
        try:
            # The greeting the relay checks (and drops), then a flood.
            writer.write(SERVER_VERSION)
            while True:
                writer.write(chunk)
                await writer.drain()
                sent += len(chunk)
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            plateau.set()

    async with relayed_to(flood, make_client, world, tmp_path):
        # Poll (bounded) until what the server sent stops growing.
        last = -1
        for _ in range(200):
            await asyncio.sleep(0.05)
            if sent == last:
                break
            last = sent
        assert 0 < sent < 32 * 1024 * 1024, sent


async def test_the_relay_greets_the_viewer_before_the_server_does(
    make_client: MakeClient, world: MemoryWorld, tmp_path: Path
) -> None:
    """A server that, like LibVNCServer, would rather hear its client's first bytes before
    it greets: the viewer gets RFB 3.8 at once, its answer reaches the server, and from then
    on both see each other's bytes, the server's own greeting dropped."""

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        heard = await reader.readexactly(12)
        writer.write(SERVER_VERSION + b"\x01\x01heard " + heard)
        await writer.drain()
        await reader.read()

    async with relayed_to(serve, make_client, world, tmp_path) as ws:
        assert await ws.receive_bytes(timeout=10) == SERVER_VERSION
        await ws.send_bytes(b"RFB 003.008\n")
        got = b""
        while len(got) < 20:
            got += await ws.receive_bytes(timeout=10)
        assert got == b"\x01\x01heard RFB 003.008\n"


async def test_a_server_of_another_rfb_version_is_cut_off(
    make_client: MakeClient, world: MemoryWorld, tmp_path: Path
) -> None:
    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(b"RFB 003.003\n\x00\x00\x00\x01")
        await writer.drain()
        await reader.read()

    async with relayed_to(serve, make_client, world, tmp_path) as ws:
        assert await ws.receive_bytes(timeout=10) == SERVER_VERSION
        await ws.send_bytes(b"RFB 003.008\n")
        closing = await ws.receive(timeout=10)
        assert closing.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED)


async def test_a_box_s_viewer_urls_name_the_host_its_spec_advertises(
    make_client: MakeClient, world: MemoryWorld, tmp_path: Path
) -> None:
    # rest-api.md, `spec.policy.advertise`: "The host name to put in viewer URLs". The
    # scheme and port stay the server's.
    client = await socket_client(make_client, world, tmp_path / "vnc.sock")
    spec = {"policy": {"advertise": "desk.example"}}
    box = await new_box(client, {"spec": spec})
    page = f"http://desk.example:{client.port}/v1/boxes/{box}/screens/0/view"
    shown = await ok_json(await client.get(f"/v1/boxes/{box}"))
    assert (shown["viewer_url"], shown["viewer_urls"]) == (page, [page])
    made = await ok_json(await client.post(f"/v1/boxes/{box}/screens/0/viewer/ticket", json={}))
    assert made["url"] == f"{page}?ticket={made['ticket']}"
    taken = await ok_json(await client.post(f"/v1/boxes/{box}/screens/0/takeover", json={}))
    assert taken["url"].startswith(f"{page}?ticket=")
    # Without it, the address the request came in on.
    plain = await ok_json(await client.get(f"/v1/boxes/{await new_box(client)}"))
    assert plain["viewer_url"].startswith(f"http://127.0.0.1:{client.port}/")


async def test_a_ticket_opens_only_the_desktop_it_was_made_for(
    make_client: MakeClient, world: MemoryWorld, tmp_path: Path
) -> None:
    # boxes.md: a stopped box resumes with a "new desktop, new viewer URL"; a paused one
    # comes back as it was.
    client = await socket_client(make_client, world, tmp_path / "vnc.sock")
    box = await new_box(client)
    screen = f"/v1/boxes/{box}/screens/0"

    async def ticket(mode: str = "view") -> str:
        made = await ok_json(await client.post(f"{screen}/viewer/ticket", json={"mode": mode}))
        # A view ticket's answer says so too (a default was once left out of it).
        assert made["mode"] == mode
        return str(made["ticket"])

    async def page_status(value: str) -> int:
        return (await client.get(f"{screen}/view?ticket={value}", allow_redirects=False)).status

    before = await ticket()
    taken = await ok_json(await client.post(f"{screen}/takeover", json={}))
    taken_ticket = taken["url"].split("ticket=")[1]
    for path in ("pause", "resume"):
        await ok_json(await client.post(f"/v1/boxes/{box}/{path}"))
    assert (await page_status(before), await page_status(taken_ticket)) == (302, 302)
    for path in ("stop", "resume"):
        await ok_json(await client.post(f"/v1/boxes/{box}/{path}"))
    for old in (before, taken_ticket):
        await error_of(
            await client.get(f"{screen}/view?ticket={old}", allow_redirects=False), 401, "denied"
        )
        await error_of(
            await client.get(f"{screen}/viewer/socket?ticket={old}&mode=view"), 401, "denied"
        )
    assert await page_status(await ticket("control")) == 302
