"""Provider `holm`: a box placed on another holmd is driven from the front server through
that server's API and stream relay, while the front records the trace: its trace is what
its clients were told, a fork of it onto the front's own runtime replays it, and a back
server that goes away makes its boxes `unreachable` until it is back."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from http_kit import Client, error_of, ok_json
from vendor_kit import BACK_TOKEN, back_server, front_server, holm_vendor

from holm.streams import splice

STEPS: list[dict[str, Any]] = [
    {"type": "click", "at": {"x": 40, "y": 50}},
    {"type": "type", "text": "hello"},
    {"type": "press", "chord": ["ctrl"], "then": ["a"]},
    {"type": "move", "to": {"x": 7, "y": 8}},
]


async def far_box(front: Client, url: str) -> str:
    await ok_json(await front.post("/v1/runtimes", json=holm_vendor("far", url)))
    box = await ok_json(await front.post("/v1/boxes", json={"placement": {"runtime": "far"}}))
    assert box["state"] == "ready" and box["runtime"] == "far"
    return str(box["id"])


async def test_the_front_trace_is_what_its_clients_were_told_and_a_fork_replays_it(
    tmp_path: Path,
) -> None:
    async with back_server(tmp_path / "back") as (back, url), front_server(tmp_path / "f") as front:
        box = await far_box(front, url)
        told: list[dict[str, Any]] = []
        for step in STEPS:
            answer = await ok_json(
                await front.post(f"/v1/boxes/{box}/screens/0/actions", json={"actions": [step]})
            )
            told.extend(answer["results"])
        wrote = await ok_json(
            await front.post(f"/v1/boxes/{box}/exec", json={"argv": ["echo", "far away"]})
        )
        assert wrote["code"] == 0 and wrote["stdout"] == "far away\n"
        entries = (await ok_json(await front.get(f"/v1/boxes/{box}/trace")))["entries"]
        acted = [e for e in entries if e["kind"] == "acted"]
        assert [e["action"]["type"] for e in acted] == [s["type"] for s in STEPS]
        assert [e["ok"] for e in acted] == [r["ok"] for r in told] == [True] * len(STEPS)
        assert [e["action"]["at"] for e in acted[:1]] == [told[0]["value"]["at"]]
        [executed] = [e for e in entries if e["kind"] == "executed"]
        assert executed["stdout"] == wrote["stdout"]
        # The back server's trace of its box holds none of the front's steps: they are
        # the front's to record.
        headers = {"Authorization": f"Bearer {BACK_TOKEN}"}
        [theirs] = (await ok_json(await back.get("/v1/boxes", headers=headers)))["boxes"]
        back_trace = await ok_json(
            await back.get(f"/v1/boxes/{theirs['id']}/trace", headers=headers)
        )
        assert "acted" not in [e["kind"] for e in back_trace["entries"]]
        # A fork onto the front's own runtime does the same steps again, and they answer
        # the same.
        forked = await ok_json(
            await front.post(f"/v1/boxes/{box}/fork", json={"placement": {"runtime": "memory"}})
        )
        assert forked["box"]["runtime"] == "memory" and forked["box"]["state"] == "ready"
        report = forked["replay"]
        assert (
            report["stopped_at"] is None and report["ok"] == report["attempted"] == len(STEPS) + 1
        )
        fork_entries = (await ok_json(await front.get(f"/v1/boxes/{forked['box']['id']}/trace")))[
            "entries"
        ]
        again = [e for e in fork_entries if e["kind"] == "acted"]
        assert [(e["action"], e["ok"]) for e in again] == [(e["action"], e["ok"]) for e in acted]


class Proxy:
    """A TCP forwarder to the back server on a port of its own, which a test takes down
    (every connection cut) and brings up again on the same port: a host that goes away."""

    def __init__(self, port: int) -> None:
        self.back_port = port
        self.port = 0
        self._server: asyncio.Server | None = None
        self._open: set[asyncio.StreamWriter] = set()

    async def _join(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        there = await asyncio.open_connection("127.0.0.1", self.back_port)
        self._open.update((writer, there[1]))
        await splice((reader, writer), there)

    async def up(self) -> None:
        self._server = await asyncio.start_server(self._join, "127.0.0.1", self.port)
        self.port = self._server.sockets[0].getsockname()[1]

    async def down(self) -> None:
        assert self._server is not None
        self._server.close()
        for writer in self._open:
            writer.close()
        self._open.clear()
        await self._server.wait_closed()


async def test_a_back_server_that_goes_makes_its_boxes_unreachable_until_it_is_back(
    tmp_path: Path,
) -> None:
    # Reached through the proxy, under its port.
    anywhere = {"allowed_hosts": ["*"]}
    async with (
        back_server(tmp_path / "back", **anywhere) as (back, _),
        front_server(tmp_path / "f") as front,
    ):
        proxy = Proxy(back.server.port)
        await proxy.up()
        try:
            box = await far_box(front, f"http://127.0.0.1:{proxy.port}")
            await proxy.down()
            assert (await front.post("/v1/jobs/reap")).status == 200
            view = await ok_json(await front.get(f"/v1/boxes/{box}"))
            assert view["state"] == "unreachable", view
            click = {"actions": [STEPS[0]]}
            refused = await front.post(f"/v1/boxes/{box}/screens/0/actions", json=click)
            await error_of(refused, 503, "unavailable")
            await proxy.up()
            assert (await front.post("/v1/jobs/reap")).status == 200
            assert (await ok_json(await front.get(f"/v1/boxes/{box}")))["state"] == "ready"
            acted = await front.post(f"/v1/boxes/{box}/screens/0/actions", json=click)
            assert (await ok_json(acted))["results"][0]["ok"] is True
        finally:
            await proxy.down()
