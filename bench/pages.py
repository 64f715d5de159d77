"""Figures of the page actions on a real local box (bubblewrap, Xvfb, Chromium; displays
:380 and up). Prints, asserts nothing.

    PYTHONPATH=. .venv/bin/python bench/pages.py [--rounds 30]

Each figure is one action through the runtime's `Desktop.act` (client → agent over the box's
Unix socket → DevTools inside the box → answer), p50/p95 in ms:
- `look` (the finder run on a form of 200 fields), `fill`, `click` (no navigation),
- `read` (markdown), `snapshot`, `evaluate` (`document.title`), `page_shot` (viewport PNG).
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from urllib.parse import quote

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from holm.adapters.base import Desktop  # noqa: E402
from holm.adapters.local.runtime import LocalRuntime  # noqa: E402
from holm.wire import actions as a  # noqa: E402
from holm.wire.spec import Placement, Spec  # noqa: E402

TITLE = "document.title"
FIELDS = "".join(f"<p><label for=f{i}>Field {i}</label><input id=f{i}></p>" for i in range(200))
FORM = "data:text/html;charset=utf-8," + quote(
    f"<title>Bench</title><h1>Bench</h1>{FIELDS}<button onclick='1'>Continue</button>"
)

# An article of about 100 KB: headings, paragraphs with links, a list and a table.
_SECTION = (
    "<h2>Section {n}</h2>"
    + "<p>"
    + "Words of the article, one after another. " * 40
    + "<a href='#s{n}'>a link</a></p><ul><li>one</li><li>two</li></ul>"
    "<table><tr><th>a</th><th>b</th></tr><tr><td>1</td><td>2</td></tr></table>"
)
ARTICLE = "data:text/html;charset=utf-8," + quote(
    "<title>Article</title><h1>Article</h1>" + "".join(_SECTION.format(n=n) for n in range(56))
)


def ms(since: float) -> float:
    return (time.perf_counter() - since) * 1000


async def timed(rounds: int, work: Callable[[], Awaitable[object]]) -> tuple[float, float]:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        await work()
        times.append((time.perf_counter() - start) * 1000)
    return p50_p95(times)


def p50_p95(times: list[float]) -> tuple[float, float]:
    ordered = sorted(times)
    return statistics.median(ordered), ordered[max(0, int(len(ordered) * 0.95) - 1)]


async def report(desktop: Desktop, rounds: int, cases: list[tuple[str, a.Action]]) -> None:
    """Each case's p50 and p95 over `rounds` runs on screen 0, a line each."""
    for name, action in cases:

        async def work(action: a.Action = action) -> object:
            return await desktop.act(0, action)

        p50, p95 = await timed(rounds, work)
        print(f"{name:34} p50 {p50:8.1f} ms   p95 {p95:8.1f} ms")


async def main(rounds: int) -> None:
    state = Path(tempfile.mkdtemp(prefix="hbp-", dir="/tmp"))
    runtime = LocalRuntime(state / "boxes", "bench-pages", display_base=380, display_count=5)
    box = f"box_{uuid.uuid4().hex[:12]}"
    try:
        started = time.perf_counter()
        await runtime.create(box, Spec(), Placement())
        desktop = await runtime.desktop(box)
        print(f"box ready: {(time.perf_counter() - started) * 1000:.0f} ms")
        started = time.perf_counter()
        await desktop.act(0, a.OpenUrl(url=FORM))
        print(f"first page operation (open_url of the form): {ms(started):.0f} ms")
        started = time.perf_counter()
        await desktop.act(0, a.OnPage(what=a.ClickOp(query="Field 3")))
        print(f"first element operation (session, script): {ms(started):.0f} ms")
        cases: list[tuple[str, a.Action]] = [
            ("look 'Field 150' (200 fields)", a.Look(what=a.LookWhat(query="Field 150"))),
            ("fill 'Field 7'", a.OnPage(what=a.FillOp(query="Field 7", text="Ada"))),
            ("click 'button Continue'", a.OnPage(what=a.ClickOp(query="button Continue"))),
            ("read markdown", a.Read()),
            ("snapshot", a.Snapshot()),
            ("evaluate document.title", a.Evaluate(what=a.EvaluateWhat(expression=TITLE))),
            ("page_shot png", a.PageShot()),
        ]
        await report(desktop, rounds, cases)
        await desktop.act(0, a.OpenUrl(url=ARTICLE))
        article: list[tuple[str, a.Action]] = [
            ("read markdown, a 100 KB article", a.Read(what=a.ReadWhat(limit=200_000)))
        ]
        await report(desktop, rounds, article)
    finally:
        await runtime.delete(box)
        await runtime.close()
        shutil.rmtree(state, ignore_errors=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=30)
    asyncio.run(main(parser.parse_args().rounds))
