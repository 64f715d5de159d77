"""The applications a box can launch by name, and how to start each on a screen."""

from __future__ import annotations

import msgspec

from holm.adapters.agent.desktop_up import chromium_argv
from holm.errors import NotFound
from holm.wire.spec import AppDefinition


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


class Catalog:
    def __init__(self, home: str, width: int, height: int) -> None:
        self.home = home
        self.width = width
        self.height = height
        self.apps: dict[str, App] = dict(CATALOG)

    def define(self, apps: dict[str, AppDefinition]) -> None:
        for name, definition in apps.items():
            self.apps[name] = App(
                name=name,
                command=list(definition.command),
                window_class=definition.window_class,
                description="defined by the box's spec",
            )

    def names(self) -> list[App]:
        return sorted(self.apps.values(), key=lambda app: app.name)

    def resolve(self, name: str) -> App:
        app = self.apps.get(name) or self.apps.get(ALIASES.get(name, ""))
        if app is None:
            known = ", ".join(sorted(self.apps))
            raise NotFound(f"no app {name!r} in the catalog (it has {known})")
        return app

    def argv(self, app: App, screen: int, args: list[str]) -> list[str]:
        if app.name == "chromium" and app.command == ["chromium"]:
            # The screen's own profile: the running Chromium opens the window and this
            # process hands over and ends.
            return [
                *chromium_argv(self.home, screen, self.width, self.height),
                "--new-window",
                *(args or ["about:blank"]),
            ]
        return [*app.command, *args]
