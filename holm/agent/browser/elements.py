"""What acts on a page's content, by meaning: finding the element a query names
(`page_js.py`), acting on it as a person would (trusted input where a person's hand would
go), and reading what the operation changed once the page settled. One function a
module's `Pages` calls per operation (`element_op`); docs/pages.md says the rules.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import msgspec

from holm.agent.browser import input_values
from holm.agent.browser.cdp_session import Cdp
from holm.agent.motion import plan as motion_plan
from holm.errors import BadRequest, Failed, NotFound, Timeout, Transport
from holm.wire import actions as a
from holm.wire import results as r
from holm.wire.values import Motion

LOAD_TIMEOUT_S = 30.0

MAX_CHANGED = 50
POLL_S = 0.1


def to_element(d: dict[str, Any]) -> r.Element:
    return msgspec.convert(d, r.Element)


_AFTER = """
  const last = H.last && H.last.isConnected ? H.describe(H.last) : null;
  return {...H.after(A.limit), last};
"""
CHANGED = 'if (H.last) H.last.dispatchEvent(new Event("change", {bubbles: true}));'
_TICK = "await new Promise(r => setTimeout(r, 0));"


async def page_state(cdp: Cdp, body: str, **args: object) -> dict[str, Any] | None:
    """`body`'s answer, or None while the page is between documents."""
    try:
        got = await cdp.run(body, **args)
    except (Failed, Timeout, Transport):
        return None
    return got if isinstance(got, dict) else None


# The end of a load: the load event, or the main frame's "stopped loading", which comes
# even where the load event is not sent.
LOADED = ("Page.loadEventFired", "Page.frameStoppedLoading")
_STARTED = (
    "Page.frameRequestedNavigation",
    "Page.frameScheduledNavigation",
    "Page.frameStartedLoading",
    "Page.frameStartedNavigating",
)


async def settled(cdp: Cdp, settle_ms: int, first: str = "") -> dict[str, Any] | None:
    """The page after an element operation (`H.after`: its document, URL and the controls
    that changed, and `last`, the element the operation found, as it is now), once what the
    operation started has begun (a navigation, a render), a navigation it started has
    loaded, and `settle_ms` have passed. `first` is JavaScript run before all that."""
    if settle_ms:
        await asyncio.sleep(settle_ms / 1000)
    state = await page_state(cdp, first + _TICK + _AFTER, limit=MAX_CHANGED)
    if cdp.saw(*_STARTED):
        await cdp.until(LOADED, LOAD_TIMEOUT_S)
        state = await page_state(cdp, _AFTER, limit=MAX_CHANGED)
    return state


async def quiet(cdp: Cdp, quiet_ms: int, within_ms: int) -> None:
    """Wait until the page's DOM stayed unchanged for `quiet_ms` (at most `within_ms`)."""
    deadline = time.monotonic() + within_ms / 1000
    last, since = None, time.monotonic()
    while time.monotonic() < deadline:
        try:
            now = await cdp.run("return H.mark();")
        except (Failed, Timeout):
            now = None
        if now != last:
            last, since = now, time.monotonic()
        elif time.monotonic() - since >= quiet_ms / 1000:
            return
        await asyncio.sleep(POLL_S)


_FIND = """
  const els = H.find(A.q, A.exact, null, A.kind);
  if (!els.length) return null;
  const el = els[0];
  H.last = el;
  if (A.scroll) {
    const r = el.getBoundingClientRect();
    if (r.bottom < 0 || r.right < 0 || r.top > innerHeight || r.left > innerWidth)
      el.scrollIntoView({block: "center", inline: "center"});
  }
  const found = H.describe(el);
"""


_BUTTONS = {"left": "left", "right": "right", "middle": "middle"}


async def _find(
    cdp: Cdp,
    query: str,
    exact: bool,
    kind: str | None = None,
    scroll: bool = True,
    then: str | None = None,
) -> dict[str, Any]:
    """The element `query` names, described as it was found, and made `H.last`; with
    `then` (JavaScript using `el`), its value is in `found["then"]`, in the same call."""
    after = (
        "return found;" if then is None else f"found.then = (() => {{ {then} }})(); return found;"
    )
    found = await cdp.run(
        _FIND + after,
        q=query,
        exact=exact,
        kind=kind,
        scroll=scroll,
        set_types=sorted(input_values.SET_TYPES),
    )
    if not isinstance(found, dict):
        raise NotFound(f"nothing on the page matches {query!r}")
    return found


