"""The image source of every docker box: one Dockerfile template, and the Debian packages of
the desktop and of each feature.

The template is kept as Python text (not package data) so that it ships with the code and
its text is part of the image key: a change to it makes a new image tag.

Layers go from the most shared to the most specific, so the engine's build cache reuses the
desktop layer across every spec and an agent change rebuilds only the last small layers.
"""

from __future__ import annotations

from collections.abc import Iterable

from holm.wire.spec import Feature

# Everything a box has whatever its spec: the X server, window manager, viewer, browser, the
# catalog's other apps (holm.wire.catalog: every box launches them by name), the agent's
# interpreter, and the fonts the local runtime's boxes also have.
DESKTOP_PACKAGES: tuple[str, ...] = (
    "xvfb",
    "xauth",
    "x11-utils",
    "openbox",
    "x11vnc",
    "chromium",
    "xterm",
    "mousepad",
    "python3",
    "fonts-dejavu-core",
    "fonts-liberation",
    "ca-certificates",
    "procps",
)

# Each feature of `spec.desktop.features` as the Debian packages that give it
# (docs/runtimes.md repeats this table).
FEATURE_PACKAGES: dict[Feature, tuple[str, ...]] = {
    # Scripts beyond Latin/Greek/Cyrillic: CJK, and colour emoji.
    "wide_fonts": ("fonts-noto-core", "fonts-noto-cjk", "fonts-noto-color-emoji"),
    # A PulseAudio server (its null sink takes Chromium's sound) and its tools.
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

# The agent's Python libraries are copied from holm's own environment (holm's venv runs on
# Debian's python3, the same interpreter as the image's) into the image's site directory.
TEMPLATE = """\
# The image of a holm docker box (holm/adapters/docker/dockerfile.py).
ARG BASE_IMAGE
FROM ${{BASE_IMAGE}}
ENV LANG=C.UTF-8
RUN export DEBIAN_FRONTEND=noninteractive \\
 && apt-get update \\
 && apt-get install -y --no-install-recommends {desktop_packages} \\
 && rm -rf /var/lib/apt/lists/*
{feature_step}{packages_step}COPY python/ {site_dir}/
COPY holm/ {site_dir}/holm/
# Bytecode made once here, not by every new container (it is most of the agent's start);
# and the build fails, not a box, when the agent cannot start in this image.
RUN python3 -m compileall -q {site_dir} \\
 && python3 -c "import holm.adapters.agent.server, msgspec, aiohttp, PIL, Xlib"
CMD ["python3", "-m", "holm.adapters.agent", "--run-dir", "/run/holm"]
"""

_APT_STEP = """\
RUN export DEBIAN_FRONTEND=noninteractive \\
 && apt-get update \\
 && apt-get install -y --no-install-recommends {packages} \\
 && rm -rf /var/lib/apt/lists/*
"""


def feature_packages(features: Iterable[Feature]) -> list[str]:
    return sorted({pkg for feature in features for pkg in FEATURE_PACKAGES[feature]})


def render(features: Iterable[Feature], packages: Iterable[str], python_version: str) -> str:
    """The Dockerfile for a canonical spec's features and packages; the base is a build arg
    (`BASE_IMAGE`), so a pulled base and its bootstrapped stand-in use one text."""
    return TEMPLATE.format(
        desktop_packages=" ".join(DESKTOP_PACKAGES),
        feature_step=_apt_step(feature_packages(features)),
        packages_step=_apt_step(sorted(set(packages))),
        site_dir=f"/usr/local/lib/python{python_version}/dist-packages",
    )


def _apt_step(packages: list[str]) -> str:
    return _APT_STEP.format(packages=" ".join(packages)) if packages else ""


__all__ = ["DESKTOP_PACKAGES", "FEATURE_PACKAGES", "TEMPLATE", "feature_packages", "render"]
