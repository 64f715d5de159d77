"""The viewer end to end on a real local box: tickets, the WebSocket relay to the screen's
x11vnc with a real RFB client (vncdotool), view-only enforced at the relay, the viewer page.

One server and one box for the module (these tests do not change the box's life)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest
import pytest_asyncio
import yarl
from http_kit import Client, error_of, ok_json
from local_kit import LocalServer, client_of, new_box, started
from viewer_kit import (
    CLICK_AND_TYPE,
    bridge,
    novnc_open,
    open_page,
    page_title,
    socket_path,
    ticket,
    until_title,
    view_input_is_dropped_and_control_input_arrives,
    vnc_do,
)

from holm.http.viewer.relay import TICKETS

pytestmark = [pytest.mark.desktop, pytest.mark.asyncio(loop_scope="module")]


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def server() -> AsyncIterator[LocalServer]:
    # vncdotool's reactor is stopped once, after every module (tests/conftest.py).
    async with started(events_delay_ms=0) as running:
        yield running


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def box(server: LocalServer) -> str:
    return await new_box(server)


async def test_a_ticket_names_its_screen_mode_and_expiry(server: LocalServer, box: str) -> None:
    client = client_of(server)
    made = await ticket(client, box, "control")
    assert made["mode"] == "control" and made["ticket"].startswith("vt_")
    tickets = client.server.app[TICKETS]
    assert made["expires_at_ms"] == pytest.approx(tickets.clock() + 15 * 60 * 1000, abs=60_000)
    assert made["url"].endswith(f"/v1/boxes/{box}/screens/0/view?ticket={made['ticket']}")
    box_view = await ok_json(await client.get(f"/v1/boxes/{box}"))
    assert box_view["viewer_url"].endswith(f"/v1/boxes/{box}/screens/0/view")
    await error_of(
        await client.post(f"/v1/boxes/{box}/screens/3/viewer/ticket", json={}), 404, "not_found"
    )


async def test_view_input_is_dropped_and_control_input_arrives(
    server: LocalServer, box: str, tmp_path: Path
) -> None:
    await view_input_is_dropped_and_control_input_arrives(
        client_of(server), box, tmp_path / "seen.png"
    )


# x11vnc (LibVNCServer) reads the minor version "0_7" as 0, an RFB 3.3 client that sends no
# security choice; Python's int() read it as 7. The two would then be a byte apart: what
# follows is, to x11vnc, ClientInit, a KeyEvent `x` down and one `x` up; to the relay, the
# security choice, ClientInit and two FramebufferUpdateRequests, which a view ticket passes.
X_KEY = (0x78).to_bytes(4, "big")
SMUGGLED = (
    b"RFB 003.0_7\n"
    + b"\x01"
    + b"\x04"
    + (b"\x03\x00\x00" + X_KEY + b"\x04\x00\x00")
    + (b"\x03" + X_KEY + b"\x03\x00\x00\x00\x00")
)


async def test_a_view_ticket_cannot_put_the_relay_and_x11vnc_a_byte_apart(
    server: LocalServer, box: str
) -> None:
    client = client_of(server)
    await open_page(client, box)
    control = await ticket(client, box, "control")
    async with bridge(client, socket_path(box, control["ticket"], "control")) as port:
        await asyncio.to_thread(vnc_do, port, CLICK_AND_TYPE[:2])
    assert await until_title(client, box, "c1k") == "c1k - Chromium"
    view = await ticket(client, box, "view")
    async with client.ws_connect(socket_path(box, view["ticket"]), protocols=("binary",)) as ws:
        await ws.send_bytes(SMUGGLED)
        # Until x11vnc answered the handshake (its ServerInit, the longest answer) or the
        # relay closed; x11vnc reads what is left on the socket before it sees the close.
        async for message in ws:
            if message.type != aiohttp.WSMsgType.BINARY or len(message.data) > 24:
                break
    async with bridge(client, socket_path(box, control["ticket"], "control")) as port:
        await asyncio.to_thread(vnc_do, port, [("keyPress", ("y",))])
    typed = ""
    for _ in range(100):
        typed = await page_title(client, box)
        if "y" in typed:
            break
        await asyncio.sleep(0.1)
    # Had the view ticket's bytes reached x11vnc as keys, the page would have an x first.
    assert typed == "c1ky - Chromium"


async def refused_status(client: Client, path: str) -> int:
    """The status of a refused WebSocket upgrade (it must be refused)."""
    with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
        await client.ws_connect(path, protocols=("binary",))
    return refused.value.status


async def test_wrong_expired_and_misused_tickets_are_refused(server: LocalServer, box: str) -> None:
    client = client_of(server)
    view = await ticket(client, box, "view")
    assert await refused_status(client, socket_path(box, "vt_guessed")) == 401
    assert await refused_status(client, socket_path(box, "")) == 401
    # A view ticket does not give control; a ticket is for its own box and screen.
    assert await refused_status(client, socket_path(box, view["ticket"], "control")) == 401
    assert await refused_status(client, socket_path("box_other", view["ticket"])) == 401
    assert await refused_status(client, socket_path(box, view["ticket"], screen=1)) == 401
    # The page refuses what the socket refuses, before redirecting to noVNC.
    page = f"/v1/boxes/{box}/screens/0/view?ticket=vt_guessed"
    await error_of(await client.get(page, allow_redirects=False), 401, "denied")
    # Fifteen minutes later (the tickets' clock moved, nobody slept), it is refused.
    tickets = client.server.app[TICKETS]
    real_clock = tickets.clock
    tickets.clock = lambda: real_clock() + 15 * 60 * 1000 + 1
    try:
        assert await refused_status(client, socket_path(box, view["ticket"])) == 401
    finally:
        tickets.clock = real_clock
    ws = await client.ws_connect(socket_path(box, view["ticket"]), protocols=("binary",))
    assert (await ws.receive_bytes()).startswith(b"RFB 003.")
    await ws.close()


async def test_the_viewer_page_is_novnc_pointed_at_the_socket(
    server: LocalServer, box: str
) -> None:
    client = client_of(server)
    control = await ticket(client, box, "control")
    page = await client.get(yarl.URL(control["url"]).path_qs, allow_redirects=False)
    assert page.status == 302
    target = yarl.URL(page.headers["Location"])
    assert target.path == "/v1/viewer/novnc/vnc.html"
    assert target.query["view_only"] == "0" and target.query["autoconnect"] == "1"
    socket = yarl.URL("/" + target.query["path"])
    assert socket.path == f"/v1/boxes/{box}/screens/0/viewer/socket"
    assert socket.query["ticket"] == control["ticket"]
    html = await client.get(str(target))
    assert html.status == 200 and "noVNC" in await html.text()
    script = await client.get("/v1/viewer/novnc/app/ui.js")
    assert script.status == 200
    await error_of(await client.get("/v1/viewer/novnc/../../../etc/passwd"), 404, "not_found")


async def test_novnc_in_a_browser_connects_through_the_page(
    server: LocalServer, box: str, tmp_path: Path
) -> None:
    """The noVNC page a ticket gives shows the screen; the viewers count it."""
    client = client_of(server)
    viewers = f"/v1/boxes/{box}/screens/0/viewers"
    async with novnc_open(client, box, tmp_path / "chromium"):
        counted = await ok_json(await client.get(viewers))
        assert (counted["watching"], counted["driving"]) == (1, 1)
    for _ in range(100):
        counted = await ok_json(await client.get(viewers))
        if counted["watching"] == 0:
            break
        await asyncio.sleep(0.1)
    assert counted == {"watching": 0, "driving": 0, "person_driving": False, "taken_over": False}


# Run in the box: connects `argv[1]` viewers to screen 0's socket, reads each one's RFB
# greeting, and prints the greetings, then how many x11vnc run and every TCP socket that
# listens (state 0A of /proc/net/tcp*) and is an x11vnc's or on its port (5900, 0x170C),
# while they are connected; then closes them and prints how many x11vnc are left once they
# have had a moment to end.
VIEWERS_IN_BOX = """
import glob, os, socket, sys, time
def x11vncs():
    found = []
    for comm in glob.glob('/proc/[0-9]*/comm'):
        try:
            if open(comm).read().strip() == 'x11vnc':
                found.append(comm.split('/')[2])
        except OSError:
            pass
    return found
