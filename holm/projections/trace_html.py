"""A trace as one self-contained HTML page: every entry in its text form (as `holm trace`
prints it), with who did it and when, a person's steps and takeovers shaded; choosing a step
(a click, or the arrow keys) shows the screen as it was then, the action drawn on it (a
click's ring, a drag's line, a scroll's arrow, what was typed or pressed) and a command's
output. A fork can be shown beside its source, their steps aligned as `holm diff` aligns
them, each aligned pair on one row.

Nothing is fetched: each kept frame is in the page once, as base64 text that becomes an
image only when a step that shows it is chosen, so the page is a file that can be mailed.
What a box wrote into its trace (command output, titles) is escaped text, or JSON read by
the page's own script and shown as text, under a policy that runs no script but that one.

Served by `GET /v1/boxes/{id}/trace/view` and written by `holm trace view`."""

from __future__ import annotations

import base64
import hashlib
import html
import json
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime
from typing import NamedTuple

from holm.projections.text import INCOMPLETE_LINE, entry_text
from holm.projections.trace_details import Detail, PointerTrail
from holm.wire.diff import MatchedStep, Parting, StepRef
from holm.wire.entries import Entry, FrameSeen, TakeoverEnded, TakeoverStarted, kind_of

# At most this many different frames are put in the page; the rest are named only.
MAX_FRAMES = 256
# Rows are laid out by blocks of this many, and a block off the screen is not laid out at
# all (`content-visibility: auto`): what lets a page of thousands of entries open at once.
ROWS_PER_BLOCK = 200

FramePng = Callable[[str], bytes | None]

