"""The features in a docker box: what their packages give is in the image, and what they
start runs under the box's few powers (a sound server as root with CAP_SETGID alone)."""

from __future__ import annotations

import uuid

import pytest
from desktop_kit import run, windows

from holm.wire.spec import DesktopSpec, Placement, Policy, Spec

from .conftest import MakeRuntime

pytestmark = pytest.mark.docker


async def test_a_docker_box_has_its_sound_server_dock_and_x11_apps(
    make_runtime: MakeRuntime,
) -> None:
    runtime = make_runtime()
    box_id = f"box_{uuid.uuid4().hex[:12]}"
    spec = Spec(
        desktop=DesktopSpec(features=["audio", "dock", "x11_apps"]), policy=Policy(network=False)
    )
    await runtime.create(box_id, spec, Placement())
    desktop = await runtime.desktop(box_id)
    info = await run(desktop, "pactl", "info")
    assert info.code == 0 and "Default Sink: holm" in info.stdout, info
    assert (await run(desktop, "sh", "-c", "command -v xeyes xclock")).code == 0
    assert (await run(desktop, "pgrep", "-x", "tint2")).code == 0
    # Chromium keeps the screen above the dock, which is not a window of the list.
    listed = await windows(desktop, 0)
    assert [w.class_.lower() for w in listed] == ["chromium"]
    assert listed[0].y + listed[0].height <= 770
    # Without wide_fonts, the box has no CJK font.
    assert (await run(desktop, "fc-list", ":lang=ja")).stdout.strip() == ""
