"""Provider `docker`: a Docker Engine on another host over TLS (a second dockerd in a
network namespace, kits/remote_dockerd.py), added with `POST /v1/runtimes`. One box on it,
made from the image this host's engine sends there (the far engine starts empty), driven
through the engine's TLS API only: actions, exec, frames, a viewer through the front's relay
and Playwright through its DevTools relay, a fork that replays it there, a person's takeover
through the control viewer, recorded, and a recording of its screen; a far host that goes
away makes the box `unreachable` and its actions `503` until it is back; wrong certificates
are a clear error no retry fixes; and no secret's bytes are in any answer, event, trace, log
line or file of the server's. A restarted server has the runtime and adopts the box.
Removing the box (at the end) removes its container there."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import docker
import pytest
import pytest_asyncio
import yarl
from http_kit import Client, error_of, ok_json
from kits.remote_dockerd import Credentials, RemoteEngine
from page_kit import page
from PIL import ImageChops
from playwright.async_api import async_playwright
from runtime_kit import SESSION_SPEC
from vendor_kit import front_server
from video_kit import ANIMATED, frame_at, probe
from viewer_kit import PAGE_URL, bridge, vnc_do

from holm.adapters.docker.runtime import DockerRuntime

pytestmark = [pytest.mark.docker, pytest.mark.asyncio(loop_scope="module")]

CONFIRM = {"x-holm-confirm-delete": "true"}
TITLE = {"actions": [{"type": "evaluate", "what": {"expression": "document.title"}}]}
# Long enough for a recording of the animated page to hold different pictures.
RECORD_FOR_S = 2.0


def docker_vendor(name: str, engine: RemoteEngine, credentials: Credentials) -> dict[str, Any]:
    return {
        "name": name,
        "provider": "docker",
        "fields": {"host": engine.host},
        "secrets": credentials.secrets(),
    }


class Kept(logging.Handler):
    """Every log line of the server, formatted with its traceback, to search for secrets."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.setFormatter(logging.Formatter("%(name)s %(message)s"))
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))


@dataclass
class Far:
    front: Client
    box: str
    engine: RemoteEngine
    state_dir: Path
    log: Kept
    # Every body the front answered in these tests.
    answers: list[str]
    servers: contextlib.AsyncExitStack

    async def restart(self) -> None:
        """The front server ends and another starts on its state dir."""
        await self.servers.aclose()
        self.servers = contextlib.AsyncExitStack()
        self.front = await self.servers.enter_async_context(front_server(self.state_dir))


@contextlib.contextmanager
def logs_kept() -> Iterator[Kept]:
    kept = Kept()
    root = logging.getLogger()
    level = root.level
    root.addHandler(kept)
    root.setLevel(logging.DEBUG)
    try:
        yield kept
    finally:
        root.removeHandler(kept)
        root.setLevel(level)


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def far(
    tmp_path_factory: pytest.TempPathFactory,
    docker_client: docker.DockerClient,
    remote_docker_engine: RemoteEngine,
) -> AsyncIterator[Far]:
    """This host's engine with the session's image (what is sent), the far engine (the
    session's), and a front server with the far engine added as runtime `far` and one box
    on it."""
    state_dir = tmp_path_factory.mktemp("front")
    here, engine = docker_client, remote_docker_engine
    with logs_kept() as kept:
        local = DockerRuntime(state_dir / "local-boxes", "t", client=here)
        assert (await local.build_image(SESSION_SPEC)).state is None
        servers = contextlib.AsyncExitStack()
        far: Far | None = None
        try:
            front = await servers.enter_async_context(front_server(state_dir))
            added = await ok_json(
                await front.post("/v1/runtimes", json=docker_vendor("far", engine, engine.client))
            )
            assert added["provider"] == "docker" and added["fields"] == {"host": engine.host}
            assert added["secrets"] == ["ca", "cert", "key"] and added["can"]["pages"] is True
            made = await front.post("/v1/boxes", json={"placement": {"runtime": "far"}})
            box = await ok_json(made)
            assert box["state"] == "ready" and box["runtime"] == "far", box
            answers = [str(added), str(box)]
            far = Far(front, str(box["id"]), engine, state_dir, kept, answers, servers)
            yield far
            # The front of now: a test may have restarted it.
            front = far.front
            removed = await front.delete(f"/v1/boxes/{box['id']}", headers=CONFIRM)
            assert removed.status in (200, 204), await removed.text()
            far_engine = engine.docker_client()
            try:
                left = far_engine.containers.list(all=True, filters={"label": "holm.box"})
                assert left == [], "the box's container is still on the far engine"
            finally:
                far_engine.close()
            assert (await front.delete("/v1/runtimes/far")).status in (200, 204)
        finally:
            await (far.servers if far is not None else servers).aclose()