def _kind(found: dict[str, Any]) -> str:
    return f"a {found.get('role') or found.get('tag')}"


def _centre(found: dict[str, Any]) -> tuple[float, float]:
    box = found["box"]
    return box["x"] + box["width"] / 2, box["y"] + box["height"] / 2


async def _on_last(cdp: Cdp, body: str, **args: object) -> Any:
    """Run `body` with `el`, the element the last `_find` chose."""
    return await cdp.run("const el = H.last; " + body, **args)


async def _click_at(
    cdp: Cdp,
    query: str,
    button: str,
    clicks: int,
    mods: int,
    motion: Motion = "instant",
    seed: int | None = None,
    force: bool = False,
) -> None:
    """Click the element the last `_find` chose as a person would: once it can take the
    click (`_actionable`), at its centre, with trusted input; `force`: a DOM `click()`,
    whatever the element looks like."""
    if force:
        await _on_last(cdp, "el.click(); return null;")
        return
    x, y = await _actionable(cdp, query)
    moves = await _move(cdp, (x, y), motion, seed)
    for count in range(1, clicks + 1):
        moves.append(cdp.mouse("mousePressed", x, y, button, count, mods))
        moves.append(cdp.mouse("mouseReleased", x, y, button, count, mods))
    await cdp.calls(moves)


# How long a click waits for its element to be clickable (Playwright's actionability):
# shown, enabled, at rest and not covered.
ACTIONABLE_WITHIN_MS = 3000

_ACTIONABLE = """
  const el = H.last;
  if (!el || !el.isConnected) return {why: "it is no longer on the page"};
  let target = el;
  // A control hidden behind its styled label (a custom checkbox) is clicked on the label.
  if (!H.visible(el) && el.labels && el.labels.length)
    target = Array.from(el.labels).find(l => H.visible(l)) || el;
  if (!H.visible(target)) {
    for (let e = target; e && e.nodeType === 1; e = e.parentElement) {
      const s = getComputedStyle(e);
      const what = e === target ? "it" : `it is inside <${e.tagName.toLowerCase()}> that`;
      if (s.display === "none") return {why: `${what} is not displayed (display: none)`};
      if (s.visibility === "hidden") return {why: `${what} is hidden (visibility: hidden)`};
      if (Number(s.opacity) === 0) return {why: `${what} is transparent (opacity: 0)`};
    }
    const r = target.getBoundingClientRect();
    return {why: `it has no size (${Math.round(r.width)}x${Math.round(r.height)})`};
  }
  if (el.disabled || el.getAttribute("aria-disabled") === "true" ||
      el.closest("fieldset[disabled]")) return {why: "it is disabled"};
  const before = target.getBoundingClientRect();
  if (before.bottom < 0 || before.right < 0 || before.top > innerHeight ||
      before.left > innerWidth) target.scrollIntoView({block: "center", inline: "center"});
  const at = target.getBoundingClientRect();
  await new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
  const r = target.getBoundingClientRect();
  if (r.x !== at.x || r.y !== at.y || r.width !== at.width || r.height !== at.height)
    return {why: "it is moving"};
  const x = r.x + r.width / 2, y = r.y + r.height / 2;
  if (x < 0 || y < 0 || x > innerWidth || y > innerHeight)
    return {why: "its centre is outside the page's view"};
  const root = target.getRootNode();
  const hit = (root.elementFromPoint ? root : document).elementFromPoint(x, y);
  const label = hit && hit.closest ? hit.closest("label") : null;
  if (!hit || !(hit === target || target.contains(hit) || (label && label.control === el))) {
    const d = hit ? H.describe(hit) : null;
    const by = d ? `${d.role || d.tag}${d.name ? ` '${d.name.slice(0, 60)}'` : ""}` : "nothing";
    return {why: `it is covered by ${by}`};
  }
  return {x, y};
"""