_SCRIPT = """(() => {
  const rows = document.querySelectorAll("#entries .row");
  const panels = document.getElementsByClassName("panel");
  const SVG = "http://www.w3.org/2000/svg";
  let frames = null;
  let details = null;
  let chosen = null;
  const fork = document.getElementById("fork");
  const forkButton = fork ? fork.querySelector("button") : null;
  const data = (id) => JSON.parse(document.getElementById(id).textContent);
  function shape(svg, name, attributes) {
    const element = document.createElementNS(SVG, name);
    for (const [key, value] of Object.entries(attributes)) element.setAttribute(key, value);
    svg.appendChild(element);
  }
  function draw(svg, mark, r) {
    if (mark.ring) {
      const [x, y] = mark.ring;
      shape(svg, "circle", {class: "ring", cx: x, cy: y, r: r});
      shape(svg, "circle", {class: "dot", cx: x, cy: y, r: r / 5});
    }
    if (mark.line) {
      const points = mark.line;
      shape(svg, "polyline", {class: "line", points: points.map((p) => p.join(",")).join(" ")});
      const [x0, y0] = points[0];
      const [x1, y1] = points[points.length - 1];
      shape(svg, "circle", {class: "dot from", cx: x0, cy: y0, r: r / 4});
      shape(svg, "circle", {class: "ring to", cx: x1, cy: y1, r: r / 2});
    }
    if (mark.scroll) {
      const [x, y, dx, dy] = mark.scroll;
      const n = Math.hypot(dx, dy) || 1;
      shape(svg, "circle", {class: "ring", cx: x, cy: y, r: r});
      const [x2, y2] = [x + dx / n * r * 3, y + dy / n * r * 3];
      shape(svg, "line", {class: "line", x1: x, y1: y, x2: x2, y2: y2});
    }
  }
  function output(box, exec) {
    box.hidden = !exec;
    if (!exec) return;
    const [ended, stdout, stderr, notes] = box.children;
    ended.textContent = exec.ended;
    stdout.textContent = exec.stdout;
    stdout.hidden = !exec.stdout;
    stderr.textContent = exec.stderr;
    stderr.hidden = !exec.stderr;
    notes.textContent = exec.notes.join("; ");
  }
  function show(side, panel) {
    const [caption, shot, say, box] = panel.children;
    const [img, svg] = shot.children;
    const label = panel.dataset.label ? panel.dataset.label + ": " : "";
    const step = side.dataset.seq === undefined ? "no step here" : "step " + side.dataset.seq;
    let detail = {};
    if (side.dataset.detail !== undefined) {
      details = details || data("details");
      detail = details[Number(side.dataset.detail)];
    }
    say.textContent = detail.say || "";
    output(box, detail.exec);
    svg.replaceChildren();
    if (side.dataset.frame === undefined) {
      shot.hidden = true;
      img.removeAttribute("src");
      caption.textContent = label + step + ": no frame kept up to here";
      return;
    }
    frames = frames || data("frames");
    const [width, height, png] = frames[Number(side.dataset.frame)];
    const seen = ": the screen as step " + side.dataset.frameSeq + " saw it";
    caption.textContent = label + step + seen;
    img.src = "data:image/png;base64," + png;
    svg.setAttribute("viewBox", "0 0 " + width + " " + height);
    if (detail.mark) draw(svg, detail.mark, Math.max(width, height) / 60);
    shot.hidden = false;
  }
  function choose(row) {
    if (!row) return;
    if (chosen) chosen.classList.remove("chosen");
    chosen = row;
    row.classList.add("chosen");
    row.scrollIntoView({block: "nearest"});
    const sides = row.classList.contains("pair") ? row.children : [row];
    for (let i = 0; i < panels.length; i++) show(sides[i], panels[i]);
    for (const thumb of document.querySelectorAll("#strip .thumb")) {
      thumb.classList.toggle("current", thumb.dataset.frameSeq === row.dataset.frameSeq);
    }
    if (forkButton && row.dataset.seq !== undefined) {
      forkButton.textContent = "Fork from here (up to step " + row.dataset.seq + ")";
    }
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
  // The filmstrip: each kept frame of the trace in order; a click or a drag along it
  // (scrubbing) chooses the `frame` entry that recorded it.
  const strip = document.getElementById("strip");
  const thumbs = strip ? strip.querySelectorAll(".thumb") : [];
  for (const thumb of thumbs) {
    frames = frames || data("frames");
    const img = document.createElement("img");
    img.alt = "frame of step " + thumb.dataset.step;
    img.src = "data:image/png;base64," + frames[Number(thumb.dataset.frame)][2];
    thumb.appendChild(img);
  }
  // Along the strip, by the pointer's x alone: choosing a row may scroll the page, and the
  // strip with it, from under the pointer.
  const scrub = (event) => {
    for (const thumb of thumbs) {
      const r = thumb.getBoundingClientRect();
      if (event.clientX < r.left || event.clientX >= r.right) continue;
      if (!thumb.classList.contains("current")) {
        choose(document.querySelector('#entries .row[data-seq="' + thumb.dataset.step + '"]'));
      }
      return;
    }
  };
  if (strip) {
    strip.addEventListener("pointerdown", (event) => {
      strip.setPointerCapture(event.pointerId);
      scrub(event);
    });
    strip.addEventListener("pointermove", (event) => { if (event.buttons & 1) scrub(event); });
  }
  // "Fork from here", on a served page only: `POST …/fork` with the chosen step as `up_to`,
  // authorised by the grant the server put in the page (never the caller's token), then
  // the new box's viewer ticket, and off to its live viewer. What the server refuses is
  // said in the page; a refusal marked retryable (a box still starting) is asked again.
  if (fork) {
    const said = fork.querySelector(".said");
    const link = fork.querySelector("a");
    const tell = (text, failed) => {
      said.textContent = text;
      said.classList.toggle("failed", failed);
    };
    const post = async (path, body) => {
      let answer;
      try {
        answer = await fetch(path, {
          method: "POST",
          headers: {"Authorization": "Bearer " + fork.dataset.grant,
                    "Content-Type": "application/json"},
          body: JSON.stringify(body),
          credentials: "omit",
          cache: "no-store",
        });
      } catch (error) {
        throw Object.assign(new Error("the server could not be reached (" + error.message + ")"),
                            {retryable: false});
      }
      let data = null;
      try { data = await answer.json(); } catch (error) { data = null; }
      if (answer.ok) return data;
      const text = data && data.code ? data.code + ": " + data.message : "HTTP " + answer.status;
      throw Object.assign(new Error(text), {retryable: Boolean(data && data.retryable)});
    };
    const pause = (ms) => new Promise((done) => setTimeout(done, ms));
    const ticketOf = async (boxId, screen) => {
      const path = "/v1/boxes/" + encodeURIComponent(boxId) + "/screens/" + screen +
        "/viewer/ticket";
      for (let tries = 1; ; tries++) {
        try {
          return await post(path, {mode: "view"});
        } catch (error) {
          if (!error.retryable || tries >= 120) throw error;
          await pause(1000);
        }
      }
    };
    forkButton.addEventListener("click", async () => {
      if (!chosen || chosen.dataset.seq === undefined) return;
      const upTo = Number(chosen.dataset.seq);
      const screen = Number(chosen.dataset.screen || 0);
      forkButton.disabled = true;
      link.hidden = true;
      tell("Forking up to step " + upTo + "…", false);
      let box = null;
      try {
        const path = "/v1/boxes/" + encodeURIComponent(fork.dataset.box) + "/fork";
        const made = await post(path, {up_to: upTo});
        box = made.box;
        const report = made.replay;
        tell("Forked up to step " + upTo + " as " + box.id + "; opening its viewer…", false);
        const ticket = await ticketOf(box.id, Math.min(screen, Math.max(box.screens - 1, 0)));
        link.href = ticket.url;
        link.textContent = "Open the viewer of " + box.id;
        if (report.stopped_at !== null || report.truncated) {
          // Not all of it was done again: said here, not lost to the next page.
          const where = report.truncated ? "ran out of time" : "stopped at step " +
            report.stopped_at;
          tell("Forked as " + box.id + ", but its replay " + where + " (" + report.ok +
               " of " + report.attempted + " steps done).", true);
          link.hidden = false;
          forkButton.disabled = false;
          return;
        }
        location.assign(ticket.url);
      } catch (error) {
        // Which call failed: the fork itself, or (the box made) its viewer's ticket.
        const what = box ? "Forked up to step " + upTo + " as " + box.id +
          ", but its viewer could not be opened: " : "Fork from step " + upTo + " failed: ";
        tell(what + error.message, true);
        forkButton.disabled = false;
      }
    });
  }
  // Open on the step where two runs part, else on the last entry: the screen it ended on.
  const parted = document.querySelector("#entries .side.parted");
  choose(parted ? parted.closest(".row") : rows[rows.length - 1]);
})();"""