print(len(x11vncs()))
viewers = []
for _ in range(int(sys.argv[1])):
    s = socket.socket(socket.AF_UNIX)
    s.connect('/run/holm/vnc-0.sock')
    s.settimeout(10)
    print(s.recv(12).decode().strip())
    viewers.append(s)
print(len(x11vncs()))
sockets = set()
for pid in x11vncs():
    for fd in glob.glob(f'/proc/{pid}/fd/*'):
        try:
            sockets.add(os.readlink(fd))
        except OSError:
            pass
for path in ('/proc/net/tcp', '/proc/net/tcp6'):
    for line in open(path).read().splitlines()[1:]:
        fields = line.split()
        if fields[3] == '0A' and (f'socket:[{fields[9]}]' in sockets or ':170C' in fields[1]):
            print('x11vnc listens on', fields[1])
for s in viewers:
    s.close()
for _ in range(50):
    if not x11vncs():
        break
    time.sleep(0.1)
print(len(x11vncs()))
"""


async def _viewers_in_box(client: Client, box: str, count: int) -> list[str]:
    body = {"argv": ["python3", "-c", VIEWERS_IN_BOX, str(count)], "timeout_ms": 30_000}
    done = await ok_json(await client.post(f"/v1/boxes/{box}/exec", json=body))
    assert done["code"] == 0, done
    return list(done["stdout"].splitlines())


async def test_a_screen_runs_an_x11vnc_only_for_each_viewer_connected(
    server: LocalServer, box: str
) -> None:
    """No VNC server runs in an idle box; each viewer that connects gets an x11vnc of its
    own (viewer_socket.py), which ends when the viewer leaves."""
    client = client_of(server)
    # Viewers of earlier tests have left: their x11vnc end within a moment.
    for _ in range(50):
        before, *_ = await _viewers_in_box(client, box, 0)
        if before == "0":
            break
        await asyncio.sleep(0.1)
    assert await _viewers_in_box(client, box, 2) == ["0", "RFB 003.008", "RFB 003.008", "2", "0"]


# Run in the box: a viewer on screen 0's socket that only watches (it sends no input), as
# a person with a view ticket does: raw pixels, one whole frame, then incremental update
# requests for `argv[1]` seconds, each sent as the last update arrives; prints how many.
WATCHER_IN_BOX = """
import socket, struct, sys, time
s = socket.socket(socket.AF_UNIX)
s.connect('/run/holm/vnc-0.sock')
s.settimeout(10)
def recv(n):
    data = b''
    while len(data) < n:
        part = s.recv(n - len(data))
        if not part:
            raise EOFError
        data += part
    return data
