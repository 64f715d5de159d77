"""Provider `holm`: another holmd as a runtime (`fields: {url, runtime?}`, `secrets:
{api_key}`, the other server's token).

A box placed here is a box of that server, made and ended through its REST API
(`POST /v1/boxes`, `…/pause`, `…/resume`, `…/stop`, `DELETE`), under that server's own box
ID; its agent, VNC servers and DevTools are reached through that server's stream relay
(`GET /v1/boxes/{id}/streams/{kind}`, a WebSocket that needs its server token), so every
step is sent by this server, which records the trace: the box is traced, forkable and
viewable here like any other. The other server keeps its own trace of the box's life.

Which of its boxes are this server's, under which of this server's IDs, is kept in
`<state_dir>/runtimes/<name>/boxes.json`, so a restarted server adopts them. What the
runtime can do (`can`) is the other server's runtime's, read when a box is made or listed.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
import weakref
from pathlib import Path
from typing import Any, Literal

import aiohttp
import msgspec
from yarl import URL

from holm.adapters.agent_desktop import AgentConnections, AgentDesktop
from holm.adapters.base import STREAM_LIMIT, Desktop, Stream
from holm.adapters.holmd.ws_stream import ws_stream
from holm.errors import (
    ERRORS_BY_CODE,
    BadRequest,
    Denied,
    ErrorBody,
    Gone,
    HolmError,
    Internal,
    NotFound,
    ScreenUnavailable,
    Timeout,
    Transport,
    Unavailable,
    Unsupported,
)
from holm.wire import agent_protocol as p
from holm.wire.runtime import Capabilities, RuntimeBox, RuntimeSetup, Started, StreamKind
from holm.wire.spec import Placement, Spec

FIELDS = {"url", "runtime"}
SECRETS = {"api_key"}
READY_TIMEOUT_S = 120.0
READY_POLL_S = 0.1
REQUEST_TIMEOUT = aiohttp.ClientTimeout(total=300, sock_connect=10)
# The largest WebSocket message the other server's relay sends (its CHUNK) and then some.
MAX_MESSAGE = 8 << 20
CONFIRM_DELETE = "x-holm-confirm-delete"

_error_decoder = msgspec.json.Decoder(ErrorBody)
_STATES: dict[str, Literal["running", "paused", "stopped"]] = {
    "starting": "running",
    "ready": "running",
    "unreachable": "running",
    "paused": "paused",
    "stopped": "stopped",
}


def holm_runtime(setup: RuntimeSetup, folder: Path, server_id: str | None) -> HolmRuntime:
    """The runtime of a vendor API setup; reaches nothing yet."""
    extra = sorted(set(setup.fields) - FIELDS) + sorted(set(setup.secrets) - SECRETS)
    if extra:
        raise BadRequest(
            f"provider 'holm' takes no {', '.join(map(repr, extra))} (fields: url, runtime; "
            "secrets: api_key)"
        )
    url = setup.fields.get("url")
    if not isinstance(url, str) or URL(url).scheme not in ("http", "https") or not URL(url).host:
        raise BadRequest("provider 'holm' needs fields.url, the other holmd's http(s):// URL")
    remote_runtime = setup.fields.get("runtime")
    if remote_runtime is not None and not isinstance(remote_runtime, str):
        raise BadRequest("fields.runtime names a runtime of the other holmd")
    return HolmRuntime(
        setup.name,
        url.rstrip("/"),
        setup.secrets.get("api_key"),
        folder=folder,
        server_id=server_id,
        remote_runtime=remote_runtime,
    )


class _Kept(msgspec.Struct, kw_only=True, omit_defaults=True):
    """What this server keeps of one of its boxes there: the other server's ID, and what
    that server does not know as this one does (its placement here, its owner here)."""

    remote: str
    placement: Placement | None = None
    owner: str | None = None


_kept_decoder = msgspec.json.Decoder(dict[str, _Kept])


class _BoxIds:
    """This server's box IDs → what it keeps of each, in a file (written whole)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._ids: dict[str, _Kept] | None = None

    def _load(self) -> dict[str, _Kept]:
        if self._ids is None:
            try:
                self._ids = _kept_decoder.decode(self.path.read_bytes())
            except FileNotFoundError:
                self._ids = {}
        return self._ids

    def has(self, box_id: str) -> bool:
        return box_id in self._load()

    def kept(self, box_id: str) -> _Kept:
        kept = self._load().get(box_id)
        if kept is None:
            raise NotFound(f"the {self.path.parent.name} runtime has no box {box_id}")
        return kept

    def get(self, box_id: str) -> str:
        return self.kept(box_id).remote

    def ours(self) -> dict[str, tuple[str, _Kept]]:
        """The other server's box IDs → this server's, and what it keeps of each."""
        return {kept.remote: (box, kept) for box, kept in self._load().items()}

    def put(self, box_id: str, kept: _Kept | None) -> None:
        ids = self._load()
        if kept is None:
            ids.pop(box_id, None)
        else:
            ids[box_id] = kept
        self.path.parent.mkdir(parents=True, exist_ok=True)
        partial = self.path.with_name(f".{self.path.name}.{os.getpid()}")
        partial.write_bytes(msgspec.json.encode(ids, order="sorted"))
        os.replace(partial, self.path)