# What a browser is told of the page: its one script, images from data: URLs, inline styles.
CONTENT_SECURITY_POLICY = (
    "default-src 'none'; "
    f"script-src 'sha256-{base64.b64encode(hashlib.sha256(_SCRIPT.encode()).digest()).decode()}'; "
    "img-src data:; style-src 'unsafe-inline'; base-uri 'none'; "
    "form-action 'none'; frame-ancestors 'none'"
)
# A served page with "fork from here": the same, and its script may call its own server
# (the fork and the viewer ticket), nothing else.
SERVED_CONTENT_SECURITY_POLICY = CONTENT_SECURITY_POLICY + "; connect-src 'self'"

# A block's height until it is laid out once: a guess of 22 px a row.
_BLOCK_PX = ROWS_PER_BLOCK * 22
_STYLE = (
    """
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #222; }
h1 { font-size: 1.3em; margin: 0 0 .2em; }
.sub { color: #666; margin-bottom: 1em; }
main { display: flex; gap: 1.5em; align-items: flex-start; }
#entries { flex: 1 1 55%; min-width: 0; }
#screen { flex: 1 1 45%; position: sticky; top: 0; max-height: 100vh; overflow: auto; }
.panel + .panel { margin-top: 1em; }
.shot { position: relative; margin-top: .3em; border: 1px solid #ccc; }
.shot img { display: block; width: 100%; height: auto; }
.marks { position: absolute; left: 0; top: 0; width: 100%; height: 100%; overflow: visible;
         pointer-events: none; }
.marks * { fill: none; stroke: #e0218a; stroke-width: 3; vector-effect: non-scaling-stroke; }
.marks .dot { fill: #e0218a; }
.say { font-family: ui-monospace, monospace; white-space: pre-wrap; word-break: break-word;
       margin-top: .3em; color: #8a1360; }
.output { margin-top: .5em; }
.output pre { background: #f6f6f6; padding: .4em .6em; margin: .3em 0; max-height: 20em;
              overflow: auto; white-space: pre-wrap; word-break: break-word; }
.output pre.stderr { background: #fbeeee; }
.output .notes { color: #a40; }
.head, .row { display: grid; border-bottom: 1px solid #eee; }
.head > span, .row > span, .side > span { padding: .25em .6em; }
.single { grid-template-columns: 4em 11em 4.5em 9em minmax(0, 1fr); }
.pair { grid-template-columns: minmax(0, 1fr) minmax(0, 1fr); }
.side { display: grid; grid-template-columns: 3.5em 4.5em 7.5em minmax(0, 1fr); }
.side + .side { border-left: 1px solid #ddd; }
.row { cursor: pointer; }
.head { font-weight: 600; background: #fafafa; position: sticky; top: 0; z-index: 1; }
.seq, .at { font-variant-numeric: tabular-nums; color: #666; white-space: nowrap; }
.text { font-family: ui-monospace, monospace; white-space: pre-wrap; word-break: break-word; }
.actor { font-weight: 600; }
.agent .actor { color: #245; } .system .actor { color: #777; } .person .actor { color: #a40; }
.taken { background: #fff3e6; }
.person { background: #fde0c5; }
.unmatched { box-shadow: inset 3px 0 #c33; }
.beyond { color: #999; }
#strip { display: flex; gap: 4px; overflow-x: auto; padding-bottom: .5em; margin-bottom: .5em;
         touch-action: none; user-select: none; }
.thumb { flex: none; padding: 0; border: 2px solid transparent; background: none; cursor: pointer; }
.thumb img { display: block; height: 60px; width: auto; pointer-events: none; }
.thumb.current { border-color: #2a62c9; }
.parted { box-shadow: inset 5px 0 #e0a000; background: #fff4cc; }
.parting { color: #8a5a00; font-weight: 600; }
.row:hover, .row:hover > .side { background: #f3f6fb; }
.row.chosen, .row.chosen > .side { background: #dde8f8; }
.incomplete { color: #a00; margin-top: 1em; }
#fork { display: flex; gap: .8em; align-items: baseline; flex-wrap: wrap; margin-bottom: .8em; }
#fork button { font: inherit; padding: .3em .8em; }
#fork .failed { color: #a00; font-weight: 600; }
"""
    f".block {{ content-visibility: auto; contain-intrinsic-size: auto {_BLOCK_PX}px; }}"
)


