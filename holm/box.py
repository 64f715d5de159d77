"""A box of holmd as an object: `Box` (plain calls) and `AsyncBox` (coroutines), in the
shape E2B's and cua's SDKs made familiar.

    from holm import Box

    with Box.create() as box:
        box.open("https://example.com")
        box.click(640, 400)
        png = box.screenshot()

The server is the CLI's: `HOLM_SERVER_URL` and `HOLM_SERVER_TOKEN` (else the token file of
a holmd on this machine; holm/client.py), or `url` and `token`. The box is removed when
the `with` block ends, unless `keep=True`. Everything it does is in its trace (`trace()`),
and `fork()` makes a box that does it again. The methods are those of every box object
(holm/box_methods.py); `holm.Computer` has the same ones without a server.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from types import TracebackType
from typing import Any

from holm.client import HolmClient, SyncHolmClient
from holm.errors import Failed, HolmError
from holm.wire import actions as a
from holm.wire import results as r
from holm.wire.api import ActionsRequest, BoxView, TracePage
from holm.wire.spec import DesktopSpec, Placement, Spec

from .box_methods import BlockingBox, BoxMethods, png_of, result_of, run_to_the_end

# How often a box that is still `starting` is read again.
POLL_SECS = 0.1


class RestDriver:
    """A box's actions as holmd's REST calls (`HolmClient`'s, or its blocking twin's)."""

    def __init__(self, client: HolmClient, box_id: str) -> None:
        self.client = client
        self._box_id = box_id

    @property
    def box_id(self) -> str:
        return self._box_id

    async def steps(self, actions: Sequence[a.Action], screen: int) -> list[Any]:
        request = ActionsRequest(actions=list(actions))
        done = await self.client.act(self._box_id, request, screen=screen)
        values = []
        for action, step in zip(actions, done.results, strict=False):
            if not step.ok:
                raise HolmError.from_body(step.error) if step.error else Failed(step.type)
            values.append(result_of(action, step.value))
        return values

    async def screenshot(self, screen: int) -> bytes:
        return png_of((await self.client.frame(self._box_id, screen=screen)).png_base64)

    async def exec(self, what: a.ExecWhat) -> r.ExecResult:
        return await self.client.exec(
            self._box_id, what.argv, timeout_ms=what.timeout_ms, env=what.env
        )

    async def read_file(self, path: str) -> bytes:
        return await self.client.read_file(self._box_id, path)

    async def write_file(self, path: str, contents: bytes) -> r.FileSaved:
        return await self.client.write_file(self._box_id, path, contents)

    async def list_files(self, path: str) -> r.FileList:
        return await self.client.list_files(self._box_id, path)

    async def trace(self) -> TracePage:
        return await self.client.trace(self._box_id)

    async def remove(self) -> None:
        await self.client.delete_box(self._box_id)


def spec_of(spec: Spec | None, width: int | None, height: int | None) -> Spec:
    """`spec`, or the default one, at `width` x `height` when given."""
    spec = spec or Spec()
    if width is None and height is None:
        return spec
    desktop = spec.desktop
    return Spec(
        desktop=DesktopSpec(
            server=desktop.server,
            width=width or desktop.width,
            height=height or desktop.height,
            screens=desktop.screens,
            features=desktop.features,
            packages=desktop.packages,
        ),
        policy=spec.policy,
        apps=spec.apps,
    )


async def _started(
    client: HolmClient, box: BoxView, sleep: Callable[[float], Awaitable[None]]
) -> BoxView:
    """`box` once it is no longer `starting` (a server that queues its jobs answers
    before the box is up); a box that failed to start is an error."""
    while box.state == "starting":
        await sleep(POLL_SECS)
        box = await client.get_box(box.id)
    if box.state == "failed":
        raise Failed(f"box {box.id} did not start: {box.reason or 'no reason given'}")
    return box


async def _sleep_blocking(secs: float) -> None:
    """A pause of a blocking box's coroutine, which must not wait on an event loop."""
    time.sleep(secs)


