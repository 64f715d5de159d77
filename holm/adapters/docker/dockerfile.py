"""The image source of every docker box: one Dockerfile template, and the Debian packages of
the desktop and of each feature.

The template is kept as Python text (not package data) so that it ships with the code and
its text is part of the image key: a change to it makes a new image tag.

Layers go from the most shared to the most specific, so the engine's build cache reuses the
desktop layer across every spec and an agent change rebuilds only the last small layers.
"""

from __future__ import annotations

from collections.abc import Iterable

from holm.adapters.features import WAYLAND_FEATURE_PACKAGES, WAYLAND_PACKAGES, feature_packages
from holm.wire.spec import Feature

# Everything a box has whatever its spec: the X server, window manager, viewer, browser, the
# catalog's apps that need no packages of their own (holm.wire.catalog), the agent's
# interpreter, and the fonts the local runtime's boxes also have. The other catalog apps
# come with the spec's `apps`, after the features (holm.adapters.features).
DESKTOP_PACKAGES: tuple[str, ...] = (
    "xvfb",
    "xauth",
    "x11-utils",
    "openbox",
    "x11vnc",
    "chromium",
    "xterm",
    "python3",
    "fonts-dejavu-core",
    "fonts-liberation",
    "ca-certificates",
    "procps",
)

# What the image's build imports to prove the agent starts there; a Wayland image's agent
# also needs pywayland and the wlroots protocols' bindings (scripts/build-wayland-protocols),
# which an X11 image has not (holm/agent/wayland/ imports them only on a Wayland screen).
X11_IMPORTS = "import holm.agent.server, msgspec, PIL, Xlib"
WAYLAND_IMPORTS = (
    X11_IMPORTS + ", pywayland.protocol.wlr_screencopy_unstable_v1,"
    " pywayland.protocol.wlr_virtual_pointer_unstable_v1,"
    " pywayland.protocol.wlr_data_control_unstable_v1,"
    " pywayland.protocol.virtual_keyboard_unstable_v1"
)

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
{server_step}{feature_step}{packages_step}COPY python/ {site_dir}/
COPY holm/ {site_dir}/holm/
# Bytecode made once here, not by every new container (it is most of the agent's start);
# and the build fails, not a box, when the agent cannot start in this image.
RUN python3 -m compileall -q {site_dir} \\
 && python3 -c "{imports}"
CMD ["python3", "-m", "holm.agent", "--run-dir", "/run/holm"]
"""

_APT_STEP = """\
RUN export DEBIAN_FRONTEND=noninteractive \\
 && apt-get update \\
 && apt-get install -y --no-install-recommends {packages} \\
 && rm -rf /var/lib/apt/lists/*
"""


def render(
    features: Iterable[Feature],
    packages: Iterable[str],
    python_version: str,
    server: str = "x11",
) -> str:
    """The Dockerfile for a canonical spec's display server, features and packages (its own
    and its apps'); the base is a build arg (`BASE_IMAGE`), so a pulled base and its
    bootstrapped stand-in use one text. A Wayland image is the X11 one's first layer (its
    desktop packages, the largest: Chromium) and then the compositor's, so the two images
    share that layer in the engine's cache."""
    features = list(features)
    wayland = server == "wayland"
    server_packages = list(WAYLAND_PACKAGES) if wayland else []
    if wayland:
        server_packages += [p for f in features for p in WAYLAND_FEATURE_PACKAGES.get(f, ())]
    return TEMPLATE.format(
        desktop_packages=" ".join(DESKTOP_PACKAGES),
        server_step=_apt_step(sorted(set(server_packages))),
        feature_step=_apt_step(feature_packages(features)),
        packages_step=_apt_step(sorted(set(packages))),
        site_dir=f"/usr/local/lib/python{python_version}/dist-packages",
        imports=WAYLAND_IMPORTS if wayland else X11_IMPORTS,
    )


def _apt_step(packages: list[str]) -> str:
    return _APT_STEP.format(packages=" ".join(packages)) if packages else ""


__all__ = ["DESKTOP_PACKAGES", "TEMPLATE", "render"]
