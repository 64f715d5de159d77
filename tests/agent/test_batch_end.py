"""A batch's end answers the screen's windows and tabs from what the agent keeps (the
window watch, the tab watch) rather than asking X and DevTools each time: a change made by
anyone (the box's programs, a person, another DevTools client) shows in the next answer.
Each test first takes an answer, so that what it checks comes from the kept listing, then
makes the change outside the agent, waits until the X server or DevTools itself shows it,
and takes one answer more."""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
import msgspec
from aiohttp import web
from desktop_kit import close_window, launch
from Xlib.display import Display

from holm.adapters.agent_desktop import AgentDesktop
from holm.agent.x11 import windows as w
from holm.wire import actions as a
from holm.wire import agent_protocol as p
from holm.wire.runtime import BatchEnd

from .conftest import RunningAgent, write_page

SCREEN = 1


async def display_of(desktop: AgentDesktop, screen: int) -> str:
    return (await desktop.info()).screens[screen].display


async def until(check: Callable[[], Awaitable[bool]]) -> None:
    """Poll `check` (bounded) until it is true: the change has happened for X or DevTools,
    seen from outside the agent."""
    for _ in range(200):
        if await check():
            return
        await asyncio.sleep(0.05)
    raise AssertionError("the change never happened")


def on_x(check: Callable[[], bool]) -> Callable[[], Awaitable[bool]]:
    return lambda: asyncio.to_thread(check)


def title_of(display: str, window: str) -> str:
    conn = Display(display)
    try:
        found = w.read_window(conn, w.parse_id(window))
        return "" if found is None else found.title
    finally:
        conn.close()


def client_ids(display: str) -> set[str]:
    conn = Display(display)
    try:
        return {w.format_id(i) for i in w.client_ids(conn)}
    finally:
        conn.close()


async def ended(desktop: AgentDesktop, screen: int) -> BatchEnd:
    return await desktop.end_batch(screen)


async def test_a_window_opened_retitled_and_closed_shows_in_the_next_answer(
    desktop: AgentDesktop,
) -> None:
    display = await display_of(desktop, SCREEN)
    await ended(desktop, SCREEN)
    term = await launch(desktop, SCREEN, "xterm")
    try:
        assert term.id in {found.id for found in (await ended(desktop, SCREEN)).windows}

        # A program (not the agent) renames its window.
        env = {"DISPLAY": display, "PATH": "/usr/bin:/bin"}
        subprocess.run(
            ["xdotool", "set_window", "--name", "renamed by xdotool", str(int(term.id, 16))],
            env=env,
            check=True,
        )
        await until(on_x(lambda: title_of(display, term.id) == "renamed by xdotool"))
        listed = {found.id: found for found in (await ended(desktop, SCREEN)).windows}
        assert listed[term.id].title == "renamed by xdotool"
    finally:
        await close_window(desktop, SCREEN, term.id)
    await until(on_x(lambda: term.id not in client_ids(display)))
    assert term.id not in {found.id for found in (await ended(desktop, SCREEN)).windows}


async def devtools(desktop: AgentDesktop, screen: int) -> str:
    port = (await desktop.info()).screens[screen].devtools_port
    assert port is not None
    return f"http://127.0.0.1:{port}"


async def page_targets(session: aiohttp.ClientSession, base: str) -> list[dict[str, Any]]:
    async with session.get(f"{base}/json/list") as response:
        targets = await response.json(content_type=None)
    return [t for t in targets if t.get("type") == "page"]


