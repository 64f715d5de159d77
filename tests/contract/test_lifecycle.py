"""The contract of a box's life, the same on every runtime: a paused or stopped box's
desktop is refused with `screen_unavailable`, and a resumed one answers again."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from runtime_kit import runtime_named

from holm.errors import ScreenUnavailable
from holm.wire.actions import Cursor
from holm.wire.spec import Placement, Spec


@pytest.mark.parametrize(
    "name",
    [
        "memory",
        "holm",
        pytest.param("local", marks=pytest.mark.desktop),
        pytest.param("docker", marks=[pytest.mark.desktop, pytest.mark.docker]),
    ],
)
async def test_a_paused_or_stopped_box_refuses_its_desktop_alike(
    name: str, state_dir: Path, request: pytest.FixtureRequest
) -> None:
    box_id = f"box_{uuid.uuid4().hex[:12]}"
    client = request.getfixturevalue("docker_client") if name == "docker" else None
    server_id = f"contract-{uuid.uuid4().hex[:8]}"
    async with runtime_named(name, state_dir, server_id, client) as runtime:
        await runtime.create(box_id, Spec(), Placement())
        try:
            await runtime.pause(box_id)
            with pytest.raises(ScreenUnavailable, match="is paused; resume it first"):
                await runtime.desktop(box_id)
            await runtime.resume(box_id)
            desktop = await runtime.desktop(box_id)
            await desktop.act(0, Cursor())
            await runtime.stop(box_id)
            with pytest.raises(ScreenUnavailable, match="is stopped; start it first"):
                await runtime.desktop(box_id)
        finally:
            await runtime.delete(box_id)
            await runtime.close()
