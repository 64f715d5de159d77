"""A trace as one self-contained HTML page: every entry in its text form (as `holm trace`
prints it), with who did it and when, the person's takeovers marked; choosing a step (a
click, or the arrow keys) shows the screen as it was then. Nothing is fetched: each kept
frame is in the page once, as base64 text that becomes an image only when a step that
shows it is chosen, so the page is a file that can be mailed. What a box wrote into its
trace (command output, titles) is escaped text, under a policy that runs no script but the
page's own.

Served by `GET /v1/boxes/{id}/trace/view` and written by `holm trace view FILE.jsonl`."""

from __future__ import annotations

import base64
import hashlib
import html
import json
from collections import Counter
from collections.abc import Callable, Sequence
from datetime import UTC, datetime

from holm.projections.text import INCOMPLETE_LINE, entry_text
from holm.wire.entries import Entry, FrameSeen, TakeoverEnded, TakeoverStarted, kind_of

# At most this many different frames are put in the page; the rest are named only.
MAX_FRAMES = 256
# Rows are laid out by blocks of this many, and a block off the screen is not laid out at
# all (`content-visibility: auto`): what lets a page of thousands of entries open at once.
ROWS_PER_BLOCK = 200

_SCRIPT = """(() => {
  const rows = document.getElementsByClassName("row");
  const frames = document.getElementById("frames");
  const img = document.getElementById("frame");
  const caption = document.getElementById("caption");
  let decoded = null;
  let chosen = null;
  function choose(row) {
    if (!row) return;
    if (chosen) chosen.classList.remove("chosen");
    chosen = row;
    row.classList.add("chosen");
    row.scrollIntoView({block: "nearest"});
    const step = "step " + row.dataset.seq;
    if (row.dataset.frame === undefined) {
      img.hidden = true;
      img.removeAttribute("src");
      caption.textContent = step + ": no frame kept up to here";
      return;
    }
    decoded = decoded || JSON.parse(frames.textContent);
    caption.textContent = step + ": the screen as step " + row.dataset.frameSeq + " saw it";
    img.src = "data:image/png;base64," + decoded[Number(row.dataset.frame)];
    img.hidden = false;
  }
  document.getElementById("entries").addEventListener("click",
    (event) => choose(event.target.closest(".row")));
  document.addEventListener("keydown", (event) => {
    const by = {ArrowDown: 1, ArrowUp: -1}[event.key];
    if (!by) return;
    event.preventDefault();
    const at = chosen ? Array.prototype.indexOf.call(rows, chosen) + by : 0;
    choose(rows[Math.max(0, Math.min(rows.length - 1, at))]);
  });
})();"""

# What a browser is told of the page: its one script, images from data: URLs, inline styles.
CONTENT_SECURITY_POLICY = (
    "default-src 'none'; "
    f"script-src 'sha256-{base64.b64encode(hashlib.sha256(_SCRIPT.encode()).digest()).decode()}'; "
    "img-src data:; style-src 'unsafe-inline'; base-uri 'none'; "
    "form-action 'none'; frame-ancestors 'none'"
)

# A block's height until it is laid out once: a guess of 22 px a row.
_BLOCK_PX = ROWS_PER_BLOCK * 22
_STYLE = (
    """
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #222; }
h1 { font-size: 1.3em; margin: 0 0 .2em; }
.sub { color: #666; margin-bottom: 1em; }
main { display: flex; gap: 1.5em; align-items: flex-start; }
#entries { flex: 1 1 55%; min-width: 0; }
#screen { flex: 1 1 45%; position: sticky; top: 0; }
#screen img { max-width: 100%; border: 1px solid #ccc; display: block; margin-top: .3em; }
.row { display: grid; grid-template-columns: 4em 11em 4.5em 9em minmax(0, 1fr);
       border-bottom: 1px solid #eee; cursor: pointer; }
.row > span { padding: .25em .6em; }
.head { font-weight: 600; background: #fafafa; position: sticky; top: 0; cursor: default; }
.seq, .at { font-variant-numeric: tabular-nums; color: #666; white-space: nowrap; }
.text { font-family: ui-monospace, monospace; white-space: pre-wrap; word-break: break-word; }
.actor { font-weight: 600; }
.agent .actor { color: #245; } .system .actor { color: #777; } .person .actor { color: #a40; }
.taken { background: #fff6ee; }
.row:hover { background: #f3f6fb; }
.row.chosen { background: #dde8f8; }
.incomplete { color: #a00; margin-top: 1em; }
"""
    f".block {{ content-visibility: auto; contain-intrinsic-size: auto {_BLOCK_PX}px; }}"
)


