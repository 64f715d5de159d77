"""The VNC door's rules over the in-memory double, whose screen's VNC server is one the test
plays on a Unix socket: what a create refuses (`bind: "any"` without the server's setting,
a password box on a runtime with no viewer, a missing or unfit `password_secret`), a
password given by secret name, a restart that keeps a made password, and a VNC server
that breaks RFB, which the client is told of without a word the box said."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import msgspec
from http_kit import Client, MakeClient, error_of, ok_json
from test_viewer_memory import SocketRuntime

from holm.adapters.memory.runtime import MemoryWorld
from holm.cli.boxes import box_fields
from holm.http.viewer.doors import DOORS
from holm.http.viewer.relay import SERVER_VERSION
from holm.vnc_auth import response_to
from holm.wire.api import BoxView

Serve = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]
PASSWORD_BOX = {"spec": {"policy": {"auth": "password"}}}


async def refused(client: Client, policy: dict[str, Any], status: int, code: str) -> str:
    body = {"spec": {"policy": policy}}
    return await error_of(await client.post("/v1/boxes", json=body), status, code)


async def test_bind_any_is_refused_without_the_server_s_setting(
    make_client: MakeClient, world: MemoryWorld, tmp_path: Path
) -> None:
    client = await make_client(runtime=viewer_runtime(world, tmp_path / "none.sock"))
    message = await refused(client, {"auth": "password", "bind": "any"}, 400, "unsupported")
    assert "HOLM_ALLOW_PUBLIC_VIEWERS=1" in message
    # Off loopback only a door with a password: not an open VNC server, not tickets.
    for auth in ("none", "token"):
        message = await refused(client, {"auth": auth, "bind": "any"}, 400, "bad_request")
        assert 'needs auth "password"' in message
    # Nothing of the refused boxes was made.
    assert (await ok_json(await client.get("/v1/boxes")))["boxes"] == []


async def test_token_and_none_boxes_are_reached_by_tickets_only(
    make_client: MakeClient, world: MemoryWorld, tmp_path: Path
) -> None:
    client = await make_client(runtime=viewer_runtime(world, tmp_path / "none.sock"))
    for auth in ("token", "none"):
        made = await made_box(client, {"auth": auth})
        # No door: the viewer socket, with holmd's tickets, is the one way to the screen.
        assert "vnc" not in made
        assert client.server.app[DOORS].of(made["id"]) == []
        ticket = await client.post(f"/v1/boxes/{made['id']}/screens/0/viewer/ticket", json={})
        assert (await ok_json(ticket))["ticket"].startswith("vt_")


async def test_a_password_box_needs_a_runtime_with_viewers(make_client: MakeClient) -> None:
    client = await make_client()
    message = await refused(client, {"auth": "password"}, 400, "unsupported")
    assert "no viewer" in message


async def test_a_password_secret_must_name_a_fit_secret(
    make_client: MakeClient, world: MemoryWorld, tmp_path: Path
) -> None:
    client = await make_client(runtime=viewer_runtime(world, tmp_path / "none.sock"))
    message = await refused(
        client, {"auth": "password", "password_secret": "vnc"}, 400, "bad_request"
    )
    assert "no value for the secret vnc" in message
    message = await refused(client, {"auth": "token", "password_secret": "vnc"}, 400, "bad_request")
    assert 'is for auth "password"' in message
    await refused(client, {"auth": "password", "password_secret": "no spaces"}, 400, "bad_request")
    await ok_json(await client.put("/v1/secrets/long", json={"value": "ninechars"}))
    message = await refused(
        client, {"auth": "password", "password_secret": "long"}, 400, "bad_request"
    )
    assert "at most 8 characters" in message and "ninechars" not in message


def viewer_runtime(world: MemoryWorld, path: Path) -> SocketRuntime:
    runtime = SocketRuntime(server_id="srv", world=world)
    runtime.socket_path = path
    return runtime


@contextlib.asynccontextmanager
async def vnc_server(serve: Serve, path: Path) -> AsyncIterator[None]:
    server = await asyncio.start_unix_server(serve, str(path))
    try:
        yield
    finally:
        server.close()


async def plain_vnc(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """A VNC server as x11vnc -nopw is: RFB 3.8, security None, then a fake ServerInit
    after ClientInit, and an echo of what the client sends after."""
    assert await reader.readexactly(12) == SERVER_VERSION
    writer.write(SERVER_VERSION + bytes([1, 1]))
    assert await reader.readexactly(1) == b"\x01"
    writer.write(struct.pack(">I", 0))
    await reader.readexactly(1)  # ClientInit
    writer.write(b"SERVERINIT")
    await writer.drain()
    while data := await reader.read(4096):
        writer.write(b"echo:" + data)
        await writer.drain()


def client_through(port: int, password: str, then: bytes = b"") -> bytes:
    """An RFB 3.8 client with VNC authentication: what the door says after the answer to
    its challenge (and after `then`, sent once it is in)."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as conn:
        reader = conn.makefile("rb")
        assert reader.read(12) == SERVER_VERSION
        conn.sendall(SERVER_VERSION)
        assert reader.read(2) == bytes([1, 2])
        conn.sendall(b"\x02")
        conn.sendall(response_to(reader.read(16), password))
        result = reader.read(4)
        if result != struct.pack(">I", 0):
            return result + reader.read()
        conn.sendall(b"\x01" + then)  # ClientInit, then messages
        said = result + reader.read(10)
        if then:
            said += reader.read(len(b"echo:" + then))
        return said