async def _actionable(cdp: Cdp, query: str) -> tuple[float, float]:
    """Where to click the element the last `_find` chose, once it is shown, enabled, at
    rest and the first thing under its centre (waiting up to ACTIONABLE_WITHIN_MS);
    `Failed` naming why it is not."""
    deadline = time.monotonic() + ACTIONABLE_WITHIN_MS / 1000
    while True:
        got = await cdp.run(_ACTIONABLE)
        if "why" not in got:
            return float(got["x"]), float(got["y"])
        if time.monotonic() > deadline:
            raise Failed(
                f"{query!r} cannot be clicked as a person would: {got['why']} "
                f"(waited {ACTIONABLE_WITHIN_MS} ms; force: true clicks it by script)"
            )
        await asyncio.sleep(POLL_S)


Command = tuple[str, dict[str, Any]]


async def _move(
    cdp: Cdp,
    to: tuple[float, float],
    motion: Motion,
    seed: int | None,
    button: str = "none",
) -> list[Command]:
    """Move the page's pointer to `to` along `motion`'s path from where it last was (the
    same paths as the desktop's pointer, `motion.py`): the moves that pause are made here,
    and the last ones are returned, for the caller to send with what follows."""
    if motion == "instant":
        moves = [cdp.mouse("mouseMoved", *to, button)]
    else:
        metrics = await cdp.call("Page.getLayoutMetrics")
        view = metrics.get("cssLayoutViewport") or metrics.get("layoutViewport") or {}
        bounds = (int(view.get("clientWidth", 1 << 15)), int(view.get("clientHeight", 1 << 15)))
        end = (round(to[0]), round(to[1]))
        moves = []
        for step in motion_plan(cdp.pointer, end, motion, seed, bounds):
            moves.append(cdp.mouse("mouseMoved", step.x, step.y, button))
            if step.pause_ms:
                await cdp.calls(moves)
                moves = []
                await asyncio.sleep(step.pause_ms / 1000)
    cdp.pointer = (round(to[0]), round(to[1]))
    return moves


_EDIT = """
  if (el.tagName === "INPUT" && A.set_types.includes(el.type)) return el.type;
  el.focus();
  if (el.isContentEditable) {
    const range = document.createRange();
    range.selectNodeContents(el);
    const sel = getSelection(); sel.removeAllRanges(); sel.addRange(range);
    document.execCommand("delete");
    return true;
  }
  if (!("value" in el) || el.tagName === "SELECT" || el.tagName === "BUTTON") return false;
  const proto = el.tagName === "TEXTAREA" ?
    HTMLTextAreaElement.prototype : HTMLInputElement.prototype;
  Object.getOwnPropertyDescriptor(proto, "value").set.call(el, "");
  el.dispatchEvent(new Event("input", {bubbles: true}));
  return true;
"""

_CHOOSE = """
  if (el.tagName !== "SELECT") return {error: "not a select"};
  const wanted = A.options.map(o => o.trim().toLowerCase());
  const opts = Array.from(el.options);
  const missing = wanted.filter(w => !opts.some(o =>
    o.label.trim().toLowerCase() === w || o.value.toLowerCase() === w));
  if (missing.length) return {missing};
  for (const o of opts) {
    const hit = wanted.includes(o.label.trim().toLowerCase()) ||
      wanted.includes(o.value.toLowerCase());
    if (A.drop) { if (hit) o.selected = false; }
    else if (el.multiple) { if (hit) o.selected = true; }
    else if (hit) { o.selected = true; }
  }
  el.dispatchEvent(new Event("input", {bubbles: true}));
  el.dispatchEvent(new Event("change", {bubbles: true}));
  return {chosen: Array.from(el.selectedOptions).map(o => o.label.trim())};
"""

_WAIT = """
  if (A.load && document.readyState !== "complete") return {met: false};
  for (const q of A.queries) {
    const els = H.find(q, A.exact, null, null).filter(e => H.visible(e) &&
      (!A.enabled || !(e.disabled || e.getAttribute("aria-disabled") === "true")));
    if (A.gone ? els.length === 0 : els.length > 0)
      return {met: true, query: q, element: A.gone ? null : H.describe(els[0])};
  }
  if (!A.queries.length) return {met: true, query: null, element: null};
  return {met: false};
"""


