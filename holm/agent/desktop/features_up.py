"""What the desktop's features start besides the screens: a PulseAudio server for the box
(`audio`), and a panel with the open windows on each screen (`dock`); and, for a box
without `wide_fonts`, a font configuration that hides them. The other features are
packages only (programs on the path: `x11_apps`).

Everything here blocks (it waits for processes and sockets); the agent runs it in threads.
"""

from __future__ import annotations

import logging
import subprocess
import time
from pathlib import Path

from Xlib import display

from holm.agent.desktop import processes
from holm.agent.desktop.desktop_up import StartFailed
from holm.agent.x11.windows import client_ids, read_window

log = logging.getLogger("holm.agent")

AUDIO_START_S = 10.0
DOCK_START_S = 10.0
# In the box's private /tmp: no other box, and not holmd, reaches the sound server.
PULSE_DIR = Path("/tmp/holm-pulse")
PULSE_SOCKET = PULSE_DIR / "native"
# The sink every program of the box plays to; `parec -d holm.monitor` records it.
SINK = "holm"

# Only the task list: no clock (it would change the screen every minute, so a screen
# would never stay still for long), no launcher, no tray; no hover effects, so the
# pointer's moves change nothing. Its strut keeps maximised windows above it.
TINT2RC = """\
rounded = 0
border_width = 0
background_color = #202020 100
border_color = #202020 100
rounded = 2
border_width = 1
background_color = #3a3a3a 100
border_color = #5a5a5a 100
rounded = 2
border_width = 1
background_color = #2a5a8a 100
border_color = #6090c0 100
panel_items = T
panel_size = 100% 30
panel_margin = 0 0
panel_padding = 2 2 2
panel_position = bottom center horizontal
panel_layer = top
panel_background_id = 1
strut_policy = follow_size
panel_window_name = tint2
disable_transparency = 1
mouse_effects = 0
wm_menu = 0
taskbar_mode = single_desktop
taskbar_name = 0
taskbar_padding = 0 0 2
task_text = 1
task_icon = 1
task_centered = 0
task_maximum_size = 220 30
task_padding = 4 2 4
task_background_id = 2
task_active_background_id = 3
task_font_color = #ffffff 100
urgent_nb_of_blink = 0
tooltip = 0
"""


# Where the wide_fonts packages put their fonts (fonts-noto-core, -cjk, -color-emoji).
WIDE_FONT_DIRS = ("/usr/share/fonts/truetype/noto", "/usr/share/fonts/opentype/noto")


def hide_wide_fonts(run_dir: Path) -> dict[str, str]:
    """A box without `wide_fonts` draws as if their packages were not there, also where
    they are (a local box sees the host's fonts): a page renders as it would in that box's
    docker image. Returns what a program's environment needs for it."""
    rejected = "".join(f"<glob>{d}/*</glob>" for d in WIDE_FONT_DIRS)
    config = run_dir / "fonts.conf"
    config.write_text(
        '<?xml version="1.0"?>\n<!DOCTYPE fontconfig SYSTEM "urn:fontconfig:fonts.dtd">\n'
        "<fontconfig><include>/etc/fonts/fonts.conf</include>"
        f"<selectfont><rejectfont>{rejected}</rejectfont></selectfont></fontconfig>\n"
    )
    return {"FONTCONFIG_FILE": str(config)}


def start_audio(run_dir: Path, env: dict[str, str]) -> dict[str, str]:
    """Start the box's PulseAudio server with one null sink, and return what a program's
    environment needs to play to it."""
    PULSE_DIR.mkdir(mode=0o700, parents=True, exist_ok=True)
    PULSE_SOCKET.unlink(missing_ok=True)
    proc = processes.spawn(
        [
            "pulseaudio",
            "--daemonize=no",
            "--exit-idle-time=-1",
            "--use-pid-file=no",
            "--system=no",
            # No default script: only the modules named here (no hardware, no D-Bus).
            "-n",
            f"--load=module-null-sink sink_name={SINK}",
            f"--load=module-native-protocol-unix socket={PULSE_SOCKET} auth-anonymous=1",
            "--log-target=stderr",
        ],
        env={**env, "XDG_RUNTIME_DIR": str(PULSE_DIR)},
        log_path=run_dir / "pulseaudio.log",
    )
    processes.supervise("pulseaudio", proc)
    deadline = time.monotonic() + AUDIO_START_S
    while not PULSE_SOCKET.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            raise StartFailed(
                f"the sound server (pulseaudio) did not start (see {run_dir / 'pulseaudio.log'})"
            )
        time.sleep(0.02)
    return {"PULSE_SERVER": f"unix:{PULSE_SOCKET}"}


def start_dock(
    screen: int, display_name: str, run_dir: Path, env: dict[str, str]
) -> subprocess.Popen[bytes]:
    """Start the screen's panel and wait for the window manager to have it, so that the
    screen is ready with its panel drawn and the room it takes kept from other windows.

    A panel the window manager has not listed in half the time is started once more. Twice
    in this project's full test runs a box's panel was not listed within 10 s, a cause not
    found (40 starts of Xvfb, openbox and tint2 alone and 24 whole boxes all came up); the
    log keeps the first attempt's end."""
    config = run_dir / f"tint2-{screen}.rc"
    config.write_text(TINT2RC)
    log_path = run_dir / f"tint2-{screen}.log"
    conn = display.Display(display_name)
    try:
        for attempt in (1, 2):
            proc = processes.spawn(["tint2", "-c", str(config)], env=env, log_path=log_path)
            processes.supervise(f"tint2 {display_name}", proc)
            deadline = time.monotonic() + DOCK_START_S / 2
            while not _has_dock(conn):
                if proc.poll() is not None or time.monotonic() > deadline:
                    break
                time.sleep(0.02)
            else:
                return proc
            code = proc.poll()
            how = "never listed" if code is None else f"ended with {code}"
            log.warning("screen %s: the dock (tint2) %s (attempt %s)", screen, how, attempt)
            processes.kill_group(proc.pid)
        raise StartFailed(
            f"screen {screen}: the dock (tint2) did not start: {how} (see {log_path})"
        )
    finally:
        conn.close()


def _has_dock(conn: display.Display) -> bool:
    found = (read_window(conn, wid) for wid in client_ids(conn))
    return any(window is not None and window.dock for window in found)
