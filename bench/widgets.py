"""Figures of native widgets (`on_node`, through the box's AT-SPI bus) on a real local box
(bubblewrap, Xvfb, Chromium; displays :390 and up). Prints, asserts nothing.

    PYTHONPATH=. .venv/bin/python bench/widgets.py [--rounds 20] [--against DIR] [--screens 1]

Each figure is one action through the runtime's `Desktop.act` (client → agent over the box's
Unix socket → pyatspi in the agent's widgets thread → the application over D-Bus → answer),
p50/p95 in ms:
- `find` on a 200-control window: a GTK dialog (zenity) of 200 fields with a label each, the
  field named by its label (none has a name: each is matched by the label beside it);
- `find` by path, `set` of one of its fields, `tree` of the dialog;
- `find` on Chromium with a page of 200 labelled fields (named by the page).

With `--against DIR` (a folder holding another commit's `holm` package, e.g. from
`git archive REV holm | tar -x -C DIR`), a second box runs that agent, and each case's
rounds alternate between the two boxes: before and after, side by side in one run. With
`--screens 2` the boxes have two screens, each with its Chromium: an operation then sees
only its screen's applications (app_screens.py), which costs a look at each screen's
windows.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import shutil
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from pages import FORM, ms, p50_p95, report  # noqa: E402

from holm.adapters.base import Desktop  # noqa: E402
from holm.adapters.local import runtime as local_runtime  # noqa: E402
from holm.adapters.local import sandbox  # noqa: E402
from holm.adapters.local.runtime import LocalRuntime  # noqa: E402
from holm.wire import actions as a  # noqa: E402
from holm.wire import results as r  # noqa: E402
from holm.wire.spec import AppDefinition, DesktopSpec, Placement, Spec  # noqa: E402

FIELDS = [f"--add-entry=Field {i}" for i in range(200)]
DIALOG = AppDefinition(
    command=["zenity", "--forms", "--title=Bench", *FIELDS], window_class="zenity"
)


def find(query: str, role: str | None, app: str) -> a.Action:
    return a.OnNode(what=a.NodeFindOp(node=a.NodeQuery(query=query, role=role, app=app), limit=1))


async def main(rounds: int, against: Path | None, screens: int) -> None:
    state = Path(tempfile.mkdtemp(prefix="hbw-", dir="/tmp"))
    runtime = LocalRuntime(state / "boxes", "bench-widgets", display_base=390, display_count=5)
    boxes: list[str] = []
    try:
        desktop, path = await _box(runtime, boxes, None, screens)
        other = None if against is None else (await _box(runtime, boxes, against, screens))[0]
        cases: list[tuple[str, a.Action]] = [
            ("find 'Field 150' text (GTK, 200)", find("Field 150", "text", "zenity")),
            ("find 'OK' button (GTK, 200)", find("OK", "button", "zenity")),
            ("find by path (GTK)", a.OnNode(what=a.NodeFindOp(node=a.NodeQuery(path=path)))),
            (
                "set by path (GTK)",
                a.OnNode(what=a.NodeSetOp(node=a.NodeQuery(path=path), value="Ada")),
            ),
            ("tree of the dialog (GTK)", a.OnNode(what=a.NodeTreeOp(app="zenity"))),
            ("find 'Field 150' (Chromium, 200)", find("Field 150", "text", "chromium")),
        ]
        if other is None:
            await report(desktop, rounds, cases)
        else:
            await report_side_by_side(desktop, other, rounds, cases)
    finally:
        for box in boxes:
            await runtime.delete(box)
        await runtime.close()
        shutil.rmtree(state, ignore_errors=True)


async def _box(
    runtime: LocalRuntime, boxes: list[str], holm_from: Path | None, screens: int
) -> tuple[Desktop, str]:
    """A box with the 200-field dialog and the form page up (its agent from `holm_from`'s
    `holm` when given); its desktop and the path of the dialog's field 150."""
    box = f"box_{uuid.uuid4().hex[:12]}"
    boxes.append(box)
    started = time.perf_counter()
    with _agent_from(holm_from):
        spec = Spec(desktop=DesktopSpec(screens=screens), apps={"bench": DIALOG})
        await runtime.create(box, spec, Placement())
    desktop = await runtime.desktop(box)
    print(f"box ready (with its accessibility bus): {ms(started):.0f} ms")
    await desktop.act(0, a.Launch(app="bench"))
    started = time.perf_counter()
    first = await desktop.act(0, find("Field 150", "text", "zenity"))
    print(f"first find (pyatspi loads, the bus's cache fills): {ms(started):.0f} ms")
    assert isinstance(first, r.NodeDone) and first.nodes
    tree = await desktop.act(0, a.OnNode(what=a.NodeTreeOp(app="zenity")))
    assert isinstance(tree, r.NodeDone)
    print(f"widgets in the dialog: {sum(1 for _ in _all(tree.nodes or []))}")
    await desktop.act(0, a.OpenUrl(url=FORM))
    return desktop, first.nodes[0].path


@contextlib.contextmanager
def _agent_from(holm_from: Path | None) -> Iterator[None]:
    """Boxes created inside run the agent of `holm_from`'s `holm` package (a bench's
    before); None: this checkout's."""
    # The runtime's own name for it, which `LocalRuntime` calls.
    plan = sandbox.SandboxPlan
    if holm_from is not None:
        planned = functools.partial(plan, holm_dir=holm_from / "holm")
        local_runtime.SandboxPlan = planned  # type: ignore[attr-defined, assignment]
    try:
        yield
    finally:
        local_runtime.SandboxPlan = plan  # type: ignore[attr-defined]


async def report_side_by_side(
    new: Desktop, old: Desktop, rounds: int, cases: list[tuple[str, a.Action]]
) -> None:
    """Each case's p50 and p95 on each box, its rounds alternating between the two."""
    print(f"{'':34} {'this checkout':>24}   {'--against':>24}")
    for name, action in cases:
        times: dict[str, list[float]] = {"new": [], "old": []}
        for _ in range(rounds):
            for key, desktop in (("new", new), ("old", old)):
                started = time.perf_counter()
                await desktop.act(0, action)
                times[key].append(ms(started))
        line = [f"{name:34}"]
        for key in ("new", "old"):
            p50, p95 = p50_p95(times[key])
            line.append(f"p50 {p50:7.1f} p95 {p95:7.1f} ms")
        print("   ".join(line))


def _all(nodes: list[r.Node]) -> list[r.Node]:
    return [n for node in nodes for n in (node, *_all(node.children))]


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--against", type=Path, default=None)
    parser.add_argument("--screens", type=int, default=1)
    args = parser.parse_args()
    asyncio.run(main(args.rounds, args.against, args.screens))
