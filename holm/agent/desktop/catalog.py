"""How the agent starts the catalog's applications (holm.wire.catalog) on a screen, and the
apps a box's spec defines beside them."""

from __future__ import annotations

from holm.agent.desktop.desktop_up import chromium_argv
from holm.errors import NotFound
from holm.wire.catalog import ALIASES, CATALOG, App
from holm.wire.spec import AppDefinition


class AppCatalog:
    def __init__(self, home: str) -> None:
        self.home = home
        self.apps: dict[str, App] = dict(CATALOG)

    def define(self, apps: dict[str, AppDefinition]) -> None:
        for name, definition in apps.items():
            if definition.command is None:
                # The catalog's own app, put into the box by the spec: nothing to define.
                continue
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
                *chromium_argv(self.home, screen),
                "--new-window",
                *(args or ["about:blank"]),
            ]
        return [*app.command, *args]
