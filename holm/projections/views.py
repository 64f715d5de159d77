"""The box of a response (`BoxView`) and a trace of a listing (`TraceView`), made from the
box's derived state."""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

import msgspec

from holm.events.store import TraceInfo
from holm.projections.box_state import BoxState
from holm.wire.api import BoxView, TraceView
from holm.wire.spec import Placement, Spec, spec_digest


def advertised(origin: str, host: str | None) -> str:
    """`origin` with its host name replaced by `host` (a spec's `policy.advertise`: "the
    host name to put in viewer URLs"), its scheme, port and path kept."""
    if not host:
        return origin
    parts = urlsplit(origin)
    name = f"[{host}]" if ":" in host else host
    netloc = name if parts.port is None else f"{name}:{parts.port}"
    return urlunsplit(parts._replace(netloc=netloc))


def viewer_page(box_id: str, screen: int, viewer_base: str, spec: Spec | None) -> str:
    """The server's viewer page of a screen (it takes a ticket), on its public origin
    `viewer_base`, or on the host the spec advertises if it names one."""
    base = advertised(viewer_base.rstrip("/"), spec.policy.advertise if spec else None)
    return f"{base}/v1/boxes/{box_id}/screens/{screen}/view"


def viewer_pages(box_id: str, screens: int, viewer_base: str, spec: Spec | None) -> list[str]:
    """`viewer_page` of each screen: what a caller is shown in place of the runtime's
    sockets."""
    return [viewer_page(box_id, i, viewer_base, spec) for i in range(screens)]


def devtools_page(box_id: str, base: str | None) -> str | None:
    """What a caller is shown of a box's DevTools: where to ask for an address a DevTools
    client takes (`POST …/cdp`, with the bearer token), never the runtime's socket, a path
    on holmd's host that no client could use. None without the server's origin."""
    return None if base is None else f"{base.rstrip('/')}/v1/boxes/{box_id}/cdp"


def box_view(state: BoxState, viewer_base: str | None = None) -> BoxView:
    """The box; with `viewer_base` (the server's public origin), its viewer URLs are the
    server's viewer pages (which take a ticket) instead of the runtime's sockets, on the
    host the spec advertises, if it names one."""
    spec = state.spec or Spec()
    viewer_urls = list(state.viewer_urls)
    if viewer_base is not None and viewer_urls:
        viewer_urls = viewer_pages(state.id, state.screens, viewer_base, spec)
    origin = state.forked_from
    return BoxView(
        id=state.id,
        runtime=state.runtime,
        spec_digest=state.spec_digest or spec_digest(spec),
        state=state.state,
        screens=state.screens,
        width=state.width,
        height=state.height,
        created_at_ms=state.created_at_ms,
        expires_at_ms=state.expires_at_ms or 0,
        spec=spec,
        placement=state.placement or Placement(runtime=state.runtime),
        reason=state.reason,
        viewer_url=viewer_urls[0] if viewer_urls else None,
        viewer_urls=viewer_urls,
        devtools_url=devtools_page(state.id, viewer_base) if state.devtools_url else None,
        owner=state.owner,
        forked_from=origin,
        adopted=state.adopted,
    )


def trace_view(info: TraceInfo, box: BoxState | None) -> TraceView:
    """A trace as `GET /v1/traces` and `holm trace ls` show it: the store's figures, and
    `box`, the box its entries fold to (None for a trace that records no box)."""
    view = TraceView(
        trace=info.trace,
        entries=info.entries,
        first_at_ms=info.first_at_ms,
        last_at_ms=info.last_at_ms,
        incomplete=info.incomplete,
    )
    if box is None:
        return view
    return msgspec.structs.replace(
        view,
        frames=box.frames_seen,
        runtime=box.runtime,
        state=box.state,
        reason=box.reason,
        forked_from=box.forked_from,
        adopted=box.adopted,
    )
