"""Named browser states in both stores: each caller's own names, kept across a restart by
the local store, private files, and names that stay in their folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from holm.errors import BadRequest, NotFound
from holm.events.browser_states import BrowserStates
from holm.wire.api import SavedState

STATE = '{"cookies": [{"name": "sid", "value": "s3cret"}], "origins": []}'


def info(name: str) -> SavedState:
    return SavedState(name=name, cookies=1, origins=0, saved_at_ms=1, box="box_1")


@pytest.fixture(params=["memory", "local"])
def states(request: pytest.FixtureRequest, tmp_path: Path) -> BrowserStates:
    return BrowserStates(None if request.param == "memory" else tmp_path / "browser-states")


async def test_each_caller_has_its_own_names(states: BrowserStates) -> None:
    await states.save("ws_a", info("work"), STATE)
    await states.save(None, info("work"), "{}")
    assert [s.name for s in await states.saved("ws_a")] == ["work"]
    assert await states.saved("ws_b") == []
    assert await states.load("ws_a", "work") == STATE
    assert await states.load(None, "work") == "{}"
    with pytest.raises(NotFound, match="work"):
        await states.load("ws_b", "work")
    assert not await states.remove("ws_b", "work")
    assert await states.remove("ws_a", "work")
    assert await states.saved("ws_a") == [] and len(await states.saved(None)) == 1


async def test_a_name_cannot_leave_its_folder(states: BrowserStates) -> None:
    for name in ("../x", "a/b", ".hidden", ""):
        with pytest.raises(BadRequest):
            await states.save("ws_a", info(name), STATE)
    with pytest.raises(BadRequest):
        await states.load("../ws_b", "work")


async def test_the_local_store_keeps_them_across_a_restart(tmp_path: Path) -> None:
    root = tmp_path / "browser-states"
    await BrowserStates(root).save("ws_a", info("work"), STATE)
    again = BrowserStates(root)
    assert await again.saved("ws_a") == [info("work")]
    assert await again.load("ws_a", "work") == STATE
    kept = root / "ws_a" / "work.json"
    assert kept.stat().st_mode & 0o777 == 0o600
