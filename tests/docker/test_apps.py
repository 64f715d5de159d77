"""Catalog apps into a running docker box (`POST …/apps` through the engine): apt in the
box, recorded as `apps_installed`, and the app launches; a box without the network is
refused, recording nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
from desktop_kit import launch

from holm.config import load_config
from holm.engine import Engine
from holm.errors import Failed, Unsupported
from holm.events import MemoryStore
from holm.wire.entries import AppsInstalled
from holm.wire.spec import Placement, Policy, Spec

from .conftest import MakeRuntime

pytestmark = pytest.mark.docker


def engine_on(runtime: object, state_dir: Path) -> Engine:
    config = load_config({}, state_dir=str(state_dir), default_runtime="docker")
    return Engine(config, MemoryStore(), {"docker": runtime}, server_id="srv_test")  # type: ignore[dict-item]


async def test_mousepad_installs_into_a_running_box_and_then_launches(
    make_runtime: MakeRuntime, tmp_path: Path
) -> None:
    runtime = make_runtime()
    engine = engine_on(runtime, tmp_path)
    box = await engine.create_box(Spec(), Placement())
    desktop = await runtime.desktop(box.id)
    # Not in the default image: the catalog's mousepad comes with the spec or with apps.
    with pytest.raises(Failed, match="mousepad"):
        await launch(desktop, 0, "editor")

    await engine.install_apps(box.id, ["editor"])
    trace = (await engine.read_trace(box.id)).entries
    installed = [e for e in trace if isinstance(e, AppsInstalled)]
    assert [e.apps for e in installed] == [["mousepad"]]
    window = await launch(desktop, 0, "mousepad")
    assert window.class_.lower() == "mousepad"


async def test_a_box_without_the_network_cannot_install_and_records_nothing(
    make_runtime: MakeRuntime, tmp_path: Path
) -> None:
    runtime = make_runtime(chromium=False)
    engine = engine_on(runtime, tmp_path)
    box = await engine.create_box(Spec(policy=Policy(network=False)), Placement())
    with pytest.raises(Unsupported, match="without the network"):
        await engine.install_apps(box.id, ["mousepad"])
    trace = (await engine.read_trace(box.id)).entries
    assert not any(isinstance(e, AppsInstalled) for e in trace)
