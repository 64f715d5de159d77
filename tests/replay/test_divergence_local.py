"""Where a fork parts from its source, on real local boxes (Xvfb, Chromium): a command that
succeeded in the source and fails in the fork is reported `failed` at that step; a page whose
body differs in the fork is reported `screen` at the step that drew it, with the rectangle
that differs and a crop of both frames around it."""

from __future__ import annotations

import asyncio
import base64
import io
from typing import Any

import pytest
from PIL import Image

from holm.engine import Engine
from holm.replay import fork_box
from holm.replay.diff import diff_boxes
from holm.replay.interpreter import record_final_frames
from holm.wire.actions import Exec, ExecWhat, OpenUrl, WaitStill, WriteFile, WriteWhat
from holm.wire.api import ActionsRequest
from holm.wire.results import ExecResult, FileSaved, expect
from holm.wire.spec import Placement, Spec

pytestmark = pytest.mark.desktop


async def run(engine: Engine, box_id: str, *argv: str) -> ExecResult:
    action = Exec(what=ExecWhat(argv=list(argv), timeout_ms=10_000))
    return expect(await engine.act(box_id, 0, action), ExecResult)


async def test_a_command_that_fails_in_the_fork_only_is_reported_failed(desktops: Any) -> None:
    engine = desktops.engine()
    source = (await engine.create_box(Spec(), Placement())).id
    # Written alone, the file is recorded without its bytes: the fork has no such file.
    written = WriteFile(what=WriteWhat(path="/tmp/flag", contents_base64="eQo="))
    expect(await engine.act(source, 0, written), FileSaved)
    assert (await run(engine, source, "test", "-e", "/tmp/flag")).code == 0
    fork = (await fork_box(engine, source, {})).box.id

    parted = (await diff_boxes(engine, source, fork)).divergence

    assert parted is not None and parted.kind == "failed", parted
    assert parted.step == "exec test -e /tmp/flag"
    assert parted.a_outcome["exec"]["code"] == 0 and parted.b_outcome["exec"]["code"] == 1


def batch_seqs(diff: Any, parted: Any) -> int:
    """The seq in A of the matched step at B's seq of the parting."""
    return next(pair.a for pair in diff.pairs if pair.b == parted.b)


async def test_a_page_drawn_otherwise_in_the_fork_is_reported_screen(desktops: Any) -> None:
    engine = desktops.engine()
    source = (await engine.create_box(Spec(), Placement())).id
    # The page's title is fixed and its body the time in nanoseconds: the fork writes
    # another, and only the screen shows it.
    page = (
        'printf \'<title>stamp</title><body style="caret-color:transparent">'
        '<h1 style="font-size:80px">%s</h1>\' "$(date +%N)" > /tmp/stamp.html'
    )
    await run(engine, source, "sh", "-c", page)
    steps = [OpenUrl(url="file:///tmp/stamp.html"), WaitStill(settle_ms=300)]
    batch = await engine.run_batch(source, 0, ActionsRequest(actions=steps))
    assert all(r.ok for r in batch.results), batch.results
    await asyncio.sleep(0.6)
    await record_final_frames(engine, source)
    fork = (await fork_box(engine, source, {})).box.id

    diff = await diff_boxes(engine, source, fork)

    parted = diff.divergence
    assert parted is not None and parted.kind == "screen", parted
    # The batch that drew the page: the screen is looked at where it ends.
    assert parted.step.startswith("wait_still") and parted.a == batch_seqs(diff, parted)
    assert parted.changed is not None and parted.crop is not None
    assert parted.distance is not None and parted.distance > 0
    # The crop holds the rectangle that differs.
    assert parted.crop.x <= parted.changed.x and parted.crop.y <= parted.changed.y
    assert parted.a_screen is not None and parted.b_screen is not None
    assert parted.a_screen.frame != parted.b_screen.frame
    crops = [
        Image.open(io.BytesIO(base64.b64decode(side.crop_png_base64 or "")))
        for side in (parted.a_screen, parted.b_screen)
    ]
    assert {crop.size for crop in crops} == {(parted.crop.width, parted.crop.height)}
    assert crops[0].tobytes() != crops[1].tobytes()
    assert not diff.same()
