"""The VNC doors of holmd (door.py): one per screen of each box with
`spec.policy.auth: "password"`, kept in step with the boxes.

A door is opened when its box is made (so the create answer has its port) and by a sweep
every `SWEEP_SECS` (a box made by a queued job or a fork, and every password box after
holmd restarts); the sweep closes the doors of a box removed, gone or failed. Ports are the
system's choice: after a restart a door has a new one (`GET /v1/boxes/{id}` shows it), the
password stays (made from the server's key, holm/vnc_auth.py).

A door listens on 127.0.0.1; with `bind: "any"` on every IPv4 address (0.0.0.0), but only
while the server allows it (`HOLM_ALLOW_PUBLIC_VIEWERS=1`, checked at create too): a box
recorded with it that a server without the setting brings back gets a loopback door, with
a warning."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from urllib.parse import urlsplit

from aiohttp import web

from holm.config import Config
from holm.engine import Engine
from holm.projections.box_state import BoxState
from holm.wire.actions import Action
from holm.wire.api import VncAccess, VncDoorView
from holm.wire.spec import Spec

from .door import OnInput, VncDoor
from .person import PersonInput
from .relay import CHUNK

log = logging.getLogger(__name__)

SWEEP_SECS = 1.0
LOOPBACK = "127.0.0.1"
EVERY_ADDRESS = "0.0.0.0"
# The states of a box whose door stays open (a paused box's door says so to a client).
_OPEN_STATES = frozenset({"ready", "paused", "stopped", "unreachable"})


def wants_doors(state: BoxState) -> bool:
    spec = state.spec or Spec()
    return spec.policy.auth == "password" and not state.removed and state.state in _OPEN_STATES


class Doors:
    """The open doors, by box."""

    def __init__(self, engine: Engine, config: Config) -> None:
        self._engine = engine
        self._config = config
        self._open: dict[str, list[VncDoor]] = {}
        self._lock = asyncio.Lock()
        self._sweeper: asyncio.Task[None] | None = None

    def of(self, box_id: str) -> list[VncDoor]:
        return list(self._open.get(box_id, ()))

    async def ensure(self, state: BoxState) -> list[VncDoor]:
        """The box's doors, opened now if it should have them and has none."""
        async with self._lock:
            if state.id not in self._open and wants_doors(state):
                self._open[state.id] = await self._opened(state)
            return self.of(state.id)

    async def _opened(self, state: BoxState) -> list[VncDoor]:
        spec = state.spec or Spec()
        host = LOOPBACK
        if spec.policy.bind == "any":
            if self._config.allow_public_viewers:
                host = EVERY_ADDRESS
            else:
                log.warning(
                    'box %s asks for bind "any", which this server does not allow '
                    "(HOLM_ALLOW_PUBLIC_VIEWERS): its VNC door is on loopback",
                    state.id,
                )
        doors = [self._door(state.id, screen, host) for screen in range(state.screens)]
        opened: list[VncDoor] = []
        try:
            for door in doors:
                await door.open()
                opened.append(door)
        except BaseException:
            for door in opened:
                await door.close()
            raise
        log.info(
            "opened the VNC doors of %s on %s ports %s",
            state.id,
            host,
            [door.port for door in opened],
        )
        return opened

    def _door(self, box_id: str, screen: int, host: str) -> VncDoor:
        engine = self._engine

        async def password() -> str:
            return await engine.vnc_password(box_id)

        async def open_screen() -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
            return await engine.open_stream(box_id, "vnc", screen, limit=CHUNK)

        def make_input() -> OnInput:
            async def record(action: Action) -> None:
                await engine.record_person(box_id, screen, action)

            return PersonInput(record)

        return VncDoor(box_id, screen, host, password, open_screen, make_input)

    async def sweep(self) -> None:
        """Open the doors boxes should have and close those they should not."""
        for state in self._engine.journal.states():
            if wants_doors(state) and state.id not in self._open:
                try:
                    await self.ensure(state)
                except OSError as exc:
                    log.warning("could not open the VNC doors of %s: %s", state.id, exc)
        async with self._lock:
            for box_id in list(self._open):
                kept = self._engine.journal.state(box_id)
                if kept is None or not wants_doors(kept):
                    for door in self._open.pop(box_id):
                        await door.close()
                    log.info("closed the VNC doors of %s", box_id)

    async def _sweep_always(self) -> None:
        while True:
            try:
                await self.sweep()
            except Exception:
                log.exception("sweeping the VNC doors failed")
            await asyncio.sleep(SWEEP_SECS)

    def start(self) -> None:
        self._sweeper = asyncio.create_task(self._sweep_always(), name="vnc doors")

    async def close(self) -> None:
        if self._sweeper is not None:
            self._sweeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._sweeper
        async with self._lock:
            for doors in self._open.values():
                for door in doors:
                    await door.close()
            self._open.clear()

    def access(
        self, state: BoxState, public_base: str | None, password: str | None = None
    ) -> VncAccess | None:
        """What a box answer says of the box's doors: where they are and, in the answer
        that made the box, the password holmd made for it."""
        spec = state.spec or Spec()
        if spec.policy.auth != "password":
            return None
        host = spec.policy.advertise or LOOPBACK
        if not spec.policy.advertise and spec.policy.bind == "any" and public_base:
            host = urlsplit(public_base).hostname or LOOPBACK
        shown = f"[{host}]" if ":" in host else host
        doors = [
            VncDoorView(
                screen=door.screen, host=host, port=door.port, url=f"vnc://{shown}:{door.port}"
            )
            for door in self.of(state.id)
        ]
        return VncAccess(doors=doors, password=password)


DOORS = web.AppKey("vnc_doors", Doors)

__all__ = ["DOORS", "SWEEP_SECS", "Doors", "wants_doors"]