async def test_a_tab_opened_and_navigated_by_another_devtools_client_shows_in_the_next_answer(
    desktop: AgentDesktop, agent: RunningAgent
) -> None:
    first = write_page(agent, "tab-first.html", "<title>first</title>first")
    second = write_page(agent, "tab-second.html", "<title>second</title>second")
    arrived: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    async def page_in_a_while(request: web.Request) -> web.Response:
        await asyncio.sleep(3)
        if not arrived.done():
            arrived.set_result(None)
        return web.Response(text="<title>slow</title>slow", content_type="text/html")

    app = web.Application()
    app.router.add_get("/slow", page_in_a_while)
    server = web.AppRunner(app, shutdown_timeout=0.5)
    await server.setup()
    await web.TCPSite(server, "127.0.0.1", 0).start()
    slow = f"http://127.0.0.1:{server.addresses[0][1]}/slow"
    base = await devtools(desktop, SCREEN)
    await ended(desktop, SCREEN)
    async with aiohttp.ClientSession() as session:
        # Another DevTools client (not the agent) opens a tab...
        async with session.put(f"{base}/json/new?{first}") as response:
            tab = (await response.json(content_type=None))["id"]
        try:
            assert tab in {t.tab for t in (await ended(desktop, SCREEN)).tabs}

            async def loaded(url: str) -> bool:
                return any(
                    t["id"] == tab and t["url"] == url for t in await page_targets(session, base)
                )

            await until(lambda: loaded(first))
            listed = {t.tab: t for t in (await ended(desktop, SCREEN)).tabs}
            assert listed[tab].url == first

            # ...and navigates it, through its own session on the page.
            target = next(t for t in await page_targets(session, base) if t["id"] == tab)
            async with session.ws_connect(target["webSocketDebuggerUrl"]) as ws:
                await ws.send_json({"id": 1, "method": "Page.navigate", "params": {"url": second}})
                while (await ws.receive_json()).get("id") != 1:
                    pass
            await until(lambda: loaded(second))
            listed = {t.tab: t for t in (await ended(desktop, SCREEN)).tabs}
            assert listed[tab].url == second

            # A page that takes its time: DevTools lists the new address from the start of
            # the navigation, long before it commits, and so must the next answer.
            async with session.ws_connect(target["webSocketDebuggerUrl"]) as ws:
                await ws.send_json({"id": 2, "method": "Page.navigate", "params": {"url": slow}})
                await until(lambda: loaded(slow))
                listed = {t.tab: t for t in (await ended(desktop, SCREEN)).tabs}
                assert listed[tab].url == slow
                assert not arrived.done()
        finally:
            async with session.get(f"{base}/json/close/{tab}"):
                pass
            await server.cleanup()

        async def gone() -> bool:
            return all(t["id"] != tab for t in await page_targets(session, base))

        await until(gone)
        assert tab not in {t.tab for t in (await ended(desktop, SCREEN)).tabs}


async def test_an_agent_from_before_batch_end_still_answers_windows_and_tabs(
    agent: RunningAgent, tmp_path: Path
) -> None:
    """A box started by an older holmd outlives it: its agent answers `end_batch` with
    `[Released, Held]` only. Here the real agent, behind a relay that gives its answers
    that older shape."""
    ending: set[int] = set()

    def noted(request: p.Request) -> None:
        if isinstance(request, p.EndBatch):
            ending.add(request.id)

    def older_shape(body: bytes) -> bytes:
        reply = p.response_decoder.decode(body)
        if isinstance(reply, p.RawOk) and reply.id in ending:
            ended = msgspec.msgpack.decode(reply.value, type=BatchEnd)
            return p.encoder.encode(p.Ok(reply.id, [ended.released, ended.held]))
        return body

    relay = _relay(agent, noted, older_shape)

    path = tmp_path / "older.sock"
    server = await asyncio.start_unix_server(relay, path=str(path), limit=p.MAX_FRAME_BYTES)
    try:
        older = await AgentDesktop.connect(path)
        await older.act(0, a.KeyDown(key="shift"))
        ended = await older.end_batch(0)
        await older.close()
    finally:
        server.close()
    assert ending and ended.released.keys == ["shift"]
    assert any(found.class_ == "Chromium" for found in ended.windows)
    assert ended.tabs


