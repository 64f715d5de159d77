"""The names of the catalog's applications (`GET /v1/catalog`, `launch`, `POST …/apps`),
as the in-box agent knows them."""

from __future__ import annotations

# Until the agent's catalog module lands, the applications every box image has.
_FALLBACK = ("chromium", "mousepad", "xterm")


def catalog_names() -> list[str]:
    try:
        from holm.adapters.agent import catalog
    except ImportError:
        return sorted(_FALLBACK)
    names = getattr(catalog, "CATALOG", None) or getattr(catalog, "APPS", None) or _FALLBACK
    return sorted(names)