class ForkControl(NamedTuple):
    """What a served page's "fork from here" needs: the box it forks, and the grant its
    script sends (holm/http/page_grants.py), which allows that fork and the forks' viewer
    tickets only."""

    box_id: str
    grant: str


class TraceSide(NamedTuple):
    """One trace of a side-by-side page: its name, entries, frames, and whether it ends in
    a torn line."""

    name: str
    entries: Sequence[Entry]
    frame_png: FramePng
    incomplete: bool = False


class _Store:
    """What the page's script reads: each kept frame once (`[width, height, base64]`, by
    hash, whichever trace it came from: a hash names its pixels) and each step's detail."""

    def __init__(self) -> None:
        self.frames: list[list[object]] = []
        self.details: list[Detail] = []
        self._placed: dict[str, int] = {}
        self._missing: set[tuple[int, str]] = set()

    def place(self, frame: FrameSeen, frame_png: FramePng) -> int | None:
        if frame.frame in self._placed:
            return self._placed[frame.frame]
        tried = (id(frame_png), frame.frame)
        if tried in self._missing or len(self.frames) >= MAX_FRAMES:
            return None
        png = frame_png(frame.frame)
        if png is None:
            self._missing.add(tried)
            return None
        self._placed[frame.frame] = len(self.frames)
        self.frames.append([frame.width, frame.height, base64.b64encode(png).decode()])
        return self._placed[frame.frame]

    def placed(self, frame_hash: str) -> int | None:
        """Where a frame already placed is in the page's frames."""
        return self._placed.get(frame_hash)

    def add(self, detail: Detail) -> int:
        self.details.append(detail)
        return len(self.details) - 1


