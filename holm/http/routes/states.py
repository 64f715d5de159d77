"""Browser state: cookies and storage saved from a box's Chromium (`…/state/save`) and
loaded into one (`…/state/load`), of the Chromium of the screen `screen` in the query names
(default 0; each screen has its own profile), as Playwright's storage state, handed over in
`session_json` or kept by the server under a name (`/v1/states`). Nothing of it is recorded
in a trace: it holds sign-in cookies (docs/security.md)."""

from __future__ import annotations

import time

import msgspec
from aiohttp import web

from holm.errors import BadRequest
from holm.events.blobs import check_name
from holm.wire.actions import StateLoad, StateLoadWhat, StateSave, StateSaveWhat
from holm.wire.api import SavedState, ScreenQuery, StateList, StateRemoved
from holm.wire.results import BrowserState, StateLoaded, expect

from ..routing import Route, act_response, body_of, caller_of, engine_of, json_response
from .pages import screen_of

BOX = "/v1/boxes/{id}"


async def save_state(request: web.Request) -> web.Response:
    what = await body_of(request, StateSaveWhat)
    screen = screen_of(request)
    if what.name is None:
        return await act_response(request, StateSave(what=what), screen)
    name = check_name("state", what.name)
    engine, box = engine_of(request), request.match_info["id"]
    got = await engine.act(box, screen, StateSave(what=msgspec.structs.replace(what, name=None)))
    saved = expect(got, BrowserState)
    assert saved.session_json is not None, "a state saved without a name is handed over"
    info = SavedState(
        name=name,
        cookies=saved.cookies,
        origins=saved.origins,
        saved_at_ms=int(time.time() * 1000),
        box=box,
    )
    await engine.browser_states.save(caller_of(request).workspace, info, saved.session_json)
    return json_response(BrowserState(cookies=saved.cookies, origins=saved.origins, name=name))


async def load_state(request: web.Request) -> web.Response:
    what = await body_of(request, StateLoadWhat)
    if (what.name is None) == (what.session_json is None):
        raise BadRequest("give one of name (a saved state) and session_json")
    if what.name is not None:
        states = engine_of(request).browser_states
        session_json = await states.load(caller_of(request).workspace, what.name)
        what = StateLoadWhat(session_json=session_json)
    return await act_response(request, StateLoad(what=what), screen_of(request))


async def list_states(request: web.Request) -> web.Response:
    states = engine_of(request).browser_states
    return json_response(StateList(states=await states.saved(caller_of(request).workspace)))


async def remove_state(request: web.Request) -> web.Response:
    name = request.match_info["name"]
    states = engine_of(request).browser_states
    removed = await states.remove(caller_of(request).workspace, name)
    return json_response(StateRemoved(name=name, removed=removed))


ROUTES = [
    Route(
        "POST",
        f"{BOX}/state/save",
        save_state,
        "Save cookies and storage (under `name`, or handed back in `session_json`)",
        query=ScreenQuery,
        body=StateSaveWhat,
        response=BrowserState,
    ),
    Route(
        "POST",
        f"{BOX}/state/load",
        load_state,
        "Load cookies and storage (a saved `name`, or a `session_json`)",
        query=ScreenQuery,
        body=StateLoadWhat,
        response=StateLoaded,
    ),
    Route("GET", "/v1/states", list_states, "List saved browser states", response=StateList),
    Route(
        "DELETE",
        "/v1/states/{name}",
        remove_state,
        "Remove a saved browser state",
        response=StateRemoved,
    ),
]
