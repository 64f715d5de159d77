"""A Wayland screen's dock (the `dock` feature): waybar with its task list only
(`wlr/taskbar`, which lists the compositor's windows through wlroots' foreign-toplevel
protocol), at the bottom, as the X11 box's tint2 is: a person who takes over the screen
sees its open windows and can pick one. It is a layer-shell surface, not a window: the
window listing does not show it, and its exclusive zone keeps windows above it.

Like tint2's config, no clock (the screen would never stay still long), no tray, no
tooltips, no hover effects: the pointer's moves change nothing it draws."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from holm.agent.desktop import processes
from holm.agent.wayland.sway_ipc import SwayIpc
from holm.agent.wayland.sway_up import wait_started

DOCK_START_S = 10.0
DOCK_HEIGHT = 30

WAYBAR_CONFIG = {
    "layer": "top",
    "position": "bottom",
    "height": DOCK_HEIGHT,
    "spacing": 2,
    "modules-left": ["wlr/taskbar"],
    "modules-center": [],
    "modules-right": [],
    "wlr/taskbar": {
        "format": "{title}",
        "max-length": 28,
        "tooltip": False,
        "on-click": "activate",
        "all-outputs": False,
    },
}
# tint2's colours (holm/agent/desktop/features_up.py): a dark panel, grey tasks, the
# active one blue.
WAYBAR_STYLE = """\
* { font-family: "DejaVu Sans", sans-serif; font-size: 12px; border: none;
    border-radius: 0; min-height: 0; box-shadow: none; text-shadow: none;
    transition: none; }
window#waybar { background: #202020; color: #ffffff; }
#taskbar button { background: #3a3a3a; color: #ffffff; border: 1px solid #5a5a5a;
    border-radius: 2px; padding: 0 4px; margin: 2px 1px; }
#taskbar button:hover { background: #3a3a3a; box-shadow: none; }
#taskbar button.active { background: #2a5a8a; border-color: #6090c0; }
"""


def start_dock(
    screen: int, ipc: str, height: int, run_dir: Path, env: dict[str, str]
) -> subprocess.Popen[bytes]:
    """Start the screen's waybar and wait until sway has given it its zone (the
    workspace is then shorter than the output), so the screen is ready with it drawn and
    the room it takes kept from other windows."""
    config = run_dir / f"waybar-{screen}.json"
    style = run_dir / f"waybar-{screen}.css"
    config.write_text(json.dumps(WAYBAR_CONFIG))
    style.write_text(WAYBAR_STYLE)
    log_path = run_dir / f"waybar-{screen}.log"
    proc = processes.spawn(
        ["waybar", "-c", str(config), "-s", str(style)], env=env, log_path=log_path
    )
    conn = SwayIpc(ipc)
    try:
        wait_started(
            "the dock (waybar)",
            screen,
            proc,
            lambda: _has_zone(conn, height),
            DOCK_START_S,
            log_path,
        )
    finally:
        conn.close()
    processes.supervise(f"waybar (screen {screen})", proc)
    return proc


def _has_zone(conn: SwayIpc, height: int) -> bool:
    return any(w.get("rect", {}).get("height", height) < height for w in conn.workspaces())