class _Reader:
    """One trace read in order: each entry's cells and the data its row carries (the frame
    it shows, its detail), with what the entries before it left (takeovers, last frames)."""

    def __init__(self, side: TraceSide, store: _Store) -> None:
        self._side = side
        self._store = store
        self._first = side.entries[0].at_ms if side.entries else 0
        self._taken: set[int] = set()
        self._trail = PointerTrail()
        # The last kept frame each screen showed (its place and the step that saw it): what
        # a step on that screen shows; a step on no screen shows the last of any.
        self._last: dict[int | None, tuple[int, int]] = {}

    def row(self, entry: Entry, classes: Sequence[str], *, at: bool) -> str:
        """The entry's element: `classes` and its actor's, shaded while a person had the
        screen it is on; its seq, time (`at`), actor, kind and text."""
        if isinstance(entry, TakeoverStarted):
            self._taken.add(entry.screen)
        screen: int | None = getattr(entry, "screen", None)
        names = [*classes, entry.actor] + (["taken"] if screen in self._taken else [])
        cell = html.escape(entry_text(entry))
        if isinstance(entry, FrameSeen):
            place = self._store.place(entry, self._side.frame_png)
            if place is None:
                cell += " <em>(frame not kept)</em>"
            else:
                cell += f" ({entry.width}×{entry.height})"
                self._last[entry.screen] = self._last[None] = (place, entry.seq)
        detail = self._trail.detail(entry)
        extra = "" if detail is None else f' data-detail="{self._store.add(detail)}"'
        if isinstance(entry, TakeoverEnded):
            self._taken.discard(entry.screen)
        when = f'<span class="at">{_at(entry.at_ms, self._first)}</span>' if at else ""
        on = "" if screen is None else f' data-screen="{screen}"'
        return (
            f'<div class="{" ".join(names)}" data-seq="{entry.seq}"{on}{self._frame(screen)}'
            f"{extra}>"
            f'<span class="seq">{entry.seq}</span>{when}'
            f'<span class="actor">{entry.actor}</span>'
            f'<span class="kind">{html.escape(kind_of(entry))}</span>'
            f'<span class="text">{cell}</span></div>'
        )

    def gap(self) -> str:
        """The side of a row where this trace has no entry: the screen as it last was."""
        return f'<div class="side empty"{self._frame(None)}></div>'

    def _frame(self, screen: int | None) -> str:
        shown = self._last.get(screen)
        return "" if shown is None else f' data-frame="{shown[0]}" data-frame-seq="{shown[1]}"'


def _at(ms: int, first: int) -> str:
    clock = datetime.fromtimestamp(ms / 1000, UTC).strftime("%H:%M:%S.%f")[:-3]
    return f"{clock} +{(ms - first) / 1000:.1f}s"


def _panel(label: str) -> str:
    return (
        f'<div class="panel" data-label="{html.escape(label)}"><div class="caption">'
        f"{html.escape(label + ': ' if label else '')}Choose a step (a click, or ↑ and ↓) to "
        'see the screen at that point.</div><div class="shot" hidden>'
        '<img alt="the screen at the chosen step">'
        '<svg class="marks" preserveAspectRatio="none"></svg></div><div class="say"></div>'
        '<div class="output" hidden><div class="ended"></div><pre class="stdout"></pre>'
        '<pre class="stderr"></pre><div class="notes"></div></div></div>'
    )