async def element_op(cdp: Cdp, what: a.ElementOp) -> r.ElementDone:
    op = a.op_of(what)
    found: Any
    match what:
        case a.ClickOp(query=query, exact=exact, button=button, double=double, new_tab=new):
            found = await _find(cdp, query, exact)
            clicks, mods = 2 if double else 1, 2 if new else 0
            await _click_at(
                cdp,
                query,
                _BUTTONS[button],
                clicks,
                mods,
                what.motion,
                what.seed,
                force=what.force,
            )
        case a.HoverOp(query=query, exact=exact, motion=motion, seed=seed):
            found = await _find(cdp, query, exact)
            await cdp.calls(await _move(cdp, _centre(found), motion, seed))
        case a.DragOp(from_=start, to=end, exact=exact, button=button, motion=motion, seed=seed):
            target = await _find(cdp, end, exact)
            found = await _find(cdp, start, exact)
            (x0, y0), (x1, y1) = _centre(found), _centre(target)
            moves = await _move(cdp, (x0, y0), motion, seed)
            moves.append(cdp.mouse("mousePressed", x0, y0, button, 1))
            if motion == "instant":
                # Steps between the ends, as a drag and drop of the page waits for moves.
                for step in range(1, 10):
                    t = step / 10
                    moves.append(
                        cdp.mouse("mouseMoved", x0 + (x1 - x0) * t, y0 + (y1 - y0) * t, button)
                    )
            await cdp.calls(moves)
            moves = await _move(cdp, (x1, y1), motion, seed, button)
            moves.append(cdp.mouse("mouseReleased", x1, y1, button, 1))
            await cdp.calls(moves)
        case a.FocusOp(query=query, exact=exact):
            found = await _find(cdp, query, exact)
            await _on_last(cdp, "el.focus(); return null;")
        case a.FillOp(query=query, exact=exact, text=text):
            found = await _find(cdp, query, exact, "editable", then=_EDIT)
            if not found["then"]:
                raise BadRequest(
                    f"{query!r} is a {found['role'] or found['tag']}, not a text field"
                )
            if isinstance(found["then"], str):
                await _set_value(cdp, query, found["then"], text)
            elif text:
                await cdp.call("Input.insertText", {"text": text})
            # The `change` event and the field's new value: see `on_page`.
        case a.CheckOp(query=query, exact=exact, on=on):
            found = await _find(cdp, query, exact, "checkable")
            if found.get("checked") is None:
                raise BadRequest(f"{query!r} is {_kind(found)}, not a checkbox")
            if found["checked"] != on:
                await _click_at(cdp, query, "left", 1, 0)
                found = await _on_last(cdp, "return H.describe(el);")
        case a.OptionsOp(query=query, exact=exact):
            found = await _find(cdp, query, exact, "select")
            labels = await _on_last(
                cdp,
                'return el.tagName === "SELECT" ? '
                "Array.from(el.options).map(o => o.label.trim()) : null;",
            )
            if labels is None:
                raise BadRequest(f"{query!r} is {_kind(found)}, not a select")
            return r.ElementDone(op=op, url="", element=to_element(found), options=labels)
        case a.ChooseOp(query=query, exact=exact, options=options, drop=drop):
            found = await _find(cdp, query, exact, "select")
            got = await _on_last(cdp, _CHOOSE, options=options, drop=drop)
            if "error" in got:
                raise BadRequest(f"{query!r} is {_kind(found)}, not a select")
            if "missing" in got:
                raise NotFound(f"{query!r} has no option {', '.join(got['missing'])}")
            found = await _on_last(cdp, "return H.describe(el);")
            return r.ElementDone(op=op, url="", element=to_element(found), options=got["chosen"])
        case a.UploadOp(query=query, exact=exact, paths=paths):
            found = await _find(cdp, query, exact, "file")
            if found["tag"] != "input":
                raise BadRequest(
                    f"{query!r} is a {found['role'] or found['tag']}, not a file input"
                )
            handle = await cdp.call("Runtime.evaluate", {"expression": "window.__holm.last"})
            object_id = handle.get("result", {}).get("objectId")
            await cdp.call("DOM.setFileInputFiles", {"files": paths, "objectId": object_id})
        case a.HighlightOp(query=query, exact=exact, ms=ms):
            found = await _find(cdp, query, exact)
            await _on_last(
                cdp,
                "const was = el.style.outline; el.style.outline = '3px solid #e11';"
                "setTimeout(() => { el.style.outline = was; }, A.ms); return null;",
                ms=ms,
            )
        case a.WaitForOp():
            return await _wait_for(cdp, what)
        case a.HistoryOp(go=go):
            if go == "reload":
                await cdp.call("Page.reload")
            else:
                await cdp.js(f"history.{go}(), null")
            return r.ElementDone(op=op, url="")
        case a.ScrollOp(query=query, exact=exact, to=to, dx=dx, dy=dy):
            scrolled = "document.scrollingElement || document.documentElement"
            found = None
            if query is not None:
                found = await _find(cdp, query, exact, scroll=to is None)
                scrolled = "H.last"
            if to is not None or query is None:
                await cdp.run(
                    f"const el = {scrolled}; const where = A.to || 'by';"
                    "if (where === 'top') el.scrollTo(el.scrollLeft, 0);"
                    "else if (where === 'bottom') el.scrollTo(el.scrollLeft, el.scrollHeight);"
                    "else el.scrollBy(A.dx, A.dy); return null;",
                    to=to,
                    dx=dx,
                    dy=dy,
                )
            if found is None:
                return r.ElementDone(op=op, url="")
        case _:
            raise BadRequest(f"unknown element operation {op!r}")
    return r.ElementDone(op=op, url="", element=to_element(found))


