"""The routes of the REST API, by area."""

from __future__ import annotations

from ..routing import Route
from . import (
    boxes,
    cdp,
    computer,
    events,
    files,
    health,
    history,
    images,
    jobs,
    pages,
    protected_resource,
    recording,
    runtimes,
    screens,
    secrets,
    states,
    streams,
    viewer,
    widgets,
    windows,
    workspaces,
)

ALL_ROUTES: list[Route] = [
    *health.ROUTES,
    *protected_resource.ROUTES,
    *boxes.ROUTES,
    *screens.ROUTES,
    *computer.ROUTES,
    *recording.ROUTES,
    *windows.ROUTES,
    *pages.ROUTES,
    *widgets.ROUTES,
    *states.ROUTES,
    *cdp.ROUTES,
    *files.ROUTES,
    *history.ROUTES,
    *events.ROUTES,
    *runtimes.ROUTES,
    *images.ROUTES,
    *viewer.ROUTES,
    *streams.ROUTES,
    *jobs.ROUTES,
    *workspaces.ROUTES,
    *secrets.ROUTES,
]

__all__ = ["ALL_ROUTES"]
