"""Figures of native widgets (`on_node`, through the box's AT-SPI bus) on a real local box
(bubblewrap, Xvfb, Chromium; displays :390 and up). Prints, asserts nothing.

    PYTHONPATH=. .venv/bin/python bench/widgets.py [--rounds 20]

Each figure is one action through the runtime's `Desktop.act` (client → agent over the box's
Unix socket → pyatspi in the agent's widgets thread → the application over D-Bus → answer),
p50/p95 in ms:
- `find` on a 200-control window: a GTK dialog (zenity) of 200 fields with a label each, the
  field named by its label (none has a name: each is matched by the label beside it);
- `find` by path, `set` of one of its fields, `tree` of the dialog;
- `find` on Chromium with a page of 200 labelled fields (named by the page).
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sys
import tempfile
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.pages import FORM, ms, report  # noqa: E402
from holm.adapters.local.runtime import LocalRuntime  # noqa: E402
from holm.wire import actions as a  # noqa: E402
from holm.wire import results as r  # noqa: E402
from holm.wire.spec import AppDefinition, Placement, Spec  # noqa: E402

FIELDS = [f"--add-entry=Field {i}" for i in range(200)]
DIALOG = AppDefinition(
    command=["zenity", "--forms", "--title=Bench", *FIELDS], window_class="zenity"
)


def find(query: str, role: str | None, app: str) -> a.Action:
    return a.OnNode(what=a.NodeFindOp(node=a.NodeQuery(query=query, role=role, app=app), limit=1))


async def main(rounds: int) -> None:
    state = Path(tempfile.mkdtemp(prefix="hbw-", dir="/tmp"))
    runtime = LocalRuntime(state / "boxes", "bench-widgets", display_base=390, display_count=5)
    box = f"box_{uuid.uuid4().hex[:12]}"
    try:
        started = time.perf_counter()
        await runtime.create(box, Spec(apps={"bench": DIALOG}), Placement())
        desktop = await runtime.desktop(box)
        print(f"box ready (with its accessibility bus): {ms(started):.0f} ms")
        await desktop.act(0, a.Launch(app="bench"))
        started = time.perf_counter()
        first = await desktop.act(0, find("Field 150", "text", "zenity"))
        print(f"first find (pyatspi loads, the bus's cache fills): {ms(started):.0f} ms")
        assert isinstance(first, r.NodeDone) and first.nodes
        path = first.nodes[0].path
        tree = await desktop.act(0, a.OnNode(what=a.NodeTreeOp(app="zenity")))
        assert isinstance(tree, r.NodeDone)
        print(f"widgets in the dialog: {sum(1 for _ in _all(tree.nodes))}")
        await desktop.act(0, a.OpenUrl(url=FORM))
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
        await report(desktop, rounds, cases)
    finally:
        await runtime.delete(box)
        await runtime.close()
        shutil.rmtree(state, ignore_errors=True)


def _all(nodes: list[r.Node]) -> list[r.Node]:
    return [n for node in nodes for n in (node, *_all(node.children))]


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=20)
    asyncio.run(main(parser.parse_args().rounds))
