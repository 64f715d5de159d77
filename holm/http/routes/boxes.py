"""Boxes: list, create, get, delete, pause, resume, stop, apps, fork; and the catalog."""

from __future__ import annotations

import logging

import msgspec
from aiohttp import web

from holm.engine import Engine, guards
from holm.errors import BadRequest
from holm.projections.box_state import BoxState
from holm.projections.views import box_view
from holm.replay import fork_box as fork
from holm.wire.api import BoxList, BoxView, Catalog, CreateBox, ForkRequest, ForkResult, InstallApps
from holm.wire.spec import Spec

from ..page_grants import GRANT_USED, PAGE_GRANTS, GrantDenied
from ..routing import Route, body_of, caller_of, engine_of, json_response, public_base
from ..viewer.doors import DOORS

CONFIRM_DELETE = "x-holm-confirm-delete"
log = logging.getLogger(__name__)


def _box_id(request: web.Request) -> str:
    return request.match_info["id"]


def _answer(view: BoxView) -> web.Response:
    # A queued launch answers at once with the box still starting.
    return json_response(view, 202 if view.state == "starting" else 200)


def view_of(request: web.Request, state: BoxState) -> BoxView:
    """The box as an answer shows it: `box_view`, and its VNC doors (no password)."""
    base = public_base(request)
    view = box_view(state, base)
    vnc = request.app[DOORS].access(state, base)
    return view if vnc is None else msgspec.structs.replace(view, vnc=vnc)


async def made_view(request: web.Request, engine: Engine, box_id: str) -> BoxView:
    """The box in the answer that made it: its doors opened now (so their ports are in
    it) and the VNC password holmd made for it, shown here only (docs/viewer.md)."""
    state = await engine.box(box_id)
    base = public_base(request)
    view = box_view(state, base)
    doors = request.app[DOORS]
    try:
        await doors.ensure(state)
    except OSError as exc:
        # No port now: the box is made all the same, and the sweep tries again.
        log.warning("could not open the VNC doors of %s: %s", box_id, exc)
    policy = (state.spec or Spec()).policy
    password = None
    if policy.auth == "password" and policy.password_secret is None:
        password = await engine.made_vnc_password(box_id)
    vnc = doors.access(state, base, password)
    return view if vnc is None else msgspec.structs.replace(view, vnc=vnc)


async def list_boxes(request: web.Request) -> web.Response:
    seen = engine_of(request).boxes(seen_by=caller_of(request).workspace)
    return json_response(BoxList(boxes=[view_of(request, state) for state in seen]))


async def create_box(request: web.Request) -> web.Response:
    body = await body_of(request, CreateBox)
    owner = caller_of(request).workspace
    engine = engine_of(request)
    state = await engine.create_box(body.spec, body.placement, owner=owner)
    return _answer(await made_view(request, engine, state.id))


async def get_box(request: web.Request) -> web.Response:
    box_id = _box_id(request)
    state = guards.live(await engine_of(request).box(box_id), box_id)
    return json_response(view_of(request, state))


async def delete_box(request: web.Request) -> web.Response:
    if request.headers.get(CONFIRM_DELETE, "").lower() != "true":
        raise BadRequest(f"removing a box needs the header `{CONFIRM_DELETE}: true`")
    state = await engine_of(request).delete_box(_box_id(request))
    return json_response(view_of(request, state))


async def pause_box(request: web.Request) -> web.Response:
    return json_response(view_of(request, await engine_of(request).pause_box(_box_id(request))))


async def resume_box(request: web.Request) -> web.Response:
    return json_response(view_of(request, await engine_of(request).resume_box(_box_id(request))))


async def stop_box(request: web.Request) -> web.Response:
    return json_response(view_of(request, await engine_of(request).stop_box(_box_id(request))))


async def install_apps(request: web.Request) -> web.Response:
    body = await body_of(request, InstallApps)
    state = await engine_of(request).install_apps(_box_id(request), body.apps)
    return json_response(view_of(request, state))


async def fork_a_box(request: web.Request) -> web.Response:
    body = await body_of(request, ForkRequest)
    grant = request.get(GRANT_USED)
    if grant is not None and body != ForkRequest(up_to=body.up_to):
        # What a trace page's button sends, and no more (holm/http/page_grants.py).
        raise GrantDenied("a trace page's grant forks with `up_to` alone")
    engine = engine_of(request)
    result = await fork_answer(engine, _box_id(request), body, public_base(request))
    # Each new box's doors and password, as in a create answer.
    result = msgspec.structs.replace(
        result,
        box=await made_view(request, engine, result.box.id),
        branches=None
        if result.branches is None
        else [
            msgspec.structs.replace(branch, box=await made_view(request, engine, branch.box.id))
            for branch in result.branches
        ],
    )
    boxes = [result.box] + [branch.box for branch in result.branches or []]
    if grant is not None:
        request.app[PAGE_GRANTS].forked(grant, [box.id for box in boxes])
    return json_response(result, 202 if any(b.state == "starting" for b in boxes) else 200)


async def fork_answer(
    engine: Engine, box_id: str, body: ForkRequest, viewer_base: str | None
) -> ForkResult:
    """Fork `box_id` and answer as the API does (the `fork_box` MCP tool too): the new
    box's viewer URLs are this server's pages at `viewer_base`, as for any other box."""
    result = await fork(engine, box_id, body)
    view = box_view(await engine.box(result.box.id), viewer_base)
    branches = None
    if result.branches is not None:
        branches = [
            msgspec.structs.replace(
                branch, box=box_view(await engine.box(branch.box.id), viewer_base)
            )
            for branch in result.branches
        ]
    return msgspec.structs.replace(result, box=view, branches=branches)


async def catalog(request: web.Request) -> web.Response:
    return json_response(engine_of(request).catalog())


BOX = "/v1/boxes/{id}"

ROUTES = [
    Route("GET", "/v1/boxes", list_boxes, "List the boxes", response=BoxList),
    Route(
        "POST",
        "/v1/boxes",
        create_box,
        "Create a box (202 with a starting box when jobs are queued)",
        body=CreateBox,
        response=BoxView,
        also=(202,),
        idempotent=True,
    ),
    Route("GET", BOX, get_box, "Get one box", response=BoxView),
    Route(
        "DELETE",
        BOX,
        delete_box,
        "Remove a box; needs the header x-holm-confirm-delete: true",
        response=BoxView,
    ),
    Route("POST", f"{BOX}/pause", pause_box, "Pause the box", response=BoxView),
    Route("POST", f"{BOX}/resume", resume_box, "Resume a paused or stopped box", response=BoxView),
    Route("POST", f"{BOX}/stop", stop_box, "Stop the box and keep its files", response=BoxView),
    Route(
        "POST",
        f"{BOX}/apps",
        install_apps,
        "Install catalog applications in a running box",
        body=InstallApps,
        response=BoxView,
    ),
    Route(
        "POST",
        f"{BOX}/fork",
        fork_a_box,
        "Make a new box from the trace (202 with a starting box when jobs are queued)",
        body=ForkRequest,
        response=ForkResult,
        also=(202,),
        idempotent=True,
    ),
    Route("GET", "/v1/catalog", catalog, "List the catalog's applications", response=Catalog),
]