def _json(value: object) -> str:
    # Inside a script element: no `<`, `>` or `&` as such, so what a box wrote cannot end
    # the element early.
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _page(
    title: str,
    sub: str,
    head: str,
    rows: list[str],
    tail: str,
    panels: str,
    store: _Store,
    strip: str = "",
    controls: str = "",
    policy: str = CONTENT_SECURITY_POLICY,
) -> str:
    blocks = "".join(
        f'<div class="block">{"".join(rows[at : at + ROWS_PER_BLOCK])}</div>'
        for at in range(0, len(rows), ROWS_PER_BLOCK)
    )
    return (
        '<!doctype html>\n<html><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{policy}">'
        f"<title>{html.escape(title)}</title><style>{_STYLE}</style></head><body>"
        f'<h1>{html.escape(title)}</h1><div class="sub">{sub}</div>{controls}{strip}'
        f'<main><div id="entries">{head}{blocks}{tail}</div><div id="screen">{panels}</div></main>'
        f'<script type="application/json" id="frames">{_json(store.frames)}</script>'
        f'<script type="application/json" id="details">{_json(store.details)}</script>'
        f"<script>{_SCRIPT}</script></body></html>\n"
    )


def _incomplete(name: str = "") -> str:
    return f'<p class="incomplete">{html.escape(name + INCOMPLETE_LINE)}</p>'


_SHADING = "rows by a person shaded darker, rows while a person had the screen lighter"


def trace_html(
    title: str,
    entries: Sequence[Entry],
    frame_png: FramePng,
    *,
    incomplete: bool = False,
    fork: ForkControl | None = None,
) -> str:
    """The page of `entries`; `frame_png(hash)` gives a frame's PNG, None when it is not
    kept (pruned, or a trace file without its state dir). With `fork` (a page the server
    serves), a "fork from here" button forks the box up to the chosen step and opens the
    new box's viewer; its policy is then `SERVED_CONTENT_SECURITY_POLICY`."""
    store = _Store()
    reader = _Reader(TraceSide(title, entries, frame_png, incomplete), store)
    rows = [reader.row(entry, ["row", "single"], at=True) for entry in entries]
    by_actor = Counter(e.actor for e in entries)
    counts = ", ".join(f"{n} by {actor}" for actor, n in sorted(by_actor.items()))
    sub = f"{len(entries)} entries ({counts}); {len(store.frames)} frames kept; {_SHADING}"
    head = (
        '<div class="head single"><span>seq</span><span>at</span><span>actor</span>'
        "<span>kind</span><span>what</span></div>"
    )
    tail = _incomplete() if incomplete else ""
    strip = _strip(entries, store)
    if fork is None:
        return _page(title, sub, head, rows, tail, _panel(""), store, strip)
    controls = _fork_control(fork)
    policy = SERVED_CONTENT_SECURITY_POLICY
    return _page(title, sub, head, rows, tail, _panel(""), store, strip, controls, policy)


def _fork_control(fork: ForkControl) -> str:
    """The button, what it says of its fork (`role=status`, read out as it changes), and
    a link to the fork's viewer, shown when the fork's replay did not do every step."""
    return (
        f'<div id="fork" data-box="{html.escape(fork.box_id)}" '
        f'data-grant="{html.escape(fork.grant)}"><button type="button">Fork from here</button>'
        '<span class="said" role="status" aria-live="polite"></span>'
        '<a hidden rel="noreferrer"></a></div>'
    )


def _strip(entries: Sequence[Entry], store: _Store) -> str:
    """The filmstrip: a button for each `frame` entry whose picture the page keeps, in the
    trace's order; the script puts the picture in it."""
    thumbs = [
        f'<button class="thumb" data-step="{e.seq}" data-frame-seq="{e.seq}" '
        f'data-frame="{store.placed(e.frame)}" title="step {e.seq}"></button>'
        for e in entries
        if isinstance(e, FrameSeen) and store.placed(e.frame) is not None
    ]
    return f'<div id="strip">{"".join(thumbs)}</div>' if thumbs else ""