async def act(far: Far, steps: list[dict[str, Any]]) -> dict[str, Any]:
    answer = await ok_json(
        await far.front.post(f"/v1/boxes/{far.box}/screens/0/actions", json={"actions": steps})
    )
    far.answers.append(str(answer))
    return dict(answer)


async def test_the_box_runs_on_the_far_engine_from_the_image_sent_there(far: Far) -> None:
    client = far.engine.docker_client()
    try:
        [container] = client.containers.list(filters={"label": f"holm.box={far.box}"})
        assert container.labels["holm.runtime"] == "far"
        # Nothing of this host is bound into it, and no port of it is published.
        assert container.attrs["Mounts"] == [] and not container.attrs["NetworkSettings"]["Ports"]
        assert client.images.get(container.image.id).tags[0].startswith("holm-box:")
    finally:
        client.close()


async def test_clicks_typing_exec_and_frames_go_through_the_engines_api(far: Far) -> None:
    field = '<input id="f" autofocus style="font-size:40px">'
    opened = await act(far, [{"type": "open_url", "url": page(field)}])
    assert opened["results"][0]["ok"] is True
    before = await ok_json(await far.front.get(f"/v1/boxes/{far.box}/screens/0/frame"))
    typed = await act(
        far, [{"type": "click", "at": {"x": 200, "y": 150}}, {"type": "type", "text": "far away"}]
    )
    assert [r["ok"] for r in typed["results"]] == [True, True]
    # The batch answers once the keys went in; Chromium draws them a moment later.
    for _ in range(100):
        after = await ok_json(await far.front.get(f"/v1/boxes/{far.box}/screens/0/frame"))
        if after["hash"] != before["hash"]:
            break
        await asyncio.sleep(0.1)
    assert after["width"] == 1280 and after["png_base64"] and after["hash"] != before["hash"]
    ran = await ok_json(
        await far.front.post(f"/v1/boxes/{far.box}/exec", json={"argv": ["hostname"]})
    )
    assert ran["code"] == 0 and ran["stdout"] == "holm-box\n"
    entries = (await ok_json(await far.front.get(f"/v1/boxes/{far.box}/trace")))["entries"]
    far.answers.append(str(entries))
    acted = [e["action"]["type"] for e in entries if e["kind"] == "acted"]
    assert acted[-2:] == ["click", "type"]


# In the box: the descriptors of each process run with the agent's pipes socket as an
# argument (the agent stream's relay), one line each (the name is joined here, so this
# script's own command line does not name it).
RELAYS_FDS = """\
import os
name = "/run/holm/pipes" + ".sock"
for pid in filter(str.isdigit, os.listdir("/proc")):
    try:
        argv = open(f"/proc/{pid}/cmdline", "rb").read().decode().split("\\0")
        if name in argv:
            print(" ".join(sorted(os.listdir(f"/proc/{pid}/fd"))))
    except OSError:
        pass
"""


async def test_the_agent_reads_and_writes_the_exec_pipes_itself(far: Far) -> None:
    clicked = await act(far, [{"type": "click", "at": {"x": 40, "y": 40}}])
    assert clicked["results"][0]["ok"] is True
    client = far.engine.docker_client()
    try:
        [container] = client.containers.list(filters={"label": f"holm.box={far.box}"})
        ran = container.exec_run(["python3", "-I", "-c", RELAYS_FDS])
    finally:
        client.close()
    assert ran.exit_code == 0, ran.output
    # The front's agent stream's relay (and any of an earlier server's, ending) handed its
    # stdin and stdout to the agent: a relay that relays keeps both.
    relays = [line.split() for line in ran.output.decode().splitlines()]
    assert relays, "no relay of the agent's stream runs in the box"
    assert all("0" not in fds and "1" not in fds and "2" in fds for fds in relays), relays


async def test_a_viewer_through_the_front_relay_reaches_the_far_screen(far: Far) -> None:
    made = await ok_json(
        await far.front.post(f"/v1/boxes/{far.box}/screens/0/viewer/ticket", json={"mode": "view"})
    )
    socket = f"/v1/boxes/{far.box}/screens/0/viewer/socket?ticket={made['ticket']}&mode=view"
    async with far.front.ws_connect(socket, protocols=("binary",)) as ws:
        assert (await ws.receive(timeout=30)).data == b"RFB 003.008\n"
        await ws.send_bytes(b"RFB 003.008\n")
        # x11vnc offers one security type, None.
        assert (await ws.receive(timeout=30)).data == b"\x01\x01"