_SET_VALUE = """
  el.focus();
  Object.getOwnPropertyDescriptor(HTMLInputElement.prototype, "value").set.call(el, A.value);
  el.dispatchEvent(new Event("input", {bubbles: true}));
  return el.value;
"""


async def _set_value(cdp: Cdp, query: str, kind: str, text: str) -> None:
    """Fill an input typed text cannot (a date, a colour, a range: `input_values.py`) the
    way a browser takes it: its `value` in the standard's format, then `input` (and
    `change`, as after any fill); `Failed` when the field did not take it."""
    value = input_values.value_for(kind, text)
    took = await _on_last(cdp, _SET_VALUE, value=value)
    same = took == value
    if kind == "range" and took:
        # A range holds the number as its best representation ("50" for "50.0").
        same = float(took) == float(value)
    if not same:
        where = "a range takes a number from its min to its max, in its steps"
        raise Failed(
            f"{query!r} did not take {value!r}: it holds {took!r}"
            + (f" ({where})" if kind == "range" else "")
        )


async def _wait_for(cdp: Cdp, what: a.WaitForOp) -> r.ElementDone:
    queries = ([] if what.query is None else [what.query]) + list(what.or_)
    deadline = time.monotonic() + what.within_ms / 1000
    args = dict(queries=queries, exact=what.exact, gone=what.gone, enabled=what.enabled)
    got: dict[str, Any]
    while True:
        try:
            got = await cdp.run(_WAIT, load=what.load, **args)
            if got.get("met") and what.until is not None:
                met = await cdp.js(f"Promise.resolve(({what.until})).then(v => !!v)")
                got["met"] = bool(met)
        except (Failed, Timeout):
            # Between two documents (a navigation under way): not there yet.
            got = {"met": False}
        if got.get("met"):
            break
        if time.monotonic() > deadline:
            named = " or ".join(repr(q) for q in queries) or "the page"
            state = "to go" if what.gone else "to appear"
            raise Timeout(f"waited {what.within_ms} ms for {named} {state}")
        await asyncio.sleep(POLL_S)
    if what.quiet_ms:
        await quiet(cdp, what.quiet_ms, a.MAX_WAIT_MS)
    element = got.get("element")
    return r.ElementDone(
        op="wait_for",
        url="",
        element=None if element is None else to_element(element),
        matched=got.get("query"),
    )
