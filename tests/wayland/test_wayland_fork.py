"""A fork of a Wayland run: the run's page filled in by keys, forked to a new Wayland box
through the engine, ends on the same pixels (but for one known pair, below)."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from replay_kit import FORM, Desktops, write_file_argv

from holm.replay import fork_box
from holm.replay.diff import diff_boxes
from holm.replay.interpreter import record_final_frames
from holm.wire.actions import Action, Exec, ExecWhat, OpenUrl, Press, Type, WaitStill, Windows
from holm.wire.api import ActionsRequest
from holm.wire.results import ExecResult, WindowList, expect
from holm.wire.spec import DesktopSpec, Placement, Spec
from holm.wire.values import Region

pytestmark = pytest.mark.desktop

WAYLAND = Spec(desktop=DesktopSpec(server="wayland", features=["wide_fonts"]))
FILL_FORM: list[Action] = [
    OpenUrl(url="file:///tmp/form.html"),
    OpenUrl(url="file:///tmp/form.html#order"),
    WaitStill(settle_ms=300),
    Press(chord=["Tab"]),
    Type(text="Ada"),
    Press(chord=["Tab"]),
    Type(text="Paris"),
    Press(chord=["Tab"]),
    Press(chord=["Return"]),
    WaitStill(settle_ms=300),
]


@pytest.fixture
async def desktops() -> AsyncIterator[Desktops]:
    # Short: the boxes' Unix sockets live below it.
    state_dir = Path(tempfile.mkdtemp(prefix="hw-", dir="/tmp"))
    made = Desktops(state_dir)
    try:
        yield made
    finally:
        await made.close()
        shutil.rmtree(state_dir, ignore_errors=True)


async def test_a_wayland_run_forks_to_the_same_pixels(desktops: Desktops) -> None:
    engine = desktops.engine()
    source = (await engine.create_box(WAYLAND, Placement())).id
    argv = write_file_argv("/tmp/form.html", FORM)
    done = expect(
        await engine.act(source, 0, Exec(what=ExecWhat(argv=argv, timeout_ms=10_000))),
        ExecResult,
    )
    assert done.code == 0, done
    batch = await engine.run_batch(source, 0, ActionsRequest(actions=FILL_FORM))
    assert all(r.ok for r in batch.results), batch.results
    await record_final_frames(engine, source)

    result = await fork_box(engine, source, {})

    fork = result.box.id
    assert result.box.state == "ready"
    assert (result.replay.attempted, result.replay.ok) == (1 + len(FILL_FORM),) * 2
    titles = [w.title for w in expect(await engine.act(fork, 0, Windows()), WindowList).windows]
    assert any("Hello Ada from Paris" in t for t in titles), titles
    fidelity = await diff_boxes(engine, source, fork)
    (frame,) = fidelity.frames
    if not frame.pixels_equal:
        # Known, and the only difference seen (about one run in four): Chromium on Wayland
        # draws two antialiased pixels of its toolbar's top-left curve, at (6, 40), one of
        # two ways per start (2 levels apart), whatever the run did (docs/agent.md). Every
        # other pixel is the source's.
        assert frame.changed == Region(6, 40, 2, 1), frame
        assert frame.distance is not None and frame.distance < 1e-7, frame
    assert fidelity.same(frame_tolerance=1e-7), fidelity.divergence
