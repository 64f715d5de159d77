"""Remote runtimes added through the vendor API (`POST/PATCH/DELETE /v1/runtimes`).

Each is kept as entries of the server's own trace (`runtime_added`, `runtime_changed`,
`runtime_removed`; the last of a name's is what it is), so a restarted server, and every
server that reads the same store, has them; a prune keeps those entries. Their secrets are
sealed (holm/secrets_box.py) before the entry is written and opened only to make the
runtime: no answer, log line, event or trace holds them in clear. A stored secret that
does not open under this server's key stops the server at start with the reason, rather
than leave its runtime out.

The runtime objects are made by the `MakeRuntime` the server is given (holm.adapters.
registry's: the engine knows a provider by nothing but the runtime it gets back), which
refuses a provider it has no client for and fields it cannot use, and reaches nothing
while it makes one: a runtime whose host is down is still added, and its boxes are
`unreachable` until it answers.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import msgspec

from holm.adapters.base import Runtime
from holm.errors import Denied, HolmError, NotFound, Unsupported
from holm.secrets_box import SecretsBox, SecretsKeyError
from holm.wire.api import AddRuntime, ChangeRuntime
from holm.wire.entries import (
    PAGE_MAX,
    SERVER_TRACE,
    Entry,
    RuntimeAdded,
    RuntimeChanged,
    RuntimeRemoved,
)
from holm.wire.runtime import RuntimeSetup

from .guards import boundary
from .journal import entry, stored

if TYPE_CHECKING:
    from .engine import Engine

log = logging.getLogger(__name__)

MakeRuntime = Callable[[RuntimeSetup], Awaitable[Runtime]]
_secrets_codec = msgspec.json.Decoder(dict[str, str])


def _aad(name: str) -> bytes:
    return f"runtime:{name}".encode()


class Vendors:
    """The runtimes of the vendor API, by name, as the server trace has them (with
    replicas, as every holmd appends to it: `follow`)."""

    def __init__(self, engine: Engine, make: MakeRuntime | None) -> None:
        self._engine = engine
        self._make = make
        self._records: dict[str, RuntimeAdded] = {}
        # The seq of the last entry of each name taken in: with replicas the feed follower
        # brings this holmd's own entries too (`follow`).
        self._folded: dict[str, int] = {}
        self._box: SecretsBox | None = None
        self._lock = asyncio.Lock()

    def record(self, name: str) -> RuntimeAdded | None:
        return self._records.get(name)

    async def _secrets_box(self) -> SecretsBox:
        if self._box is None:
            config = self._engine.config
            self._box = await asyncio.to_thread(
                SecretsBox.of_setting, config.secrets_key, config.state_dir
            )
        return self._box

    async def load(self) -> None:
        """Fold the server trace's runtime entries and make each runtime (at start). A
        `HOLM_SECRETS_KEY` that is no key stops the start, runtimes or none."""
        if self._engine.config.secrets_key:
            await self._secrets_box()
        after: int | None = None
        while True:
            page = await stored(self._engine.store.read(SERVER_TRACE, after, PAGE_MAX))
            if not page:
                break
            for item in page:
                match item:
                    case RuntimeAdded():
                        self._records[item.name] = item
                        self._folded[item.name] = item.seq
                    case RuntimeRemoved(name=name):
                        self._records.pop(name, None)
                        self._folded[name] = item.seq
            after = page[-1].seq
        try:
            await self._make_all()
        except BaseException:
            await self.close()
            raise

    async def _make_all(self) -> None:
        for name, record in sorted(self._records.items()):
            if name in self._engine.runtimes:
                log.error("runtime %s of the server trace is a runtime of this server's own", name)
                continue
            try:
                setup = await self._opened(record)
            except SecretsKeyError as exc:
                raise SecretsKeyError(f"runtime {name!r}: {exc}") from None
            if self._make is None:
                log.error("runtime %s is left out: this server makes no remote runtimes", name)
                continue
            try:
                self._engine.runtimes[name] = await self._make(setup)
            except HolmError as exc:
                # A provider this server has no client for (a newer server added it).
                log.error("runtime %s (%s) is left out: %s", name, record.provider, exc.message)

    async def follow(self, item: Entry) -> None:
        """An entry of the server trace as the feed follower reads it (replicas,
        engine/ownership.py): a runtime another holmd added or changed is made (again)
        here, one it removed is closed, so every holmd lists it and places boxes on it.
        This holmd's own entries, taken in already, are passed over. One removed there
        that boxes of this holmd still run on is kept here (its removal there checked
        that holmd's boxes only)."""
        if not isinstance(item, RuntimeAdded | RuntimeRemoved) or self._make is None:
            return
        name = item.name
        async with self._lock:
            if item.seq <= self._folded.get(name, -1):
                return
            self._folded[name] = item.seq
            if name in self._engine.runtimes and name not in self._records:
                log.error("runtime %s added through another holmd is one of this one's own", name)
                return
            if isinstance(item, RuntimeRemoved):
                using = [s.id for s in self._engine.boxes() if s.runtime == name]
                if using:
                    log.warning(
                        "runtime %s, removed elsewhere, runs %d box(es) here", name, len(using)
                    )
                    return
                self._records.pop(name, None)
                before = self._engine.runtimes.pop(name, None)
            else:
                try:
                    runtime = await self._make(await self._opened(item))
                except (HolmError, SecretsKeyError) as exc:
                    log.error("runtime %s added through another holmd is left out: %s", name, exc)
                    return
                self._records[name] = item
                before = self._engine.runtimes.get(name)
                self._engine.runtimes[name] = runtime
            if before is not None:
                await _closed(before)

    async def _opened(self, record: RuntimeAdded) -> RuntimeSetup:
        secrets: dict[str, str] = {}
        if record.sealed:
            box = await self._secrets_box()
            sealed = base64.urlsafe_b64decode(record.sealed.encode())
            secrets = _secrets_codec.decode(box.open(sealed, _aad(record.name)))
        return RuntimeSetup(
            name=record.name, provider=record.provider, fields=dict(record.fields), secrets=secrets
        )

    async def _sealed(self, name: str, secrets: dict[str, str]) -> str:
        if not secrets:
            return ""
        box = await self._secrets_box()
        return base64.urlsafe_b64encode(box.seal(msgspec.json.encode(secrets), _aad(name))).decode()

    def _maker(self) -> MakeRuntime:
        if self._make is None:
            raise Unsupported("this server adds no remote runtimes")
        return self._make

    async def add(self, body: AddRuntime) -> RuntimeAdded:
        make = self._maker()
        async with self._lock:
            if body.name in self._engine.runtimes:
                raise Denied(
                    f"this server has a runtime named {body.name!r} already", retryable=False
                )
            setup = RuntimeSetup(
                name=body.name,
                provider=body.provider,
                fields=dict(body.fields),
                secrets=dict(body.secrets),
            )
            runtime = await _looked_at(await make(setup))
            try:
                added = entry(
                    RuntimeAdded,
                    "agent",
                    name=body.name,
                    provider=body.provider,
                    fields=setup.fields,
                    secret_names=sorted(setup.secrets),
                    sealed=await self._sealed(body.name, setup.secrets),
                )
                [written] = await self._engine.journal.append(SERVER_TRACE, [added])
            except BaseException:
                await _closed(runtime)
                raise
            assert isinstance(written, RuntimeAdded)
            self._records[body.name] = written
            self._folded[body.name] = written.seq
            self._engine.runtimes[body.name] = runtime
            return written

    async def change(self, name: str, body: ChangeRuntime) -> RuntimeAdded:
        make = self._maker()
        async with self._lock:
            record = self._known(name)
            old = await self._opened(record)
            fields: dict[str, Any] = {**old.fields, **body.fields}
            fields = {key: value for key, value in fields.items() if value is not None}
            setup = RuntimeSetup(
                name=name,
                provider=record.provider,
                fields=fields,
                secrets={**old.secrets, **body.secrets},
            )
            runtime = await _looked_at(await make(setup))
            try:
                changed = entry(
                    RuntimeChanged,
                    "agent",
                    name=name,
                    provider=record.provider,
                    fields=fields,
                    secret_names=sorted(setup.secrets),
                    sealed=await self._sealed(name, setup.secrets),
                )
                [written] = await self._engine.journal.append(SERVER_TRACE, [changed])
            except BaseException:
                await _closed(runtime)
                raise
            assert isinstance(written, RuntimeAdded)
            self._records[name] = written
            self._folded[name] = written.seq
            before = self._engine.runtimes.get(name)
            self._engine.runtimes[name] = runtime
            if before is not None:
                await _closed(before)
            return written

    async def remove(self, name: str) -> None:
        async with self._lock:
            self._known(name)
            using = [s.id for s in self._engine.boxes() if s.runtime == name]
            if using:
                shown = ", ".join(using[:5]) + (" …" if len(using) > 5 else "")
                raise Denied(
                    f"runtime {name!r} has {len(using)} box(es): {shown}; delete them first",
                    retryable=False,
                )
            removed = entry(RuntimeRemoved, "agent", name=name)
            [written] = await self._engine.journal.append(SERVER_TRACE, [removed])
            self._folded[name] = written.seq
            self._records.pop(name, None)
            runtime = self._engine.runtimes.pop(name, None)
            if runtime is not None:
                await _closed(runtime)

    def _known(self, name: str) -> RuntimeAdded:
        record = self._records.get(name)
        if record is not None:
            return record
        if name in self._engine.runtimes:
            raise Unsupported(
                f"runtime {name!r} is this server's own; only runtimes added with "
                "POST /v1/runtimes can be changed or removed"
            )
        raise NotFound(f"no runtime named {name!r}")

    async def close(self) -> None:
        for name in list(self._records):
            runtime = self._engine.runtimes.pop(name, None)
            if runtime is not None:
                await _closed(runtime)


async def _looked_at(runtime: Runtime) -> Runtime:
    """The runtime after a first look at its boxes, which tells what it can do (`can`) when
    it answers; one that does not is added all the same (its host may be down)."""
    with contextlib.suppress(HolmError):
        await boundary(runtime.list(), "listing a runtime's boxes")
    return runtime


async def _closed(runtime: Runtime) -> None:
    with contextlib.suppress(Exception):
        await runtime.close()


__all__ = ["MakeRuntime", "Vendors"]
