"""The images API over a runtime that builds images: build (once), list, read, remove
(refused while a box uses the image), queued builds, the `image.built`/`image.removed`
events; and `unsupported` from a runtime that builds none.

The runtime here is the in-memory double with a builder in memory (real builds take
minutes; the docker runtime's own tests build real images through the same four calls)."""

from __future__ import annotations

import asyncio

from http_kit import MakeClient, error_of, ok_json

from holm.adapters.base import Progress
from holm.adapters.memory.runtime import MemoryRuntime, MemoryWorld
from holm.errors import Denied, NotFound
from holm.wire.api import ImageInfo
from holm.wire.spec import DesktopSpec, Spec, spec_digest

SPEC = {"desktop": {"features": ["video"]}}
VIDEO = Spec(desktop=DesktopSpec(features=["video"]))


class BuildingRuntime(MemoryRuntime):
    def __init__(self, world: MemoryWorld) -> None:
        super().__init__(world=world)
        self.built: dict[str, ImageInfo] = {}
        self.builds = 0
        self.in_use: set[str] = set()

    def image_key(self, spec: Spec) -> str:
        return "k" + spec_digest(spec)[7:23]

    async def build_image(
        self, spec: Spec, progress: Progress | None = None, *, rebuild: bool = False
    ) -> ImageInfo:
        key = self.image_key(spec)
        self.builds += 1
        await asyncio.sleep(0.01)
        info = ImageInfo(
            runtime=self.name, image=f"holm-box:{key}", digest=key, spec_digest=spec_digest(spec)
        )
        self.built[key] = info
        return info

    async def list_images(self) -> list[ImageInfo]:
        return list(self.built.values())

    async def get_image(self, digest: str) -> ImageInfo:
        if digest not in self.built:
            raise NotFound(f"no image {digest}")
        return self.built[digest]

    async def remove_image(self, digest: str) -> None:
        if digest in self.in_use:
            raise Denied(f"a box uses image {digest}", retryable=False)
        del self.built[digest]


async def test_build_once_list_read_remove(make_client: MakeClient, world: MemoryWorld) -> None:
    runtime = BuildingRuntime(world)
    client = await make_client(runtime=runtime, events_delay_ms=0)
    built = await ok_json(await client.post("/v1/runtimes/memory/image", json={"spec": SPEC}))
    key = runtime.image_key(VIDEO)
    assert built["image"] == f"holm-box:{key}" and built["digest"] == key
    assert "state" not in built
    again = await ok_json(await client.post("/v1/runtimes/memory/image", json={"spec": SPEC}))
    assert again == built and runtime.builds == 1
    listed = await ok_json(await client.get("/v1/runtimes/memory/images"))
    assert listed == {"images": [built]}
    assert await ok_json(await client.get("/v1/images")) == listed
    assert await ok_json(await client.get(f"/v1/runtimes/memory/images/{key}")) == built
    runtime.in_use.add(key)
    refused = await client.delete(f"/v1/runtimes/memory/images/{key}")
    await error_of(refused, 409, "denied")
    runtime.in_use.clear()
    assert await ok_json(await client.delete(f"/v1/runtimes/memory/images/{key}")) == built
    await error_of(await client.get(f"/v1/runtimes/memory/images/{key}"), 404, "not_found")
    # The server's own trace holds them; it is no box's.
    await error_of(await client.get("/v1/boxes/server/trace"), 404, "not_found")
    events = (await ok_json(await client.get("/v1/events")))["events"]
    images = [
        (e["kind"], e["runtime"], e["data"]["image"])
        for e in events
        if e["kind"].startswith("image.")
    ]
    assert images == [
        ("image.built", "memory", built["image"]),
        ("image.removed", "memory", built["image"]),
    ]


async def test_a_queued_build_answers_building_then_is_built(
    make_client: MakeClient, world: MemoryWorld
) -> None:
    runtime = BuildingRuntime(world)
    client = await make_client(runtime=runtime, jobs="queue")
    response = await client.post("/v1/runtimes/memory/image", json={"spec": SPEC})
    assert response.status == 202
    building = await response.json()
    assert (building["state"], building["image"]) == ("building", "")
    assert building["digest"] == runtime.image_key(VIDEO)
    # rest-api.md: reading the image while its job waits in the queue answers it
    # `building`, not 404; asking again queues no second build; removing it waits.
    image = f"/v1/runtimes/memory/images/{building['digest']}"
    assert await ok_json(await client.get(image)) == building
    assert await ok_json(await client.get("/v1/runtimes/memory/images")) == {"images": [building]}
    assert await ok_json(await client.get("/v1/images")) == {"images": [building]}
    again = await client.post("/v1/runtimes/memory/image", json={"spec": SPEC})
    assert again.status == 202 and await again.json() == building
    await error_of(await client.delete(image), 409, "denied")
    assert await ok_json(await client.post("/v1/jobs/run")) == {"ran": 1}
    built = await ok_json(await client.get(f"/v1/runtimes/memory/images/{building['digest']}"))
    assert built["image"].startswith("holm-box:") and "state" not in built


async def test_a_runtime_that_builds_no_images(make_client: MakeClient) -> None:
    plain = await make_client()
    response = await plain.post("/v1/runtimes/memory/image", json={})
    assert "builds no images" in await error_of(response, 400, "unsupported")
    await error_of(await plain.get("/v1/runtimes/cloud/images"), 404, "not_found")
    assert await ok_json(await plain.get("/v1/images")) == {"images": []}