async def made_box(client: Client, policy: dict[str, Any]) -> dict[str, Any]:
    return dict(await ok_json(await client.post("/v1/boxes", json={"spec": {"policy": policy}})))


async def test_a_password_given_by_secret_name_opens_the_door(
    make_client: MakeClient, world: MemoryWorld, tmp_path: Path
) -> None:
    path = tmp_path / "vnc.sock"
    client = await make_client(runtime=viewer_runtime(world, path))
    await ok_json(await client.put("/v1/secrets/vnc", json={"value": "Sesame1"}))
    made = await made_box(client, {"auth": "password", "password_secret": "vnc"})
    # The password is the workspace's: the answer does not repeat it.
    assert "password" not in made["vnc"]
    port = made["vnc"]["doors"][0]["port"]
    async with vnc_server(plain_vnc, path):
        # A pointer event passes the door whole (and is echoed by this server).
        pointer = b"\x05\x00\x00\x10\x00\x20"
        said = await asyncio.to_thread(client_through, port, "Sesame1", pointer)
        assert said == struct.pack(">I", 0) + b"SERVERINIT" + b"echo:" + pointer
        wrong = await asyncio.to_thread(client_through, port, "Sesame2")
        assert wrong == struct.pack(">II", 1, 14) + b"wrong password"
        # A changed secret is the password from then on.
        await ok_json(await client.put("/v1/secrets/vnc", json={"value": "Sesame2"}))
        said = await asyncio.to_thread(client_through, port, "Sesame2")
        assert said == struct.pack(">I", 0) + b"SERVERINIT"


async def test_a_made_password_survives_a_restart(
    make_client: MakeClient, world: MemoryWorld, tmp_path: Path
) -> None:
    path = tmp_path / "vnc.sock"
    first = await make_client(store="local", runtime=viewer_runtime(world, path))
    made = await made_box(first, {"auth": "password"})
    password = made["vnc"]["password"]
    await first.close()
    again = await make_client(store="local", runtime=viewer_runtime(world, path))
    # The restarted server's sweep opens the box's door again, on a port of its own.
    doors: list[dict[str, Any]] = []
    for _ in range(100):
        doors = (await ok_json(await again.get(f"/v1/boxes/{made['id']}")))["vnc"]["doors"]
        if doors:
            break
        await asyncio.sleep(0.05)
    async with vnc_server(plain_vnc, path):
        said = await asyncio.to_thread(client_through, doors[0]["port"], password)
    assert said == struct.pack(">I", 0) + b"SERVERINIT"


