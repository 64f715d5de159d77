"""The applications every box can launch by name (`GET /v1/catalog`, `launch`,
`POST …/apps`), with the other names they answer to: the engine checks names against these,
and the in-box agent starts them."""

from __future__ import annotations

import msgspec


class App(msgspec.Struct, kw_only=True):
    name: str
    command: list[str]
    # The WM_CLASS (class or instance, any case) of the window a launch waits for; None:
    # the first new window.
    window_class: str | None = None
    description: str = ""


# The apps every box has, by name (`GET /v1/catalog` lists these and the spec's own).
CATALOG: dict[str, App] = {
    "chromium": App(
        name="chromium",
        command=["chromium"],
        window_class="chromium",
        description="a new window of the screen's Chromium (its profile); args are URLs",
    ),
    "xterm": App(name="xterm", command=["xterm"], window_class="xterm", description="a terminal"),
    "mousepad": App(
        name="mousepad", command=["mousepad"], window_class="mousepad", description="a text editor"
    ),
}
ALIASES = {
    "browser": "chromium",
    "terminal": "xterm",
    "editor": "mousepad",
    "text_editor": "mousepad",
}


__all__ = ["ALIASES", "CATALOG", "App"]
