"""The Debian packages of each feature of `spec.desktop.features`: the docker runtime puts
them into a box's image, and the local runtime, whose boxes see the host's /usr, refuses a
feature whose packages the host lacks (docs/runtimes.md repeats this table)."""

from __future__ import annotations

from collections.abc import Iterable

from holm.wire.spec import Feature

FEATURE_PACKAGES: dict[Feature, tuple[str, ...]] = {
    # Scripts beyond Latin/Greek/Cyrillic: CJK, and colour emoji.
    "wide_fonts": ("fonts-noto-core", "fonts-noto-cjk", "fonts-noto-color-emoji"),
    # A PulseAudio server (its null sink takes Chromium's sound) and its tools (`parec`
    # records what plays).
    "audio": ("pulseaudio", "pulseaudio-utils"),
    # Screen recording (`…/recording`) captures the X screen with ffmpeg's x11grab.
    "video": ("ffmpeg",),
    # A panel with a task list, so a person who takes over sees the open windows.
    "dock": ("tint2",),
    # The classic X clients (xeyes, xclock, …); xterm is in every box, as a catalog app.
    "x11_apps": ("x11-apps",),
    # The AT-SPI bus and its Python bindings, for native widgets (`…/desktop/node`); the
    # session bus it is found on is the box's own (agent/a11y_bus.py).
    "accessibility": ("at-spi2-core", "dbus-daemon", "python3-pyatspi"),
}


# What a Wayland desktop needs besides the X11 one's (holm/agent/wayland/): the compositor,
# the viewer's VNC server and the clipboard's tools.
WAYLAND_PACKAGES = ("sway", "wayvnc", "wl-clipboard")
# What a feature needs more on a Wayland desktop: the X clients need XWayland to show, and
# the dock is waybar's task list (tint2 is an X11 panel, which XWayland would show as one
# more window: holm/agent/wayland/dock.py).
WAYLAND_FEATURE_PACKAGES: dict[Feature, tuple[str, ...]] = {
    "x11_apps": ("xwayland",),
    "dock": ("waybar",),
}
# The features a Wayland box does not have, refused by name (`can().wayland_without`,
# docs/runtimes.md): none now; a feature that one day cannot be had goes here.
WAYLAND_WITHOUT: tuple[Feature, ...] = ()


def feature_packages(features: Iterable[Feature]) -> list[str]:
    return sorted({pkg for feature in features for pkg in FEATURE_PACKAGES[feature]})


__all__ = [
    "FEATURE_PACKAGES",
    "WAYLAND_FEATURE_PACKAGES",
    "WAYLAND_PACKAGES",
    "WAYLAND_WITHOUT",
    "feature_packages",
]
