"""The VNC door of a box with `spec.policy.auth: "password"`, end to end on a real local
box: a standard VNC client (vncdotool) gets in with the password the create answer gave,
and its pointer and keys land on the screen; a wrong password, or a client that asks for
no authentication, is refused; `bind: "any"` listens on every address (checked on the
socket, then closed) when the server allows it. The password is in the create answer
only: not in the box's other answers, its trace, the events feed or holmd's log.

One server and one password box for the module; the `bind: "any"` box is removed at once."""

from __future__ import annotations

import asyncio
import logging
import socket
import struct
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from http_kit import ok_json, trace_entries
from local_kit import LocalServer, client_of, started
from test_viewer_local import CLICK_AND_TYPE, open_page, until_title

from holm.http.viewer.door import MAX_FAILURES, Failures
from holm.http.viewer.doors import DOORS
from holm.http.viewer.relay import SERVER_VERSION

pytestmark = [pytest.mark.desktop, pytest.mark.asyncio(loop_scope="module")]

PASSWORD_SPEC = {"spec": {"policy": {"auth": "password"}}}


class Kept(logging.Handler):
    """Every record holmd logs while the module runs, formatted (arguments included)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))


@pytest.fixture(scope="module")
def holmd_log() -> Iterator[Kept]:
    kept = Kept()
    holm = logging.getLogger("holm")
    level = holm.level
    holm.addHandler(kept)
    holm.setLevel(logging.DEBUG)
    try:
        yield kept
    finally:
        holm.removeHandler(kept)
        holm.setLevel(level)


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def server(holmd_log: Kept) -> AsyncIterator[LocalServer]:
    # vncdotool's reactor is stopped once, after every module (tests/conftest.py).
    async with started(events_delay_ms=0, allow_public_viewers=True) as running:
        yield running


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def made(server: LocalServer) -> dict[str, Any]:
    """The create answer of the module's password box."""
    return dict(await ok_json(await client_of(server).post("/v1/boxes", json=PASSWORD_SPEC)))


def door_port(made: dict[str, Any], screen: int = 0) -> int:
    return int(made["vnc"]["doors"][screen]["port"])


def vnc_with(port: int, password: str | None, steps: list[tuple[str, tuple[Any, ...]]]) -> None:
    """vncdotool, the standard client, through the door with `password` (blocking: call
    it in a thread)."""
    from vncdotool import api

    client = api.connect(f"127.0.0.1::{port}", password=password, timeout=30)
    for name, args in steps:
        getattr(client, name)(*args)
    # Only a client that got in disconnects: a refused one's connection is closed already,
    # and vncdotool's disconnect would wait out its timeout.
    client.disconnect()


async def test_the_create_answer_names_the_door_and_its_password(
    server: LocalServer, made: dict[str, Any]
) -> None:
    vnc = made["vnc"]
    password = vnc["password"]
    assert isinstance(password, str) and len(password) == 8
    (door,) = vnc["doors"]
    assert door["screen"] == 0 and door["host"] == "127.0.0.1"
    assert door["url"] == f"vnc://127.0.0.1:{door['port']}"
    # The listening socket is on loopback, as `bind` defaults to.
    (opened,) = client_of(server).server.app[DOORS].of(made["id"])
    assert opened.bound == ("127.0.0.1", door["port"])
    # Shown once: a later answer has the door, not the password.
    again = await ok_json(await client_of(server).get(f"/v1/boxes/{made['id']}"))
    assert again["vnc"] == {"doors": vnc["doors"]}


async def test_the_password_lets_a_standard_client_see_and_drive_the_screen(
    server: LocalServer, made: dict[str, Any], tmp_path: Path
) -> None:
    client = client_of(server)
    box, port, password = made["id"], door_port(made), made["vnc"]["password"]
    await open_page(client, box)
    shot = tmp_path / "door.png"
    steps = [*CLICK_AND_TYPE, ("mouseMove", (321, 234)), ("captureScreen", (str(shot),))]
    await asyncio.to_thread(vnc_with, port, password, steps)
    assert shot.stat().st_size > 0
    # The click and the keys reached the page, and the pointer is where the client put it.
    assert await until_title(client, box, "c1kxy") == "c1kxy - Chromium"
    cursor = await ok_json(await client.get(f"/v1/boxes/{box}/screens/0/cursor"))
    assert (cursor["x"], cursor["y"]) == (321, 234)
    # What the person did through the door is in the trace, as a control viewer's is.
    acted = [e for e in await trace_entries(client, box) if e["kind"] == "acted"]
    assert any(e["actor"] == "person" and e["action"]["type"] == "click" for e in acted)


