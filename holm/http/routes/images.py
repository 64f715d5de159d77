"""Images of the runtimes that build them (the docker runtime); a runtime that builds none
answers `unsupported`. Images are shared by every workspace (a cache of what specs name,
which holds nothing of a box): a workspace's key lists, reads and builds them; only the
server token removes one. With queued jobs, a build that is needed answers `202` at once with
`state: building` and an empty `image`; read it with `GET …/images/{digest}`."""

from __future__ import annotations

from aiohttp import web

from holm.engine import images
from holm.wire.api import BuildImage, ImageInfo, ImageList

from ..routing import Route, body_of, engine_of, json_response

RUNTIME = "/v1/runtimes/{name}"


async def build_image(request: web.Request) -> web.Response:
    body = await body_of(request, BuildImage)
    info = await images.build_image(engine_of(request), request.match_info["name"], body.spec)
    return json_response(info, 202 if info.state == "building" else 200)


async def list_runtime_images(request: web.Request) -> web.Response:
    found = await images.list_images(engine_of(request), request.match_info["name"])
    return json_response(ImageList(images=found))


async def get_image(request: web.Request) -> web.Response:
    info = await images.get_image(
        engine_of(request), request.match_info["name"], request.match_info["digest"]
    )
    return json_response(info)


async def remove_image(request: web.Request) -> web.Response:
    info = await images.remove_image(
        engine_of(request), request.match_info["name"], request.match_info["digest"]
    )
    return json_response(info)


async def list_all_images(request: web.Request) -> web.Response:
    return json_response(ImageList(images=await images.list_images(engine_of(request))))


ROUTES = [
    Route(
        "POST",
        f"{RUNTIME}/image",
        build_image,
        "Build the image of a spec (202, building, when jobs are queued)",
        body=BuildImage,
        response=ImageInfo,
        also=(202,),
    ),
    Route(
        "GET",
        f"{RUNTIME}/images",
        list_runtime_images,
        "List a runtime's images",
        response=ImageList,
    ),
    Route("GET", f"{RUNTIME}/images/{{digest}}", get_image, "Read one image", response=ImageInfo),
    Route(
        "DELETE",
        f"{RUNTIME}/images/{{digest}}",
        remove_image,
        "Remove an image (refused while a box uses it); the server token only",
        response=ImageInfo,
        # Images are one cache that every workspace's boxes share.
        auth="server",
    ),
    Route(
        "GET",
        "/v1/images",
        list_all_images,
        "List every image the server built",
        response=ImageList,
    ),
]