async def _first_done(*calls: Awaitable[object]) -> list[int]:
    """The order in which `calls` (asked already) were answered."""
    order: list[int] = []
    futures = [asyncio.ensure_future(call) for call in calls]
    for index, future in enumerate(futures):
        future.add_done_callback(lambda _, index=index: order.append(index))
    await asyncio.gather(*futures)
    return order


async def test_an_end_sent_right_behind_a_step_is_done_after_it(desktop: AgentDesktop) -> None:
    """The agent says it orders them (`ordered_end`, which `ready` told), so the client
    sends the end at once; a slow step (keys typed 60 ms apart, on the input thread) is
    still done first, and the shift it held is released by that end."""
    assert (await desktop.info()).ordered_end
    typing = desktop.act(SCREEN, a.Type(text="abcd", delay_ms=60))
    holding = desktop.act(SCREEN, a.KeyDown(key="shift"))
    end = desktop.end_batch(SCREEN)
    assert await _first_done(end, typing, holding) == [1, 2, 0]
    assert (await end).released.keys == ["shift"]


async def test_the_agent_does_an_end_after_the_acts_sent_before_it(agent: RunningAgent) -> None:
    """On the wire: a `wait` and an `end_batch` in one write; the end's answer comes after
    the wait's, though the end alone takes a few milliseconds."""
    reader, writer = await asyncio.open_unix_connection(str(agent.socket))
    try:
        waiting = p.Act(id=1, screen=SCREEN, action=a.Wait(ms=300))
        writer.write(p.frame(waiting) + p.frame(p.EndBatch(id=2, screen=SCREEN)))
        answers = [p.response_decoder.decode(await p.read_frame(reader)).id for _ in range(2)]
    finally:
        writer.close()
    assert answers == [1, 2]


async def test_a_client_of_an_agent_that_does_not_order_them_waits_for_the_step(
    agent: RunningAgent, tmp_path: Path
) -> None:
    """Until the agent has said it orders an end behind the acts before it (a connection
    that asked for no info, as of an older agent), the client sends the end only once the
    steps on its screen are answered. A relay to the real agent notes what passes."""
    seen: list[str] = []

    def answered(body: bytes) -> bytes:
        seen.append(f"answer {p.response_decoder.decode(body).id}")
        return body

    relay = _relay(
        agent, lambda request: seen.append(f"{type(request).__name__} {request.id}"), answered
    )

    path = tmp_path / "plain.sock"
    server = await asyncio.start_unix_server(relay, path=str(path), limit=p.MAX_FRAME_BYTES)
    try:
        plain = await AgentDesktop.connect(path)
        waiting = plain.act(SCREEN, a.Wait(ms=200))
        await plain.end_batch(SCREEN)
        await waiting
        await plain.close()
    finally:
        server.close()
    assert seen[:3] == ["Act 1", "answer 1", "EndBatch 2"], seen


Relay = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


def _relay(
    agent: RunningAgent,
    on_request: Callable[[p.Request], object],
    on_answer: Callable[[bytes], bytes],
) -> Relay:
    """A connection handler that passes each frame on to the real agent and back: each
    request is shown to `on_request`, each answer's body goes back as `on_answer` makes it."""

    async def relay(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_unix_connection(
            str(agent.socket), limit=p.MAX_FRAME_BYTES
        )

        async def down() -> None:
            with contextlib.suppress(asyncio.IncompleteReadError, ConnectionError):
                while True:
                    body = on_answer(await p.read_frame(up_reader))
                    writer.write(len(body).to_bytes(4, "big") + body)

        answering = asyncio.create_task(down())
        with contextlib.suppress(asyncio.IncompleteReadError, ConnectionError):
            while True:
                request = p.request_decoder.decode(await p.read_frame(reader))
                on_request(request)
                up_writer.write(p.frame(request))
        answering.cancel()
        up_writer.close()

    return relay