def _at(ms: int, first: int) -> str:
    clock = datetime.fromtimestamp(ms / 1000, UTC).strftime("%H:%M:%S.%f")[:-3]
    return f"{clock} +{(ms - first) / 1000:.1f}s"


def trace_html(
    title: str,
    entries: Sequence[Entry],
    frame_png: Callable[[str], bytes | None],
    *,
    incomplete: bool = False,
) -> str:
    """The page of `entries`; `frame_png(hash)` gives a frame's PNG, None when it is not
    kept (pruned, or a trace file without its state dir)."""
    first = entries[0].at_ms if entries else 0
    by_actor = Counter(e.actor for e in entries)
    taken: set[int] = set()
    # Each kept frame once, by hash: its place in `frames`, or None when it is not kept.
    placed: dict[str, int | None] = {}
    frames: list[str] = []
    # The last kept frame each screen showed (its place and the step that saw it): what a
    # step on that screen shows; a step on no screen shows the last of any.
    last: dict[int | None, tuple[int, int]] = {}
    rows: list[str] = []
    for entry in entries:
        if isinstance(entry, TakeoverStarted):
            taken.add(entry.screen)
        screen: int | None = getattr(entry, "screen", None)
        classes: list[str] = ["row", entry.actor]
        if screen in taken:
            classes.append("taken")
        cell = html.escape(entry_text(entry))
        if isinstance(entry, FrameSeen):
            if entry.frame not in placed:
                png = frame_png(entry.frame) if len(frames) < MAX_FRAMES else None
                placed[entry.frame] = None if png is None else len(frames)
                if png is not None:
                    frames.append(base64.b64encode(png).decode())
            place = placed[entry.frame]
            if place is None:
                cell += " <em>(frame not kept)</em>"
            else:
                cell += f" ({entry.width}×{entry.height})"
                last[entry.screen] = last[None] = (place, entry.seq)
        shown = last.get(screen)
        frame = "" if shown is None else f' data-frame="{shown[0]}" data-frame-seq="{shown[1]}"'
        rows.append(
            f'<div class="{" ".join(classes)}" data-seq="{entry.seq}"{frame}>'
            f'<span class="seq">{entry.seq}</span>'
            f'<span class="at">{_at(entry.at_ms, first)}</span>'
            f'<span class="actor">{entry.actor}</span>'
            f"<span>{html.escape(kind_of(entry))}</span>"
            f'<span class="text">{cell}</span></div>'
        )
        if isinstance(entry, TakeoverEnded):
            taken.discard(entry.screen)
    counts = ", ".join(f"{n} by {actor}" for actor, n in sorted(by_actor.items()))
    blocks = "".join(
        f'<div class="block">{"".join(rows[at : at + ROWS_PER_BLOCK])}</div>'
        for at in range(0, len(rows), ROWS_PER_BLOCK)
    )
    tail = f'<p class="incomplete">{html.escape(INCOMPLETE_LINE)}</p>' if incomplete else ""
    # Base64 text only (no `<`), so the JSON cannot end its script element early.
    data = json.dumps(frames, separators=(",", ":"))
    return (
        '<!doctype html>\n<html><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{CONTENT_SECURITY_POLICY}">'
        f"<title>{html.escape(title)}</title><style>{_STYLE}</style></head><body>"
        f"<h1>{html.escape(title)}</h1>"
        f'<div class="sub">{len(entries)} entries ({counts}); {len(frames)} frames kept; '
        "rows shaded while a person had the screen</div>"
        '<main><div id="entries"><div class="row head"><span>seq</span><span>at</span>'
        "<span>actor</span><span>kind</span><span>what</span></div>"
        f"{blocks}{tail}</div>"
        '<div id="screen"><div id="caption">Choose a step (a click, or ↑ and ↓) to see the '
        'screen at that point.</div><img id="frame" alt="the screen at the chosen step" hidden>'
        "</div></main>"
        f'<script type="application/json" id="frames">{data}</script>'
        f"<script>{_SCRIPT}</script></body></html>\n"
    )


__all__ = ["CONTENT_SECURITY_POLICY", "MAX_FRAMES", "trace_html"]
