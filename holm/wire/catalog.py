"""The applications every box can launch by name (`GET /v1/catalog`, `launch`,
`POST …/apps`), with the other names they answer to and the Debian packages that give
them: the engine checks names against these, the docker runtime puts a spec's apps into
its image and installs them into a running box, and the in-box agent starts them."""

from __future__ import annotations

import msgspec


class App(msgspec.Struct, kw_only=True):
    name: str
    command: list[str]
    # The WM_CLASS (class or instance, any case) of the window a launch waits for; None:
    # the first new window.
    window_class: str | None = None
    description: str = ""
    # The Debian packages that give the app; empty: every box has it (the desktop's own).
    packages: list[str] = msgspec.field(default_factory=list)


def _packaged(name: str, description: str, packages: list[str] | None = None) -> App:
    """An app whose command, window class and package (unless named) are its name."""
    return App(
        name=name,
        command=[name],
        window_class=name,
        description=description,
        packages=packages or [name],
    )


# The apps every box launches by name (`GET /v1/catalog` lists these and the spec's own).
# Chromium and xterm are part of every desktop; the others come with `spec.apps` (in a
# docker box's image) or `POST …/apps` (into a running box).
CATALOG: dict[str, App] = {
    "chromium": App(
        name="chromium",
        command=["chromium"],
        window_class="chromium",
        description="a new window of the screen's Chromium (its profile); args are URLs",
    ),
    "xterm": App(name="xterm", command=["xterm"], window_class="xterm", description="a terminal"),
    "mousepad": _packaged("mousepad", "a text editor"),
    "geany": _packaged("geany", "a programmer's editor (Debian has no VSCodium)"),
    "gimp": _packaged("gimp", "an image editor"),
    "inkscape": _packaged("inkscape", "a vector drawing editor"),
    "libreoffice": _packaged(
        "libreoffice",
        "an office suite (writer, calc, impress)",
        ["libreoffice-writer", "libreoffice-calc", "libreoffice-impress", "libreoffice-gtk3"],
    ),
    "evince": _packaged("evince", "a PDF viewer"),
    "thunar": _packaged("thunar", "a file manager"),
}
ALIASES = {
    "browser": "chromium",
    "terminal": "xterm",
    "editor": "mousepad",
    "text_editor": "mousepad",
    "office": "libreoffice",
    "files": "thunar",
    "pdf": "evince",
}


def catalog_app(name: str) -> App | None:
    """The catalog's app by its name or another name of it."""
    return CATALOG.get(name) or CATALOG.get(ALIASES.get(name, ""))


__all__ = ["ALIASES", "CATALOG", "App", "catalog_app"]