async def test_a_wrong_password_is_refused(made: dict[str, Any]) -> None:
    from vncdotool.client import AuthenticationError

    steps: list[tuple[str, tuple[Any, ...]]] = [("mouseMove", (10, 10))]
    with pytest.raises(AuthenticationError, match="wrong password"):
        await asyncio.to_thread(vnc_with, door_port(made), "guessed", steps)


def raw_handshake(port: int, choice: int) -> bytes:
    """An RFB 3.8 client that picks security type `choice`; all the door says after."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as conn:
        assert conn.recv(12) == SERVER_VERSION
        conn.sendall(SERVER_VERSION)
        types = conn.recv(2)
        conn.sendall(bytes([choice]))
        said = types
        while data := conn.recv(4096):
            said += data
        return said


async def test_a_client_that_asks_for_no_authentication_is_refused(made: dict[str, Any]) -> None:
    said = await asyncio.to_thread(raw_handshake, door_port(made), 1)
    # Offered VNC authentication only; then SecurityResult failed, with the reason.
    reason = b"this door takes VNC authentication (type 2) only"
    assert said == bytes([1, 2]) + struct.pack(">II", 1, len(reason)) + reason


async def test_after_too_many_wrong_passwords_the_door_shuts(
    server: LocalServer, made: dict[str, Any]
) -> None:
    from vncdotool.client import ProtocolError

    (door,) = client_of(server).server.app[DOORS].of(made["id"])
    # Past failures, as the door counts them (the test does not wait out each pause).
    for _ in range(MAX_FAILURES):
        door.failures.add()
    try:
        # No security type offered, and why (vncdotool calls it a refused connection).
        with pytest.raises(ProtocolError, match="too many wrong passwords"):
            await asyncio.to_thread(
                vnc_with, door_port(made), made["vnc"]["password"], [("mouseMove", (5, 5))]
            )
    finally:
        door.failures = Failures()


async def test_bind_any_listens_on_every_address(server: LocalServer) -> None:
    client = client_of(server)
    spec = {"spec": {"policy": {"auth": "password", "bind": "any", "advertise": "box.example"}}}
    made = await ok_json(await client.post("/v1/boxes", json=spec))
    try:
        (door,) = made["vnc"]["doors"]
        assert door["host"] == "box.example"
        assert door["url"] == f"vnc://box.example:{door['port']}"
        (opened,) = client.server.app[DOORS].of(made["id"])
        assert opened.bound == ("0.0.0.0", door["port"])
    finally:
        headers = {"x-holm-confirm-delete": "true"}
        await ok_json(await client.delete(f"/v1/boxes/{made['id']}", headers=headers))
    # The sweep closes a removed box's doors.
    for _ in range(100):
        if not client.server.app[DOORS].of(made["id"]):
            break
        await asyncio.sleep(0.1)
    assert client.server.app[DOORS].of(made["id"]) == []


async def test_the_password_is_in_no_trace_event_or_log(
    server: LocalServer, made: dict[str, Any], holmd_log: Kept
) -> None:
    client = client_of(server)
    password = made["vnc"]["password"]
    entries = await trace_entries(client, made["id"])
    assert entries and password not in str(entries)
    created = next(e for e in entries if e["kind"] == "box_created")
    assert created["spec"]["policy"] == {"auth": "password"}
    events = await ok_json(await client.get("/v1/events"))
    assert events["events"] and password not in str(events)
    assert any("VNC door" in line for line in holmd_log.lines)
    assert not [line for line in holmd_log.lines if password in line]
