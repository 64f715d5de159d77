"""Watching a screen: viewer tickets, the viewer socket (a WebSocket relayed to the
screen's x11vnc), and the viewer page (Debian's noVNC, served by holmd).

The socket and the page take no bearer token (a browser cannot send one on a WebSocket or
a link): a ticket authorises them, one box's screen each, for 15 minutes. A wrong or
expired ticket is refused before anything reaches x11vnc."""

from __future__ import annotations

import mimetypes
import os
from pathlib import Path
from urllib.parse import quote, urlencode

from aiohttp import web

from holm.engine import guards
from holm.errors import NotFound
from holm.projections.views import viewer_page
from holm.wire.actions import Action
from holm.wire.api import (
    GivenBack,
    SocketQuery,
    TakeoverRequest,
    TakeoverView,
    TicketRequest,
    TicketView,
    ViewerMode,
    ViewersView,
)

from ..page_grants import GRANT_USED, GrantDenied
from ..routing import (
    Route,
    body_of,
    box_and_screen,
    engine_of,
    json_response,
    public_base,
    query_of,
)
from ..viewer.person import PersonInput
from ..viewer.relay import CHUNK, LIVE, TICKETS, OnInput, relay

SCREEN = "/v1/boxes/{id}/screens/{screen:\\d+}"
NOVNC_PREFIX = "/v1/viewer/novnc"
# Debian's novnc package (scripts/setup installs it).
NOVNC_DIR = Path(os.environ.get("HOLM_NOVNC_DIR", "/usr/share/novnc"))


def socket_path_of(box_id: str, screen: int) -> str:
    return f"/v1/boxes/{box_id}/screens/{screen}/viewer/socket"


async def page_url(request: web.Request, box_id: str, screen: int, ticket: str) -> str:
    """The viewer page with a ticket, on the host the box's spec advertises, if any."""
    spec = (await engine_of(request).box(box_id)).spec
    return f"{viewer_page(box_id, screen, public_base(request), spec)}?ticket={ticket}"


async def make_ticket(request: web.Request) -> web.Response:
    box_id, screen = box_and_screen(request)
    body = await body_of(request, TicketRequest)
    if request.get(GRANT_USED) is not None and body.mode != "view":
        # A trace page's grant opens a fork's viewer to watch (holm/http/page_grants.py).
        raise GrantDenied("a trace page's grant asks for view tickets only")
    engine = engine_of(request)
    # The screen must be there to be watched; the ticket names it.
    engine.check_viewer(box_id, screen)
    made = request.app[TICKETS].make(box_id, screen, body.mode, engine.desktop_seq(box_id))
    return json_response(
        TicketView(
            ticket=made.ticket,
            expires_at_ms=made.expires_at_ms,
            mode=made.mode,
            url=await page_url(request, box_id, screen, made.ticket),
        )
    )


async def take_over(request: web.Request) -> web.Response:
    """Give the screen to a person: the answer's `url` is the viewer page with a control
    ticket."""
    box_id, screen = box_and_screen(request)
    body = await body_of(request, TakeoverRequest)
    engine = engine_of(request)
    engine.check_viewer(box_id, screen)
    await engine.take_over(box_id, screen, shared=body.shared)
    desktop = engine.desktop_seq(box_id)
    made = request.app[TICKETS].make(box_id, screen, "control", desktop, takeover=True)
    url = await page_url(request, box_id, screen, made.ticket)
    return json_response(TakeoverView(url=url, exclusive=not body.shared, screen=screen))


async def give_back(request: web.Request) -> web.Response:
    box_id, screen = box_and_screen(request)
    await engine_of(request).give_back(box_id, screen)
    # The person's takeover viewers are closed and their tickets forgotten: the screen is
    # the agent's again. (Viewers of tickets asked for apart from a takeover stay.)
    request.app[LIVE].close(request.app[TICKETS].revoke_takeover(box_id, screen))
    return json_response(GivenBack(screen=screen, taken_over=False))


async def viewers(request: web.Request) -> web.Response:
    box_id, screen = box_and_screen(request)
    engine = engine_of(request)
    # A removed box answers `410`, a starting or failed one `409`, as to every call into it.
    state = guards.usable(await engine.box(box_id), box_id)
    guards.screen_of(state, screen, drive=False)
    live = request.app[LIVE]
    driving = live.count(box_id, screen, "control")
    taken = engine.taken_over(box_id, screen)
    return json_response(
        ViewersView(
            watching=live.count(box_id, screen, "view") + driving,
            driving=driving,
            person_driving=taken and driving > 0,
            taken_over=taken,
        )
    )


