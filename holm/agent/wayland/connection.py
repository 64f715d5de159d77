"""One client connection to a screen's compositor, with the globals the agent binds.

Each of the screen's paths (input, capture) has its own connection, used by one thread
only: libwayland's proxies of one connection are not to be driven from two threads.
"""

from __future__ import annotations

from typing import Any

from pywayland.client.display import Display
from pywayland.protocol.virtual_keyboard_unstable_v1 import ZwpVirtualKeyboardManagerV1
from pywayland.protocol.wayland import WlOutput, WlSeat, WlShm
from pywayland.protocol.wlr_screencopy_unstable_v1 import ZwlrScreencopyManagerV1
from pywayland.protocol.wlr_virtual_pointer_unstable_v1 import ZwlrVirtualPointerManagerV1

from holm.errors import Failed

# The interfaces the agent binds, at the versions it speaks (sway 1.7 offers these or newer).
WANTED: dict[str, tuple[Any, int]] = {
    "wl_seat": (WlSeat, 1),
    "wl_shm": (WlShm, 1),
    "wl_output": (WlOutput, 1),
    "zwlr_virtual_pointer_manager_v1": (ZwlrVirtualPointerManagerV1, 2),
    "zwp_virtual_keyboard_manager_v1": (ZwpVirtualKeyboardManagerV1, 1),
    "zwlr_screencopy_manager_v1": (ZwlrScreencopyManagerV1, 3),
}


class Connection:
    def __init__(self, socket_path: str, wanted: tuple[str, ...]) -> None:
        self.display = Display(socket_path)
        self.display.connect()
        self.bound: dict[str, Any] = {}
        registry = self.display.get_registry()
        offered: dict[str, tuple[int, int]] = {}

        def on_global(_registry: Any, name: int, interface: str, version: int) -> None:
            # The first output only: a screen's sway has one (sway_up.py).
            offered.setdefault(interface, (name, version))

        registry.dispatcher["global"] = on_global
        self.display.roundtrip()
        for interface in wanted:
            if interface not in offered:
                raise Failed(f"the compositor at {socket_path} offers no {interface}")
            cls, version = WANTED[interface]
            name, has = offered[interface]
            self.bound[interface] = registry.bind(name, cls, min(version, has))
        self.display.roundtrip()
        self._registry = registry

    def __getitem__(self, interface: str) -> Any:
        return self.bound[interface]

    def flush(self) -> None:
        self.display.flush()

    def roundtrip(self) -> None:
        """Wait until the compositor has done every request sent on this connection."""
        self.display.roundtrip()

    def close(self, proxies: tuple[Any, ...] = ()) -> None:
        """Free `proxies` (the caller's own, the ones it made), the globals bound and the
        registry, then the connection: in that order, here, since a proxy left for the
        garbage collector would be freed after its display and crash the agent at exit."""
        for proxy in (*proxies, *self.bound.values(), self._registry):
            if proxy is not None and not proxy.destroyed:
                proxy._destroy()
        self.bound.clear()
        self.display.disconnect()
