"""How long the trace page takes to open: a trace of N entries (bench/rebuild.py's browser
session, its frames real 1280x800 screenshots from fixtures/traces/recorded), written as
the one self-contained file `holm trace view` writes, opened in headless Chromium by
file:// URL with no server. Prints, asserts nothing.

    .venv/bin/python bench/trace_view.py [N] [--runs 5] [--before REV]

For each page: its size, and the p50 over the runs of the time from navigating to the page
being usable (its load event fired and the entry list rendered, read in the page). The page
of `--before` (a git revision of holm/projections/trace_html.py, default the last one
without a script) is rendered from the same entries and measured in the same run.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path[:0] = [str(ROOT), str(BENCH), str(ROOT / "tests")]

from kits.chromium import Chromium  # noqa: E402
from rebuild import make_trace  # noqa: E402

from holm.projections import trace_html  # noqa: E402
from holm.wire.entries import Entry  # noqa: E402

FRAMES = sorted((ROOT / "fixtures" / "traces" / "recorded" / "frames").glob("*/*.png"))
# The page as it was before it had a script: every frame an <img> in its row.
BEFORE = "4f552af"

Render = Callable[..., str]


def page_of(revision: str) -> ModuleType:
    """trace_html.py as it is at `revision`, imported under its own name."""
    source = subprocess.run(
        ["git", "show", f"{revision}:holm/projections/trace_html.py"],
        cwd=ROOT,
        check=True,
        capture_output=True,
    ).stdout
    path = Path(tempfile.mkdtemp(prefix="trace-html-")) / f"trace_html_{revision}.py"
    path.write_bytes(source)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def frame_png(pngs: list[bytes]) -> Callable[[str], bytes]:
    """Every frame of the trace is a different hash; its bytes are one of the recorded
    screenshots in turn."""
    seen: dict[str, bytes] = {}

    def png(frame: str) -> bytes:
        return seen.setdefault(frame, pngs[len(seen) % len(pngs)])

    return png


async def time_to_usable(chromium: Chromium, url: str, entries: int) -> tuple[float, float]:
    """Seconds from navigating to the page being usable, as this process saw it and as the
    page's own clock says (navigation start to the list being there after the load)."""
    await chromium.open("about:blank")
    start = time.perf_counter()
    await chromium.open(url)
    listed = await chromium.evaluate(
        # The rows of the page before (a table) or of now.
        "document.querySelectorAll('tbody tr, #entries .row[data-seq]').length"
    )
    wall = time.perf_counter() - start
    assert listed == entries, f"the page lists {listed} of {entries} entries"
    in_page = await chromium.evaluate("performance.now()")
    return wall, in_page / 1000


async def measure(pages: dict[str, Path], entries: int, runs: int) -> None:
    with tempfile.TemporaryDirectory() as profile:
        async with Chromium(Path(profile)) as chromium:
            figures: dict[str, list[tuple[float, float]]] = {name: [] for name in pages}
            # Interleaved, so that a busy spell of the machine falls on both pages alike.
            for _ in range(runs):
                for name, path in pages.items():
                    figures[name].append(await time_to_usable(chromium, path.as_uri(), entries))
    print(f"{'page':<16} {'size':>9} {'usable p50':>11} {'in page p50':>12}  (target < 1000 ms)")
    for name, path in pages.items():
        wall = statistics.median(w for w, _ in figures[name]) * 1000
        in_page = statistics.median(p for _, p in figures[name]) * 1000
        size = path.stat().st_size / 1e6
        print(f"{name:<16} {size:7.1f} MB {wall:8.0f} ms {in_page:9.0f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("n", nargs="?", type=int, default=5000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--before", default=BEFORE)
    args = parser.parse_args()
    entries: list[Entry] = make_trace(args.n)
    pngs = [path.read_bytes() for path in FRAMES]
    renders: dict[str, Render] = {
        f"before ({args.before})": page_of(args.before).trace_html,
        "now": trace_html.trace_html,
    }
    with tempfile.TemporaryDirectory() as tmp:
        pages: dict[str, Path] = {}
        for name, render in renders.items():
            path = Path(tmp) / f"{len(pages)}.html"
            start = time.perf_counter()
            path.write_text(render("Trace bench", entries, frame_png(pngs)), encoding="utf-8")
            print(f"{name}: rendered in {(time.perf_counter() - start) * 1000:.0f} ms")
            pages[name] = path
        print(f"{args.n} entries, {len(pngs)} recorded frames in turn, {args.runs} runs each")
        asyncio.run(measure(pages, args.n, args.runs))


if __name__ == "__main__":
    main()
