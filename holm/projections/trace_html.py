"""A trace as one self-contained HTML page: every entry in its text form (as `holm trace`
prints it), with who did it and when, the person's takeovers marked, and each recorded
frame inline as a PNG `data:` URL. No script, nothing fetched: the page is a file that
can be mailed, and what a box wrote into its trace (command output, titles) is escaped
text under a policy that runs nothing.

Served by `GET /v1/boxes/{id}/trace/view` and written by `holm trace view FILE.jsonl`."""

from __future__ import annotations

import base64
import html
from collections import Counter
from collections.abc import Callable, Sequence
from datetime import UTC, datetime

from holm.projections.text import INCOMPLETE_LINE, entry_text
from holm.wire.entries import Entry, FrameSeen, TakeoverEnded, TakeoverStarted, kind_of

# At most this many frames are put in the page; the rest are named only.
MAX_FRAMES = 256
# What a browser is told of the served page: images from data: URLs and inline styles.
CONTENT_SECURITY_POLICY = (
    "default-src 'none'; img-src data:; style-src 'unsafe-inline'; base-uri 'none'; "
    "form-action 'none'; frame-ancestors 'none'"
)

_STYLE = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #222; }
h1 { font-size: 1.3em; margin: 0 0 .2em; }
.sub { color: #666; margin-bottom: 1em; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: .25em .6em; border-bottom: 1px solid #eee;
         vertical-align: top; }
th { position: sticky; top: 0; background: #fafafa; }
td.seq, td.at { font-variant-numeric: tabular-nums; color: #666; white-space: nowrap; }
td.text { font-family: ui-monospace, monospace; white-space: pre-wrap; word-break: break-word; }
.actor { font-weight: 600; }
tr.agent .actor { color: #245; } tr.system .actor { color: #777; }
tr.person .actor { color: #a40; }
tr.taken td { background: #fff6ee; }
img { max-width: 480px; border: 1px solid #ccc; display: block; margin-top: .3em; }
details summary { cursor: pointer; color: #36c; }
.incomplete { color: #a00; margin-top: 1em; }
"""


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
    rows: list[str] = []
    shown = 0
    for entry in entries:
        if isinstance(entry, TakeoverStarted):
            taken.add(entry.screen)
        screen = getattr(entry, "screen", None)
        classes: list[str] = [entry.actor]
        if screen in taken:
            classes.append("taken")
        cell = html.escape(entry_text(entry))
        if isinstance(entry, FrameSeen):
            png = frame_png(entry.frame) if shown < MAX_FRAMES else None
            if png is not None:
                shown += 1
                data = base64.b64encode(png).decode()
                cell += (
                    f"<details open><summary>{entry.width}×{entry.height}</summary>"
                    f'<img alt="frame {html.escape(entry.frame)}" loading="lazy" '
                    f'src="data:image/png;base64,{data}"></details>'
                )
            else:
                cell += " <em>(frame not kept)</em>"
        rows.append(
            f'<tr class="{" ".join(classes)}"><td class="seq">{entry.seq}</td>'
            f'<td class="at">{_at(entry.at_ms, first)}</td>'
            f'<td class="actor">{entry.actor}</td>'
            f"<td>{html.escape(kind_of(entry))}</td>"
            f'<td class="text">{cell}</td></tr>'
        )
        if isinstance(entry, TakeoverEnded):
            taken.discard(entry.screen)
    counts = ", ".join(f"{n} by {actor}" for actor, n in sorted(by_actor.items()))
    tail = f'<p class="incomplete">{html.escape(INCOMPLETE_LINE)}</p>' if incomplete else ""
    return (
        '<!doctype html>\n<html><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{CONTENT_SECURITY_POLICY}">'
        f"<title>{html.escape(title)}</title><style>{_STYLE}</style></head><body>"
        f"<h1>{html.escape(title)}</h1>"
        f'<div class="sub">{len(entries)} entries ({counts}); {shown} frames shown; '
        "rows shaded while a person had the screen</div>"
        "<table><thead><tr><th>seq</th><th>at</th><th>actor</th><th>kind</th>"
        "<th>what</th></tr></thead><tbody>"
        + "".join(rows)
        + f"</tbody></table>{tail}</body></html>\n"
    )


__all__ = ["CONTENT_SECURITY_POLICY", "MAX_FRAMES", "trace_html"]
