"""The catalog's applications (`GET /v1/catalog`, `launch`, `POST …/apps`) as the in-box
agent knows them, with the other names they answer to, and the Debian packages of each."""

from __future__ import annotations

from holm.errors import BadRequest
from holm.wire.api import Catalog
from holm.wire.catalog import CATALOG, catalog_app
from holm.wire.spec import AppDefinition, packages_of_app


def catalog() -> Catalog:
    return Catalog(
        apps=sorted(CATALOG),
        packages={name: list(app.packages) for name, app in sorted(CATALOG.items())},
    )


def app_packages_by_name(
    names: list[str], defined: dict[str, AppDefinition]
) -> dict[str, list[str]]:
    """Each app named (the spec's own, or the catalog's by any of its names) under its own
    name, with its Debian packages; a name that is neither is a bad request."""
    found: dict[str, list[str]] = {}
    unknown: list[str] = []
    for name in sorted(set(names)):
        if name in defined:
            found[name] = packages_of_app(name, defined[name])
        elif (app := catalog_app(name)) is not None:
            found[app.name] = list(app.packages)
        else:
            unknown.append(name)
    if unknown:
        raise BadRequest(f"not in the catalog: {', '.join(unknown)}")
    return found