class HolmRuntime:
    """Boxes of another holmd (see the module docstring)."""

    def __init__(
        self,
        name: str,
        url: str,
        api_key: str | None,
        *,
        folder: Path,
        server_id: str | None,
        remote_runtime: str | None = None,
        ready_timeout_s: float = READY_TIMEOUT_S,
    ) -> None:
        self.name = name
        self.url = url
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.server_id = server_id
        self.remote_runtime = remote_runtime
        self.ready_timeout_s = ready_timeout_s
        self._ids = _BoxIds(folder / "boxes.json")
        self._session: aiohttp.ClientSession | None = None
        self._can = Capabilities(pause=True, stop=True)
        self._desktops = AgentConnections()
        self._paused: set[str] = set()
        # The streams handed out, each ended when the runtime closes.
        self._streams: weakref.WeakSet[asyncio.StreamWriter] = weakref.WeakSet()

    def __repr__(self) -> str:
        return f"HolmRuntime({self.name!r}, {self.url!r})"

    def can(self) -> Capabilities:
        return self._can

    # The other server's API

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(timeout=REQUEST_TIMEOUT)
        return self._session

    def _unreachable(self, exc: BaseException) -> Unavailable:
        return Unavailable(f"the {self.name} runtime ({self.url}) did not answer: {exc}")

    async def _api(
        self, method: str, path: str, body: object = None, *, headers: dict[str, str] | None = None
    ) -> Any:
        data = None if body is None else msgspec.json.encode(body)
        sent = {**self._headers, **(headers or {})}
        if data is not None:
            sent["Content-Type"] = "application/json"
        try:
            async with self._client().request(
                method, self.url + path, data=data, headers=sent
            ) as answer:
                raw = await answer.read()
                status = answer.status
        except (aiohttp.ClientError, OSError, TimeoutError) as exc:
            raise self._unreachable(exc) from None
        if status >= 400:
            raise self._error(status, raw)
        return msgspec.json.decode(raw) if raw else None

    def _error(self, status: int, raw: bytes) -> HolmError:
        try:
            body = _error_decoder.decode(raw)
        except msgspec.DecodeError:
            return Transport(f"the {self.name} runtime answered {status}")
        if status == 401:
            # Its token is this server's to fix (PATCH the runtime's api_key), not the
            # caller's credential.
            return Unavailable(
                f"the {self.name} runtime refused this server's api_key: {body.message}",
                retryable=False,
            )
        cls = ERRORS_BY_CODE.get(body.code, Internal)
        return cls(f"{self.name}: {body.message}", retryable=body.retryable)

    async def _remote_box(self, box_id: str) -> dict[str, Any]:
        view: dict[str, Any] = await self._api("GET", f"/v1/boxes/{self._ids.get(box_id)}")
        return view

    async def _refresh_can(self) -> None:
        listed = await self._api("GET", "/v1/runtimes")
        for runtime in listed.get("runtimes", []):
            wanted = self.remote_runtime
            if runtime["name"] == wanted or (wanted is None and runtime.get("default")):
                self._can = msgspec.convert(runtime["can"], Capabilities)
                return

    # Lifecycle

    async def create(
        self, box_id: str, spec: Spec, placement: Placement, *, owner: str | None = None
    ) -> Started:
        profile = placement.profile
        if profile is not None and owner is not None:
            # As a docker runtime keeps one profile of a name for each workspace.
            profile = f"{owner}.{profile}"
        theirs = Placement(
            runtime=self.remote_runtime,
            memory=placement.memory,
            cpus=placement.cpus,
            expires_after_secs=placement.expires_after_secs,
            persistent=placement.persistent,
            profile=profile,
        )
        if await asyncio.to_thread(self._ids.has, box_id):
            raise BadRequest(f"the {self.name} runtime already has a box {box_id}")
        body = {"spec": msgspec.to_builtins(spec), "placement": msgspec.to_builtins(theirs)}
        view = await self._api("POST", "/v1/boxes", body, headers={"idempotency-key": box_id})
        kept = _Kept(remote=view["id"], placement=placement, owner=owner)
        await asyncio.to_thread(self._ids.put, box_id, kept)
        try:
            started = await self._await_ready(box_id)
            await self._refresh_can()
        except BaseException:
            with contextlib.suppress(HolmError):
                await self.delete(box_id)
            raise
        return started

    async def _await_ready(self, box_id: str) -> Started:
        deadline = time.monotonic() + self.ready_timeout_s
        while True:
            view = await self._remote_box(box_id)
            state = view.get("state")
            if state == "ready":
                break
            if state in ("failed", "gone", "stopped"):
                raise Unavailable(
                    f"box {box_id} did not come up on {self.name}: {view.get('reason')}",
                    retryable=False,
                )
            if time.monotonic() > deadline:
                raise Timeout(f"box {box_id} was not ready on {self.name} in time")
            await asyncio.sleep(READY_POLL_S)
        self._paused.discard(box_id)
        await self._connect(box_id)
        return self._started(box_id, len(view.get("viewer_urls") or []) or 1)

    def _started(self, box_id: str, screens: int) -> Started:
        remote = self._ids.get(box_id)
        return Started(viewer_urls=[f"holm:{self.name}/{remote}/{i}" for i in range(screens)])

    async def _lifecycle(self, box_id: str, verb: str) -> dict[str, Any]:
        try:
            view: dict[str, Any] = await self._api(
                "POST", f"/v1/boxes/{self._ids.get(box_id)}/{verb}"
            )
        except ScreenUnavailable as exc:
            # The other server's API refuses a step the box's state does not allow as
            # its clients see it (409 screen_unavailable); to the engine a runtime says
            # `Denied`, as every runtime does.
            raise Denied(str(exc)) from None
        return view

    async def pause(self, box_id: str) -> None:
        await self._lifecycle(box_id, "pause")
        self._paused.add(box_id)

    async def resume(self, box_id: str) -> None:
        # The other server's `resume` also starts a stopped box: a runtime's does not.
        if (await self._remote_box(box_id)).get("state") == "stopped":
            raise Denied(f"box {box_id} is stopped; start it rather than resume it")
        await self._lifecycle(box_id, "resume")
        self._paused.discard(box_id)

    async def stop(self, box_id: str) -> None:
        await self._desktops.drop(box_id)
        await self._lifecycle(box_id, "stop")
        self._paused.discard(box_id)

    async def start(self, box_id: str) -> Started:
        # The other server's `resume` brings a stopped box back with a new desktop.
        view = await self._remote_box(box_id)
        if view.get("state") != "stopped":
            raise Denied(f"box {box_id} is {view.get('state')}; stop it before starting it again")
        await self._lifecycle(box_id, "resume")
        return await self._await_ready(box_id)

    async def delete(self, box_id: str) -> None:
        await self._desktops.drop(box_id)
        if not await asyncio.to_thread(self._ids.has, box_id):
            # Deleting what is not there is not an error: a retried delete succeeds.
            return
        remote = self._ids.get(box_id)
        with contextlib.suppress(NotFound, Gone):
            await self._api("DELETE", f"/v1/boxes/{remote}", headers={CONFIRM_DELETE: "true"})
        self._paused.discard(box_id)
        await asyncio.to_thread(self._ids.put, box_id, None)

    async def list(self) -> list[RuntimeBox]:
        listed = await self._api("GET", "/v1/boxes")
        with contextlib.suppress(HolmError, KeyError, msgspec.ValidationError):
            await self._refresh_can()
        ours = await asyncio.to_thread(self._ids.ours)
        boxes: list[RuntimeBox] = []
        for view in listed.get("boxes", []):
            mine = ours.get(view.get("id"))
            state = _STATES.get(view.get("state", ""))
            if mine is None or state is None:
                continue
            box_id, kept = mine
            screens = len(view.get("viewer_urls") or []) or 1
            started = self._started(box_id, screens) if state != "stopped" else Started()
            boxes.append(
                RuntimeBox(
                    box_id=box_id,
                    state=state,
                    server_id=self.server_id,
                    spec=msgspec.convert(view["spec"], Spec) if view.get("spec") else None,
                    placement=kept.placement,
                    owner=kept.owner,
                    created_at_ms=view.get("created_at_ms"),
                    viewer_urls=started.viewer_urls,
                )
            )
        return boxes

    # Inside a box

    async def desktop(self, box_id: str) -> Desktop:
        live = self._desktops.live(box_id)
        if live is not None and box_id not in self._paused:
            return live
        state = (await self._remote_box(box_id)).get("state")
        if state == "paused":
            self._paused.add(box_id)
            raise ScreenUnavailable(f"box {box_id} is paused; resume it first")
        if state == "stopped":
            raise ScreenUnavailable(f"box {box_id} is stopped; start it first")
        self._paused.discard(box_id)
        if live is not None:
            return live
        return await self._connect(box_id)

    async def _connect(self, box_id: str) -> AgentDesktop:
        await self._desktops.drop(box_id)
        stream = await self.open_stream(box_id, "agent", limit=p.MAX_FRAME_BYTES)
        return await self._desktops.adopt(box_id, stream)

    async def open_stream(
        self, box_id: str, kind: StreamKind, screen: int = 0, *, limit: int = STREAM_LIMIT
    ) -> Stream:
        remote = self._ids.get(box_id)
        url = f"{self.url}/v1/boxes/{remote}/streams/{kind}?screen={screen}"
        try:
            ws = await self._client().ws_connect(
                url, headers=self._headers, max_msg_size=MAX_MESSAGE, compress=0
            )
        except aiohttp.WSServerHandshakeError as exc:
            raise _refused(self.name, box_id, kind, exc.status) from None
        except (aiohttp.ClientError, OSError, TimeoutError) as exc:
            raise self._unreachable(exc) from None
        stream = ws_stream(ws, limit)
        self._streams.add(stream[1])
        return stream

    async def close(self) -> None:
        await self._desktops.close()
        for writer in list(self._streams):
            writer.transport.abort()
        self._streams.clear()
        if self._session is not None:
            await self._session.close()


def _refused(name: str, box_id: str, kind: str, status: int) -> HolmError:
    what = f"the {name} runtime refused box {box_id}'s {kind} stream ({status})"
    match status:
        case 400:
            return Unsupported(what)
        case 404 | 410:
            return NotFound(what)
        case 409:
            return ScreenUnavailable(what)
        case 401 | 403:
            return Unavailable(what + ": check its api_key", retryable=False)
        case _:
            return Transport(what)


__all__ = ["HolmRuntime", "holm_runtime"]