class AsyncBox(BoxMethods):
    """A box of holmd, its methods coroutines (`async with await AsyncBox.create() as
    box`). Removed when the block ends, unless `keep`."""

    def __init__(
        self, client: HolmClient, box: BoxView, *, keep: bool = False, owns_client: bool = True
    ) -> None:
        self.client = client
        self.view = box
        self.keep = keep
        # A fork shares its source's connection, which the source closes.
        self._owns_client = owns_client
        super().__init__(RestDriver(client, box.id))

    @classmethod
    async def create(
        cls,
        spec: Spec | None = None,
        *,
        width: int | None = None,
        height: int | None = None,
        placement: Placement | None = None,
        keep: bool = False,
        url: str | None = None,
        token: str | None = None,
    ) -> AsyncBox:
        """A new box, ready to drive: of `spec` (the default desktop; `width` x `height`
        when given) on holmd at `url` (else `HOLM_SERVER_URL`, as the CLI)."""
        client = HolmClient(url, token)
        try:
            box = await client.create_box(spec_of(spec, width, height), placement)
            return cls(client, await _started(client, box, asyncio.sleep), keep=keep)
        except BaseException:
            await client.close()
            raise

    async def fork(self, *, keep: bool | None = None) -> AsyncBox:
        """A new box that does this one's recorded steps again (`keep` as this one's)."""
        done = await self.client.fork(self.id)
        box = await _started(self.client, done.box, asyncio.sleep)
        keep = self.keep if keep is None else keep
        return AsyncBox(self.client, box, keep=keep, owns_client=False)

    async def remove(self) -> None:
        await self._driver.remove()

    async def close(self) -> None:
        """Remove the box, unless `keep`; then close the connection (a fork's is its
        source's, closed with it)."""
        try:
            if not self.keep:
                await self.remove()
        finally:
            if self._owns_client:
                await self.client.close()

    async def __aenter__(self) -> AsyncBox:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()


class Box(BlockingBox):
    """A box of holmd, its methods plain calls (`with Box.create() as box`). Removed when
    the block ends, unless `keep`."""

    def __init__(
        self, client: SyncHolmClient, box: BoxView, *, keep: bool = False, owns_client: bool = True
    ) -> None:
        self.client = client
        self.view = box
        self.keep = keep
        # A fork shares its source's connection, which the source closes.
        self._owns_client = owns_client
        super().__init__(BoxMethods(RestDriver(client.client, box.id)))

    @classmethod
    def create(
        cls,
        spec: Spec | None = None,
        *,
        width: int | None = None,
        height: int | None = None,
        placement: Placement | None = None,
        keep: bool = False,
        url: str | None = None,
        token: str | None = None,
    ) -> Box:
        """A new box, ready to drive: of `spec` (the default desktop; `width` x `height`
        when given) on holmd at `url` (else `HOLM_SERVER_URL`, as the CLI)."""
        client = SyncHolmClient(url, token)
        try:
            box = client.create_box(spec_of(spec, width, height), placement)
            return cls(
                client, run_to_the_end(_started(client.client, box, _sleep_blocking)), keep=keep
            )
        except BaseException:
            client.close()
            raise

    def fork(self, *, keep: bool | None = None) -> Box:
        """A new box that does this one's recorded steps again (`keep` as this one's)."""
        done = self.client.fork(self.id)
        box = run_to_the_end(_started(self.client.client, done.box, _sleep_blocking))
        keep = self.keep if keep is None else keep
        return Box(self.client, box, keep=keep, owns_client=False)

    def remove(self) -> None:
        self.client.delete_box(self.id)

    def close(self) -> None:
        """Remove the box, unless `keep`; then close the connection (a fork's is its
        source's, closed with it)."""
        try:
            if not self.keep:
                self.remove()
        finally:
            if self._owns_client:
                self.client.close()

    def __enter__(self) -> Box:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


__all__ = ["AsyncBox", "Box"]
