"""The images API (docs/api.md, images) over the runtimes that build images
(`ImageBuilder`: the docker runtime): build, list, read, remove. A build that made an image
and a removal are recorded in the server's own trace (`SERVER_TRACE`) as `image_built` and
`image_removed`, which feed the events `image.built` and `image.removed`; a build that found
the image already built records nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from holm.adapters.base import ImageBuilder
from holm.errors import BadRequest, NotFound, Unsupported
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
            existing = await boundary(builder.get_image(key), "reading an image")
        except NotFound:
            existing = None
        if existing is not None and existing.state is None:
            return existing
    if engine.config.jobs != "queue":
        return await _build(engine, runtime, builder, spec)

    async def build() -> None:
        await _build(engine, runtime, builder, spec)

    engine.jobs.put(f"build an image on {runtime}", build)
    return ImageInfo(
        runtime=runtime,
        image="",
        digest=key or "",
        spec_digest=spec_digest(spec),
        state="building",
    )


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
        return await boundary(builder_of(engine, runtime).list_images(), "listing images")
    images: list[ImageInfo] = []
    for found in engine.runtimes.values():
        if isinstance(found, ImageBuilder):
            images += await boundary(found.list_images(), "listing images")
    return images


async def get_image(engine: Engine, runtime: str, digest: str) -> ImageInfo:
    return await boundary(builder_of(engine, runtime).get_image(digest), "reading an image")


async def remove_image(engine: Engine, runtime: str, digest: str) -> ImageInfo:
    """Remove an image (the builder refuses one a box uses); answers what was removed."""
    builder = builder_of(engine, runtime)
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