async def test_playwright_through_the_front_devtools_relay_drives_the_far_browser(
    far: Far,
) -> None:
    opened = await act(far, [{"type": "open_url", "url": page("<title>Far host</title>")}])
    assert opened["results"][0]["ok"] is True
    address = await ok_json(await far.front.post(f"/v1/boxes/{far.box}/cdp"))
    async with async_playwright() as playwright:
        browser = await playwright.chromium.connect_over_cdp(address["url"])
        try:
            titles = [await p.title() for c in browser.contexts for p in c.pages]
            assert "Far host" in titles, titles
        finally:
            await browser.close()


async def trace_of(far: Far, box: str) -> list[dict[str, Any]]:
    entries = (await ok_json(await far.front.get(f"/v1/boxes/{box}/trace")))["entries"]
    far.answers.append(str(entries))
    return list(entries)


async def test_a_fork_of_the_far_box_replays_its_trace_on_the_far_engine(far: Far) -> None:
    acted = [e for e in await trace_of(far, far.box) if e["kind"] == "acted"]
    forked = await ok_json(await far.front.post(f"/v1/boxes/{far.box}/fork", json={}))
    new = forked["box"]["id"]
    try:
        assert forked["box"]["runtime"] == "far" and forked["box"]["state"] == "ready"
        report = forked["replay"]
        assert report["stopped_at"] is None and report["ok"] == report["attempted"] >= len(acted)
        again = [e for e in await trace_of(far, new) if e["kind"] == "acted"]
        assert [(e["action"], e["ok"]) for e in again] == [(e["action"], e["ok"]) for e in acted]
        # The fork's browser, on the far engine, ended on the page the box's did.
        titled = await ok_json(
            await far.front.post(f"/v1/boxes/{new}/screens/0/actions", json=TITLE)
        )
        assert titled["results"][0]["value"]["value"] == "Far host", titled
    finally:
        removed = await far.front.delete(f"/v1/boxes/{new}", headers=CONFIRM)
        assert removed.status in (200, 204), await removed.text()


async def test_a_person_takes_the_far_screen_over_and_what_they_do_is_recorded(
    far: Far,
) -> None:
    screen = f"/v1/boxes/{far.box}/screens/0"
    opened = await act(far, [{"type": "open_url", "url": PAGE_URL}])
    assert opened["results"][0]["ok"] is True
    before = len(await trace_of(far, far.box))
    taken = await ok_json(await far.front.post(f"{screen}/takeover", json={"shared": False}))
    assert taken["exclusive"] is True
    click = {"actions": [{"type": "click", "at": {"x": 10, "y": 10}}]}
    refused = await far.front.post(f"{screen}/actions", json=click)
    assert "person" in await error_of(refused, 409, "denied")

    ticket = yarl.URL(taken["url"]).query["ticket"]
    socket = f"{screen}/viewer/socket?ticket={ticket}&mode=control"
    steps = [("mouseMove", (300, 200)), ("mousePress", (1,)), ("keyPress", ("z",))]
    async with bridge(far.front, socket) as port:
        await asyncio.to_thread(vnc_do, port, steps)
    person: list[dict[str, Any]] = []
    for _ in range(100):
        entries = (await trace_of(far, far.box))[before:]
        person = [e for e in entries if e["actor"] == "person" and e["kind"] == "acted"]
        if len(person) >= 2:
            break
        await asyncio.sleep(0.1)
    assert [e["action"] for e in person] == [
        {"type": "click", "at": {"x": 300, "y": 200}},
        {"type": "type"},
    ]
    given = await far.front.delete(f"{screen}/takeover")
    assert await ok_json(given) == {"screen": 0, "taken_over": False}
    # The far page got the person's click and key; the agent drives it again.
    titled = await act(far, TITLE["actions"])
    assert titled["results"][0]["value"]["value"] == "c1kz", titled