recv(12); s.sendall(b'RFB 003.008\\n')
recv(recv(1)[0]); s.sendall(b'\\x01'); recv(4); s.sendall(b'\\x01')
width, height = struct.unpack('>HH', recv(4)); recv(16); recv(struct.unpack('>I', recv(4))[0])
s.sendall(b'\\x02\\x00' + struct.pack('>Hi', 1, 0))
def update(incremental):
    s.sendall(struct.pack('>BBHHHH', 3, incremental, 0, 0, width, height))
    while recv(1)[0] != 0:
        pass
    recv(1)
    for _ in range(struct.unpack('>H', recv(2))[0]):
        _, _, w, h, encoding = struct.unpack('>HHHHi', recv(12))
        recv(w * h * 4)
update(0)
began, count = time.monotonic(), 0
while time.monotonic() - began < float(sys.argv[1]):
    update(1)
    count += 1
print(count)
"""
ANIMATION = (
    "data:text/html,<title>Animation</title><body style='margin:0'>"
    "<canvas id=c width=640 height=400></canvas><script>const g = c.getContext('2d');"
    "let n = 0; (function f() { g.fillStyle = `hsl(${n++ % 360},80%,50%)`;"
    "g.fillRect(0, 0, 640, 400); requestAnimationFrame(f); })();</script>"
)


async def test_a_viewer_that_only_watches_sees_an_animation_move(
    server: LocalServer, box: str
) -> None:
    """x11vnc naps between looks at the screen while its client sends no input, unless
    told not to (`-nonap`): a watcher saw an animating page 0.3 times a second."""
    client = client_of(server)
    body = {"actions": [{"type": "open_url", "url": ANIMATION}]}
    await ok_json(await client.post(f"/v1/boxes/{box}/screens/0/actions", json=body))
    run = {"argv": ["python3", "-c", WATCHER_IN_BOX, "3"], "timeout_ms": 30_000}
    done = await ok_json(await client.post(f"/v1/boxes/{box}/exec", json=run))
    assert done["code"] == 0, done
    # The page changes every frame: 35 updates a second here, 0.3 without -nonap. The
    # bound is far under the first, for a loaded machine, and far over the second.
    assert int(done["stdout"]) >= 6, done


async def test_the_screen_s_vnc_server_listens_on_no_tcp_port(
    server: LocalServer, box: str
) -> None:
    """x11vnc is reached through its Unix socket only: while a viewer is connected, no TCP
    socket listens in the box."""
    seen = await _viewers_in_box(client_of(server), box, 1)
    assert seen[1:3] == ["RFB 003.008", "1"], seen
    assert [line for line in seen if line.startswith("x11vnc listens")] == [], seen
