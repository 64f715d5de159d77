"""The images API of the docker runtime, against the engine: build (and its cache hit),
list, get, a failed build, and removal refused while a box uses the image."""

from __future__ import annotations

import asyncio

import docker
import pytest
from desktop_kit import run
from runtime_kit import SESSION_SPEC

from holm.adapters.base import ImageBuilder
from holm.adapters.docker.images import image_ref
from holm.errors import Denied, Failed, NotFound
from holm.wire.api import ImageInfo
from holm.wire.spec import DesktopSpec, Placement, Spec, spec_digest

from .conftest import MakeRuntime, new_box_id

pytestmark = pytest.mark.docker


async def test_a_built_spec_is_a_cache_hit_that_lists_and_reads_back(
    make_runtime: MakeRuntime, session_image: ImageInfo
) -> None:
    runtime = make_runtime()
    builder: ImageBuilder = runtime  # the server serves the images API from this interface
    assert isinstance(builder, ImageBuilder)
    lines: list[str] = []
    info = await runtime.build_image(SESSION_SPEC, lines.append)
    assert info == session_image
    assert lines == []  # nothing was built, nothing to tell
    assert info.image == image_ref(info.digest)
    assert info.spec_digest == spec_digest(SESSION_SPEC)
    assert info.features == ["accessibility", "dock", "video", "wide_fonts"]
    assert info.size_bytes and info.size_bytes > 100 << 20
    assert info.arch == runtime.arch
    assert info.digest in {image.digest for image in await runtime.list_images()}
    assert await runtime.get_image(info.digest) == info
    with pytest.raises(NotFound):
        await runtime.get_image("0" * 32)


async def test_an_image_with_packages_builds_once_and_is_removed_only_when_unused(
    make_runtime: MakeRuntime, engine: docker.DockerClient
) -> None:
    runtime = make_runtime(chromium=False)
    spec = Spec(desktop=DesktopSpec(features=[], packages=["jq"]))
    key = runtime.images.key(spec)
    lines: list[str] = []
    first = asyncio.ensure_future(runtime.build_image(spec, lines.append))
    second = asyncio.ensure_future(runtime.build_image(spec))
    await asyncio.sleep(0.1)
    assert (await runtime.get_image(key)).state == "building"
    assert "building" in {i.state for i in await runtime.list_images() if i.digest == key}
    with pytest.raises(Denied):
        await runtime.remove_image(key)
    built, again = await asyncio.gather(first, second)
    assert built == again and built.state is None and built.packages == ["jq"]
    # One build served both: the engine's log of it came once, to the first caller.
    assert sum("Successfully tagged" in line for line in lines) == 1

    box_id = new_box_id()
    await runtime.create(box_id, spec, Placement())
    desktop = await runtime.desktop(box_id)
    result = await run(desktop, "jq", "-n", "1 + 2")
    assert (result.code, result.stdout) == (0, "3\n")
    with pytest.raises(Denied):
        await runtime.remove_image(key)
    await runtime.stop(box_id)
    with pytest.raises(Denied):  # a stopped box still needs its image to start again
        await runtime.remove_image(key)

    await runtime.delete(box_id)
    await runtime.remove_image(key)
    with pytest.raises(NotFound):
        await runtime.get_image(key)
    assert key not in {image.digest for image in await runtime.list_images()}
    with pytest.raises(docker.errors.ImageNotFound):
        engine.images.get(image_ref(key))


async def test_a_failed_build_says_why(make_runtime: MakeRuntime) -> None:
    runtime = make_runtime()
    spec = Spec(desktop=DesktopSpec(features=[], packages=["holm-no-such-package"]))
    key = runtime.images.key(spec)
    with pytest.raises(Failed, match="holm-no-such-package"):
        await runtime.build_image(spec)
    failed = await runtime.get_image(key)
    assert failed.state == "failed" and failed.image == ""
    assert failed.reason is not None and "holm-no-such-package" in failed.reason
    assert failed in await runtime.list_images()
    # Removing a failed build forgets it.
    await runtime.remove_image(key)
    with pytest.raises(NotFound):
        await runtime.get_image(key)