async def test_seconds_recorded_on_the_far_box_are_an_mp4_fetched_through_its_files(
    far: Far, tmp_path: Path
) -> None:
    await act(far, [{"type": "open_url", "url": ANIMATED}])
    url = f"/v1/boxes/{far.box}/screens/0/recording"
    started = await ok_json(await far.front.post(url, json={"fps": 5}))
    await asyncio.sleep(RECORD_FOR_S)
    stopped = await ok_json(await far.front.delete(url))
    assert started["recording"] and not stopped["recording"]
    assert stopped["path"] == started["path"] and stopped["path"].endswith(".mp4")
    got = await ok_json(
        await far.front.get(f"/v1/boxes/{far.box}/files", params={"path": stopped["path"]})
    )
    video = tmp_path / "far.mp4"
    video.write_bytes(base64.b64decode(got["contents_base64"]))
    found = probe(video)
    assert "mp4" in found["format_name"] and found["codec_name"] == "h264"
    assert (found["width"], found["height"]) == (1280, 800)
    first, last = (frame_at(video, s) for s in (0.2, found["duration"] - 0.2))
    assert ImageChops.difference(first, last).getbbox() is not None
    kinds = [e["action"]["type"] for e in await trace_of(far, far.box) if e["kind"] == "acted"]
    assert kinds[-2:] == ["record", "record"], kinds[-4:]


async def test_wrong_certificates_are_a_clear_error_that_no_retry_fixes(far: Far) -> None:
    engine = far.engine
    # A client certificate of another CA: the engine refuses the handshake.
    stranger = docker_vendor("stranger", engine, engine.stranger)
    stranger["secrets"]["ca"] = engine.client.ca
    # Our certificate, but the engine's is checked against another CA.
    doubting = docker_vendor("doubting", engine, engine.client)
    doubting["secrets"]["ca"] = engine.stranger.ca
    saying = [
        (stranger, "refused the TLS handshake"),
        (doubting, "does not verify (unable to get local issuer"),
    ]
    for vendor, said in saying:
        await ok_json(await far.front.post("/v1/runtimes", json=vendor))
        made = await far.front.post("/v1/boxes", json={"placement": {"runtime": vendor["name"]}})
        body = await made.json()
        assert made.status == 503 and body["code"] == "unavailable", body
        assert said in body["message"] and body["retryable"] is False, body
        far.answers.append(str(body))
    # A PEM that is none is refused when the runtime is added.
    broken = docker_vendor("broken", engine, engine.client)
    broken["secrets"]["key"] = "not a key"
    message = await error_of(await far.front.post("/v1/runtimes", json=broken), 400, "bad_request")
    assert "secrets.cert and secrets.key" in message


async def test_a_far_host_that_goes_makes_the_box_unreachable_until_it_is_back(far: Far) -> None:
    click = [{"type": "click", "at": {"x": 30, "y": 30}}]
    far.engine.cut()
    try:
        assert (await far.front.post("/v1/jobs/reap")).status == 200
        view = await ok_json(await far.front.get(f"/v1/boxes/{far.box}"))
        assert view["state"] == "unreachable", view
        refused = await far.front.post(
            f"/v1/boxes/{far.box}/screens/0/actions", json={"actions": click}
        )
        await error_of(refused, 503, "unavailable")
    finally:
        far.engine.mend()
    assert (await far.front.post("/v1/jobs/reap")).status == 200
    assert (await ok_json(await far.front.get(f"/v1/boxes/{far.box}")))["state"] == "ready"
    assert (await act(far, click))["results"][0]["ok"] is True


async def test_a_restarted_server_has_the_runtime_and_adopts_its_box(far: Far) -> None:
    await far.restart()
    runtime = await ok_json(await far.front.get("/v1/runtimes/far"))
    assert runtime["provider"] == "docker" and runtime["secrets"] == ["ca", "cert", "key"]
    view = await ok_json(await far.front.get(f"/v1/boxes/{far.box}"))
    assert view["state"] == "ready" and view["runtime"] == "far", view
    # Its agent is reached again, through a new exec.
    assert (await act(far, [{"type": "click", "at": {"x": 20, "y": 20}}]))["results"][0]["ok"]


async def test_no_secret_is_in_any_answer_event_trace_log_or_file(far: Far) -> None:
    patched = await far.front.patch(
        "/v1/runtimes/far", json={"secrets": far.engine.client.secrets()}
    )
    far.answers.append(await patched.text())
    assert patched.status == 200
    for path in ("/v1/runtimes", "/v1/runtimes/far", "/v1/events", f"/v1/boxes/{far.box}"):
        far.answers.append(await (await far.front.get(path)).text())
    far.answers.append(await (await far.front.get(f"/v1/boxes/{far.box}/trace")).text())
    credentials = far.engine.client
    # A line of each PEM's body: bytes no other text has.
    markers = [text.splitlines()[2] for text in (credentials.key, credentials.cert)]
    files = [p.read_bytes() for p in far.state_dir.rglob("*") if p.is_file()]
    for marker in markers:
        assert not [a for a in far.answers if marker in a]
        assert not [line for line in far.log.lines if marker in line]
        assert not [f for f in files if marker.encode() in f]
    assert far.log.lines, "the server logged nothing: the search above saw nothing"