def _mode(query: SocketQuery, default: ViewerMode) -> ViewerMode:
    return query.mode or default


async def viewer_socket(request: web.Request) -> web.StreamResponse:
    box_id, screen = box_and_screen(request)
    query = query_of(request, SocketQuery)
    mode = _mode(query, "view")
    engine = engine_of(request)
    request.app[TICKETS].check(query.ticket, box_id, screen, mode, engine.desktop_seq(box_id))
    stream = await engine.open_stream(box_id, "vnc", screen, limit=CHUNK)
    on_input: OnInput | None = None
    with request.app[LIVE].opened(box_id, screen, mode, query.ticket) as stop:
        try:
            if mode == "control":
                on_input = person_input_of(request, box_id, screen)
            return await relay(request, stream, mode, on_input, stop)
        finally:
            close = getattr(on_input, "close", None)
            if close is not None:
                await close()


def person_input_of(request: web.Request, box_id: str, screen: int) -> OnInput | None:
    """What the person's input becomes in the trace: `acted` entries, actor `person`."""
    engine = engine_of(request)

    async def record(action: Action) -> None:
        await engine.record_person(box_id, screen, action)

    return PersonInput(record)


async def view_page(request: web.Request) -> web.StreamResponse:
    """The viewer page: noVNC, told to connect to this screen's socket with the ticket."""
    box_id, screen = box_and_screen(request)
    query = query_of(request, SocketQuery)
    desktop = engine_of(request).desktop_seq(box_id)
    found = request.app[TICKETS].check(query.ticket, box_id, screen, "view", desktop)
    mode = _mode(query, found.mode)
    request.app[TICKETS].check(query.ticket, box_id, screen, mode, desktop)
    socket = (
        socket_path_of(box_id, screen) + "?" + urlencode({"ticket": query.ticket, "mode": mode})
    )
    settings = {
        "autoconnect": "1",
        "reconnect": "1",
        "resize": "scale",
        "view_only": "0" if mode == "control" else "1",
        # noVNC joins it to the page's own host and port: `ws(s)://host:port/<path>`.
        "path": socket.lstrip("/"),
    }
    target = f"{NOVNC_PREFIX}/vnc.html?" + urlencode(settings, quote_via=quote)
    headers = {"Location": target, "Cache-Control": "no-store", "Referrer-Policy": "no-referrer"}
    return web.Response(status=302, headers=headers)


async def novnc_file(request: web.Request) -> web.StreamResponse:
    """A file of Debian's noVNC: public, the same for everyone, so it takes no ticket."""
    wanted = request.match_info["rest"] or "vnc.html"
    root = NOVNC_DIR.resolve()
    path = (root / wanted).resolve()
    if not path.is_relative_to(root) or not path.is_file():
        raise NotFound(f"the viewer has no file {wanted} (is Debian's novnc installed?)")
    kind, _ = mimetypes.guess_type(path.name)
    headers = {"X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer"}
    if kind:
        headers["Content-Type"] = kind
    return web.FileResponse(path, headers=headers)


ROUTES = [
    Route(
        "POST",
        f"{SCREEN}/takeover",
        take_over,
        "Give the screen to a person (the agent's input on it is refused until given back)",
        body=TakeoverRequest,
        response=TakeoverView,
    ),
    Route(
        "DELETE",
        f"{SCREEN}/takeover",
        give_back,
        "Take the screen back from a person",
        response=GivenBack,
    ),
    Route(
        "GET",
        f"{SCREEN}/viewers",
        viewers,
        "Who watches and who drives the screen",
        response=ViewersView,
    ),
    Route(
        "POST",
        f"{SCREEN}/viewer/ticket",
        make_ticket,
        "Make a short-lived ticket for the viewer socket and page (15 minutes)",
        body=TicketRequest,
        response=TicketView,
    ),
    Route(
        "GET",
        f"{SCREEN}/viewer/socket",
        viewer_socket,
        "The viewer WebSocket (RFB) through the server; takes a ticket, no bearer token",
        query=SocketQuery,
        auth="none",
        status=101,
        also=(200,),
    ),
    Route(
        "GET",
        f"{SCREEN}/view",
        view_page,
        "The viewer page (noVNC) for a ticket; takes a ticket, no bearer token",
        query=SocketQuery,
        auth="none",
        status=302,
        content_type="text/html",
    ),
    Route(
        "GET",
        NOVNC_PREFIX + "/{rest:.*}",
        novnc_file,
        "A file of the viewer page (Debian's noVNC)",
        auth="none",
        content_type="text/html",
    ),
]
