"""The names of the catalog's applications (`GET /v1/catalog`, `launch`, `POST …/apps`),
as the in-box agent knows them, with the other names it takes for them."""

from __future__ import annotations

from holm.wire.catalog import ALIASES, CATALOG


def catalog_names() -> list[str]:
    return sorted(CATALOG)


def known_app(name: str) -> bool:
    return name in CATALOG or name in ALIASES
