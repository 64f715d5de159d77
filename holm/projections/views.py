"""The box of a response (`BoxView`), made from the box's derived state."""

from __future__ import annotations

from holm.projections.box_state import BoxState
from holm.wire.api import BoxView
from holm.wire.spec import Placement, Spec, spec_digest


def box_view(state: BoxState, viewer_base: str | None = None) -> BoxView:
    """The box; with `viewer_base` (the server's public origin), its viewer URLs are the
    server's viewer pages (which take a ticket) instead of the runtime's sockets."""
    spec = state.spec or Spec()
    viewer_urls = list(state.viewer_urls)
    if viewer_base is not None and viewer_urls:
        base = viewer_base.rstrip("/")
        viewer_urls = [f"{base}/v1/boxes/{state.id}/screens/{i}/view" for i in range(state.screens)]
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
        devtools_url=state.devtools_url,
        owner=state.owner,
        forked_from=origin,
        adopted=state.adopted,
    )