def aligned_rows(
    a: Sequence[Entry], b: Sequence[Entry], pairs: Sequence[MatchedStep]
) -> Iterator[tuple[Entry | None, Entry | None]]:
    """The rows of a side-by-side page: each aligned pair on one row, and each entry between
    two pairs on a row of its own (A's before B's), every entry once and in its order."""
    at_a = at_b = 0
    for pair in pairs:
        while at_a < len(a) and a[at_a].seq < pair.a:
            yield a[at_a], None
            at_a += 1
        while at_b < len(b) and b[at_b].seq < pair.b:
            yield None, b[at_b]
            at_b += 1
        if at_a == len(a) or at_b == len(b) or (a[at_a].seq, b[at_b].seq) != (pair.a, pair.b):
            raise ValueError(f"step pair {pair.a}, {pair.b} is not in the traces given")
        yield a[at_a], b[at_b]
        at_a, at_b = at_a + 1, at_b + 1
    yield from ((entry, None) for entry in a[at_a:])
    yield from ((None, entry) for entry in b[at_b:])


def trace_pair_html(
    title: str,
    a: TraceSide,
    b: TraceSide,
    pairs: Sequence[MatchedStep],
    missing: Sequence[StepRef],
    extra: Sequence[StepRef],
    *,
    a_up_to: int | None = None,
    parting: Parting | None = None,
) -> str:
    """A (a source) and B (its fork, or another run) side by side: `pairs` are the steps
    aligned as `holm diff` aligns them, each pair on one row; the steps of A that B lacks
    (`missing`) and of B that A lacks (`extra`) marked; A's entries after `a_up_to` (where
    B was forked) greyed; the step where they first part (`parting`) marked and said above
    the rows. Choosing a row shows both screens at that point."""
    store = _Store()
    readers = (_Reader(a, store), _Reader(b, store))
    flagged = {("a", s.seq) for s in missing} | {("b", s.seq) for s in extra}
    parted = set() if parting is None else {("a", parting.a), ("b", parting.b)}
    rows: list[str] = []
    for entry_a, entry_b in aligned_rows(a.entries, b.entries, pairs):
        sides = []
        for name, reader, entry in (("a", readers[0], entry_a), ("b", readers[1], entry_b)):
            if entry is None:
                sides.append(reader.gap())
                continue
            classes = ["side"]
            if (name, entry.seq) in flagged:
                classes.append("unmatched")
            if (name, entry.seq) in parted:
                classes.append("parted")
            if name == "a" and a_up_to is not None and entry.seq > a_up_to:
                classes.append("beyond")
            sides.append(reader.row(entry, classes, at=False))
        matched = " matched" if entry_a is not None and entry_b is not None else ""
        rows.append(f'<div class="row pair{matched}">{"".join(sides)}</div>')
    scope = "" if a_up_to is None else f" (A up to seq {a_up_to})"
    sub = (
        f"A: {html.escape(a.name)}, {len(a.entries)} entries; B: {html.escape(b.name)}, "
        f"{len(b.entries)} entries{scope}. {len(pairs)} steps matched (one row each), "
        f"{len(missing)} missing and {len(extra)} extra (marked red), as "
        "<code>holm diff</code> aligns them; "
        f"{len(store.frames)} frames kept; {_SHADING}"
    )
    sub += (
        " No divergence: every step went the same way."
        if parting is None
        else f' <span class="parting">First divergence ({html.escape(parting.kind)}, marked '
        f"yellow): {html.escape(parting.message)}</span>"
    )
    cells = "<span>seq</span><span>actor</span><span>kind</span><span>what</span>"
    head = (
        f'<div class="head pair"><div class="side">{cells}</div>'
        f'<div class="side">{cells}</div></div>'
    )
    tail = "".join(_incomplete(f"{s.name}: ") for s in (a, b) if s.incomplete)
    panels = _panel(f"A {a.name}") + _panel(f"B {b.name}")
    return _page(title, sub, head, rows, tail, panels, store)


__all__ = [
    "CONTENT_SECURITY_POLICY",
    "MAX_FRAMES",
    "SERVED_CONTENT_SECURITY_POLICY",
    "ForkControl",
    "TraceSide",
    "aligned_rows",
    "trace_html",
    "trace_pair_html",
]