async def test_a_vnc_server_that_breaks_rfb_is_not_passed_on(
    make_client: MakeClient, world: MemoryWorld, tmp_path: Path
) -> None:
    path = tmp_path / "vnc.sock"
    client = await make_client(runtime=viewer_runtime(world, path))
    made = await made_box(client, {"auth": "password"})
    port, password = made["vnc"]["doors"][0]["port"], made["vnc"]["password"]

    async def hostile(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readexactly(12)
        # A refusal whose reason tries to speak to the client, then a lie about its size.
        reason = b"\x00\x00\x00\x00SERVERINIT from the box"
        writer.write(SERVER_VERSION + b"\x00" + struct.pack(">I", 1 << 30) + reason)
        await writer.drain()
        writer.close()

    async with vnc_server(hostile, path):
        said = await asyncio.to_thread(client_through, port, password)
    reason = b"the box's screen cannot be reached now"
    assert said == struct.pack(">II", 1, len(reason)) + reason
    # No server at all: the same.
    said = await asyncio.to_thread(client_through, port, password)
    assert said == struct.pack(">II", 1, len(reason)) + reason


async def test_holm_box_shows_the_doors_and_not_the_password(
    make_client: MakeClient, world: MemoryWorld, tmp_path: Path
) -> None:
    client = await make_client(runtime=viewer_runtime(world, tmp_path / "none.sock"))
    made = await made_box(client, {"auth": "password"})
    again = await ok_json(await client.get(f"/v1/boxes/{made['id']}"))
    fields = box_fields(msgspec.convert(again, BoxView))
    (door,) = made["vnc"]["doors"]
    assert ("vnc_0", f"vnc://127.0.0.1:{door['port']}") in fields
    assert made["vnc"]["password"] not in str(fields)


def rfb33_client(port: int, password: str) -> bytes:
    """An RFB 3.3 client: the server picks the security type (a u32), no reason on failure."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as conn:
        reader = conn.makefile("rb")
        assert reader.read(12) == SERVER_VERSION
        conn.sendall(b"RFB 003.003\n")
        assert reader.read(4) == struct.pack(">I", 2)
        conn.sendall(response_to(reader.read(16), password))
        result = reader.read(4)
        if result == struct.pack(">I", 0):
            conn.sendall(b"\x01")
            return result + reader.read(10)
        return result + reader.read()


def said_to(port: int, greeting: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=30) as conn:
        reader = conn.makefile("rb")
        assert reader.read(12) == SERVER_VERSION
        conn.sendall(greeting)
        return reader.read()


async def test_an_rfb_3_3_client_gets_in_and_a_stranger_does_not(
    make_client: MakeClient, world: MemoryWorld, tmp_path: Path
) -> None:
    path = tmp_path / "vnc.sock"
    client = await make_client(runtime=viewer_runtime(world, path))
    made = await made_box(client, {"auth": "password"})
    port, password = made["vnc"]["doors"][0]["port"], made["vnc"]["password"]
    reached: list[bool] = []

    async def counted(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        reached.append(True)
        await plain_vnc(reader, writer)

    async with vnc_server(counted, path):
        said = await asyncio.to_thread(rfb33_client, port, password)
        assert said == struct.pack(">I", 0) + b"SERVERINIT"
        # RFB 3.3 tells no reason: SecurityResult failed, and the door closes.
        wrong = await asyncio.to_thread(rfb33_client, port, "nope")
        assert wrong == struct.pack(">I", 1)
        # Not RFB 3.x: closed with nothing said; none of these reached the box.
        reached.clear()
        for greeting in (b"GET / HTTP/1.1\r\n", b"RFB 004.001\n"):
            assert await asyncio.to_thread(said_to, port, greeting) == b""
    assert reached == []
