"""The images API (docs/api.md, images) over the runtimes that build images
(`ImageBuilder`: the docker runtime): build, list, read, remove. A build that made an image
and a removal are recorded in the server's own trace (`SERVER_TRACE`) as `image_built` and
`image_removed`, which feed the events `image.built` and `image.removed`; a build that found
the image already built records nothing. A queued build is read as `building` from the moment
it answers `202`, before its job begins (the builder knows of it only then): the engine keeps
it in `queued_builds` until the job ends.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from holm.adapters.base import ImageBuilder
from holm.errors import BadRequest, Denied, NotFound, Unsupported
from holm.wire.api import ImageInfo
from holm.wire.entries import SERVER_TRACE, ImageBuilt, ImageRemoved
from holm.wire.spec import Spec, spec_digest, validate_spec

from .guards import boundary
from .journal import entry

if TYPE_CHECKING:
    from .engine import Engine


def builder_of(engine: Engine, runtime: str) -> ImageBuilder:
    found = engine._runtime_named(runtime)
    if not isinstance(found, ImageBuilder):
        raise Unsupported(f"the {runtime} runtime builds no images")
    return found


async def build_image(engine: Engine, runtime: str, spec: Spec) -> ImageInfo:
    """The image of `spec` on `runtime`, built when missing. With queued jobs a build that
    is needed answers at once, `building`, and runs as a job."""
    problems = validate_spec(spec)
    if problems:
        raise BadRequest("; ".join(problems))
    builder = builder_of(engine, runtime)
    key = _image_key(builder, spec)
    if key is not None:
        try:
            existing = await get_image(engine, runtime, key)
        except NotFound:
            existing = None
        if existing is not None and existing.state is None:
            return existing
        if existing is not None and (runtime, key) in engine.queued_builds:
            return existing
    if engine.config.jobs != "queue":
        return await _build(engine, runtime, builder, spec)
    queued = ImageInfo(
        runtime=runtime,
        image="",
        digest=key or "",
        spec_digest=spec_digest(spec),
        state="building",
    )

    async def build() -> None:
        try:
            await _build(engine, runtime, builder, spec)
        finally:
            engine.queued_builds.pop((runtime, queued.digest), None)

    if key is not None:
        engine.queued_builds[(runtime, key)] = queued
    engine.jobs.put(f"build an image on {runtime}", build)
    return queued


async def _build(engine: Engine, runtime: str, builder: ImageBuilder, spec: Spec) -> ImageInfo:
    info = await boundary(builder.build_image(spec), "building an image")
    built = entry(
        ImageBuilt,
        "agent",
        runtime=runtime,
        image=info.image,
        spec_digest=info.spec_digest or spec_digest(spec),
    )
    await engine.journal.append(SERVER_TRACE, [built])
    return info


async def list_images(engine: Engine, runtime: str | None = None) -> list[ImageInfo]:
    """The images of one runtime, or of every runtime that builds images."""
    if runtime is not None:
        builders = {runtime: builder_of(engine, runtime)}
    else:
        builders = {n: r for n, r in engine.runtimes.items() if isinstance(r, ImageBuilder)}
    images: list[ImageInfo] = []
    for name, builder in builders.items():
        queued = {d: i for (n, d), i in engine.queued_builds.items() if n == name}
        built = await boundary(builder.list_images(), "listing images")
        images += [*(i for i in built if i.digest not in queued), *queued.values()]
    return images


async def get_image(engine: Engine, runtime: str, digest: str) -> ImageInfo:
    """The image; `building` while a build of it is queued (its builder knows of the build
    only once its job begins, and may still hold an earlier one that failed)."""
    builder = builder_of(engine, runtime)
    queued = engine.queued_builds.get((runtime, digest))
    if queued is not None:
        return queued
    return await boundary(builder.get_image(digest), "reading an image")


async def remove_image(engine: Engine, runtime: str, digest: str) -> ImageInfo:
    """Remove an image (the builder refuses one a box uses); answers what was removed."""
    builder = builder_of(engine, runtime)
    if (runtime, digest) in engine.queued_builds:
        raise Denied(f"image {digest} is building", retryable=True)
    info = await boundary(builder.get_image(digest), "reading an image")
    await boundary(builder.remove_image(digest), "removing an image")
    removed = entry(
        ImageRemoved,
        "agent",
        runtime=runtime,
        image=info.image,
        spec_digest=info.spec_digest or "",
    )
    await engine.journal.append(SERVER_TRACE, [removed])
    return info


def _image_key(builder: ImageBuilder, spec: Spec) -> str | None:
    """The key (`digest`) the builder will give the image of `spec`, when it tells: an
    `image_key(spec)` method, or the docker runtime's `images.key(spec)`."""
    key_of: Any = getattr(builder, "image_key", None)
    if key_of is None:
        key_of = getattr(getattr(builder, "images", None), "key", None)
    return str(key_of(spec)) if callable(key_of) else None
