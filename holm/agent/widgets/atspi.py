"""Native widgets (`on_node`): the box's applications as the accessibility bus (AT-SPI)
shows them, through pyatspi.

pyatspi's calls block on D-Bus and it is not made for threads: every operation runs in one
thread of its own, one after another, never on the agent's loop.

The bus is the box's; an operation sees only the applications of its screen
(app_screens.py says which those are).

A widget's `path` is its application (its name; `name#2` for the second of that name on
the screen) and the index of each child down to it: `zenity/0/0/1/2`. It names the widget
again, on that screen, as long as the application's tree keeps its shape.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any, NamedTuple
from urllib.parse import quote, unquote

from holm.agent.widgets.app_screens import DisplayWindows, WhereShown
from holm.errors import BadRequest, Failed, NotFound
from holm.wire import actions as a
from holm.wire import results as r
from holm.wire.values import Region

# A find walks this many widgets at most: a browser with many tabs has tens of thousands.
MAX_WALK = 20_000
# Roles a query's `role` also means (AT-SPI names a GTK field `text`, Chromium's `entry`).
ROLE_ALIASES: dict[str, frozenset[str]] = {
    "text": frozenset({"text", "entry", "password text"}),
    "entry": frozenset({"text", "entry", "password text"}),
    "button": frozenset({"push button", "toggle button", "button"}),
    "checkbox": frozenset({"check box"}),
    "combobox": frozenset({"combo box"}),
}
# Roles that name the widget beside them when it has no name of its own.
LABEL_ROLES = frozenset({"label", "static"})
# Roles of the widgets a label beside them names (a panel's neighbour names nothing).
LABELLED_ROLES = frozenset(
    {"text", "entry", "password text", "combo box", "spin button", "slider", "list", "list box"}
)
# A label this far (pixels) past a field's left edge is still left of it.
LABEL_SLACK = 4
# How long a typed value may take to show on the bus (Chromium updates it after a frame).
TYPED_SHOWS_S = 2.0


class TypeInstead(Exception):
    """An editable text that takes no text through the bus (Chromium's fields): it has the
    focus now, and the value is to be typed into it; `path` names it to read it again."""

    def __init__(self, path: str) -> None:
        super().__init__(path)
        self.path = path


class Where(NamedTuple):
    """The screen of an operation: its X display (`:N`), among the box's (whose windows
    `windows` reads)."""

    display: str
    displays: tuple[str, ...]
    windows: DisplayWindows


class Widgets:
    """The `on_node` operations of one box, each on the applications of one screen."""

    def __init__(self) -> None:
        self._thread = ThreadPoolExecutor(1, thread_name_prefix="atspi")
        self._windows = DisplayWindows()

    def where(self, display: str, displays: Iterable[str]) -> Where:
        """The screen on X display `display`, among the box's `displays`."""
        return Where(display, tuple(displays), self._windows)

    async def act(self, what: a.NodeOp, where: Where) -> r.NodeDone:
        return await asyncio.get_running_loop().run_in_executor(self._thread, run, what, where)

    async def typed(self, path: str, value: str, where: Where) -> r.NodeDone:
        """A `set` done by typing: the widget at `path` read again, once it shows `value`
        (or as it is after `TYPED_SHOWS_S`)."""
        return await asyncio.get_running_loop().run_in_executor(
            self._thread, _read_typed, path, value, where
        )

    def close(self) -> None:
        # The displays' connections end with the agent (this is its end).
        self._thread.shutdown(wait=False, cancel_futures=True)


def run(what: a.NodeOp, where: Where) -> r.NodeDone:
    """Do one widget operation among the applications of the screen `where` (blocks)."""
    op = a.op_of(what)
    labels = Labels()
    match what:
        case a.NodeTreeOp(app=app, depth=depth):
            budget = [a.MAX_NODES]
            apps = _apps(where, app)
            nodes = [_tree(acc, seg, depth, budget, labels) for seg, acc in apps]
            return r.NodeDone(op=op, nodes=nodes, cut=budget[0] < 0)
        case a.NodeFindOp(node=query, limit=limit):
            found = _find(query, labels, where)
            nodes = [_node(h.acc, h.path, labels) for h in found[:limit]]
            return r.NodeDone(op=op, nodes=nodes, cut=len(found) > limit)
        case a.NodeFocusOp(node=query):
            acc, path = _one(query, labels, where)
            if not _component(acc).grabFocus():
                raise Failed(f"the widget at {path} did not take the focus")
            return r.NodeDone(op=op, node=_node(acc, path, labels))
        case a.NodeInvokeOp(node=query, action=name):
            acc, path = _one(query, labels, where)
            done = _invoke(acc, path, name)
            return r.NodeDone(op=op, node=_node(acc, path, labels), action=done)
        case a.NodeSetOp(node=query, value=value):
            acc, path = _one(query, labels, where)
            _set(acc, path, value)
            return r.NodeDone(op=op, node=_node(acc, path, labels))
    raise BadRequest(f"unknown widget operation {op!r}")


# The applications and paths


def _pyatspi() -> Any:
    # Imported on first use, in the widgets' thread: only a box with the feature has it,
    # and it reads the bus's address from the environment the agent set by then.
    import pyatspi

    return pyatspi


def _apps(where: Where, only: str | None = None) -> list[tuple[str, Any]]:
    """Each application of the screen `where`, with its path segment; `only` keeps those
    of that name."""
    every = _bus_apps()
    named = [a for a in every if only is None or (a.name or "").casefold() == only.casefold()]
    seen: dict[str, int] = {}
    apps: list[tuple[str, Any]] = []
    # By name first: which screen an application is on costs more to tell than its name.
    for acc in _on_screen(named, where):
        name = acc.name or ""
        seen[name] = seen.get(name, 0) + 1
        apps.append((quote(name, safe=" ") + (f"#{seen[name]}" if seen[name] > 1 else ""), acc))
    if only is not None and not apps:
        names = ", ".join(repr(acc.name) for acc in _on_screen(every, where)) or "none"
        raise NotFound(
            f"no application {only!r} on this screen's accessibility bus (it has {names})"
        )
    return apps


def _bus_apps() -> list[Any]:
    desktop = _pyatspi().Registry.getDesktop(0)
    every = (desktop.getChildAtIndex(i) for i in range(desktop.childCount))
    # Not by truth: an application without widgets has a length of 0.
    return [a for a in every if a is not None]


def _on_screen(apps: list[Any], where: Where) -> list[Any]:
    if len(where.displays) < 2 or not apps:
        # One screen: every application is on it, and nothing need be asked.
        return apps
    shown = WhereShown(where.displays, where.windows)
    return [a for a in apps if shown.on(_pid(a), where.display)]


def _pid(app: Any) -> int | None:
    try:
        return int(app.get_process_id())
    except Exception:  # GLib.Error (pyatspi's only): the bus knows no process of it
        return None


def split_path(path: str) -> tuple[str, list[int]]:
    """A path's application segment and child indices."""
    segment, *rest = path.split("/")
    try:
        indices = [int(part) for part in rest]
    except ValueError:
        raise BadRequest(f"{path!r} is not a widget path (app/index/index/…)") from None
    if not segment or any(i < 0 for i in indices):
        raise BadRequest(f"{path!r} is not a widget path (app/index/index/…)")
    return segment, indices


def app_name(segment: str) -> str:
    return unquote(segment.split("#", 1)[0])


def _at_path(path: str, where: Where) -> Any:
    segment, indices = split_path(path)
    app = next((acc for seg, acc in _apps(where, app_name(segment)) if seg == segment), None)
    acc = app
    for i in indices:
        acc = acc.getChildAtIndex(i) if acc is not None and i < acc.childCount else None
    if acc is None:
        raise NotFound(f"no widget at {path}: read the tree again")
    return acc


# Describing a widget


def _node(acc: Any, path: str, labels: Labels, children: list[r.Node] | None = None) -> r.Node:
    role = acc.getRoleName()
    name = acc.name or ""
    states = [s.value_nick for s in acc.getState().getStates()]
    return r.Node(
        role=role,
        name=name,
        path=path,
        label=None if name else (labels.of(acc, path, role) or None),
        value=_value(acc, "editable" in states),
        states=states,
        bounds=_bounds(acc),
        actions=_actions(acc),
        children=children or [],
    )


def _tree(acc: Any, path: str, depth: int, budget: list[int], labels: Labels) -> r.Node:
    """`acc` and its widgets `depth` levels down; `budget` counts down the nodes left,
    below zero once some were left out."""
    budget[0] -= 1
    children: list[r.Node] = []
    if depth > 0:
        for i in range(acc.childCount):
            if budget[0] <= 0:
                budget[0] = -1
                break
            child = acc.getChildAtIndex(i)
            if child is not None:
                children.append(_tree(child, f"{path}/{i}", depth - 1, budget, labels))
    return _node(acc, path, labels, children)


def _component(acc: Any) -> Any:
    try:
        return acc.queryComponent()
    except NotImplementedError:
        raise BadRequest(f"a {acc.getRoleName()} has no place on the screen") from None


def _bounds(acc: Any) -> Region | None:
    try:
        box = acc.queryComponent().getExtents(_pyatspi().DESKTOP_COORDS)
    except NotImplementedError:
        return None
    if box.width <= 0 or box.height <= 0:
        return None
    return Region(box.x, box.y, box.width, box.height)


def _actions(acc: Any) -> list[str]:
    try:
        action = acc.queryAction()
    except NotImplementedError:
        return []
    return [action.getName(i) for i in range(action.nActions)]


def _value(acc: Any, editable: bool) -> str | None:
    try:
        return _number(acc.queryValue().currentValue)
    except NotImplementedError:
        pass
    if not editable:
        return None
    try:
        return str(acc.queryText().getText(0, -1))
    except NotImplementedError:
        return None


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


class Labels:
    """The text that names a widget without a name: the widgets it is labelled by, else
    (for a field) the nearest label left of it on its row, else the nearest one above it,
    among its parent's children. Each parent's labels are read once per operation: a
    dialog of 200 fields would otherwise read its 400 children once for every field."""

    def __init__(self) -> None:
        self._by_parent: dict[str, list[tuple[str, Region]]] = {}

    def of(self, acc: Any, path: str, role: str) -> str:
        pyatspi = _pyatspi()
        for relation in acc.getRelationSet():
            if relation.getRelationType() == pyatspi.RELATION_LABELLED_BY:
                names = [relation.getTarget(i).name for i in range(relation.getNTargets())]
                if any(names):
                    return " ".join(n for n in names if n)
        parent_path = path.rpartition("/")[0]
        if role not in LABELLED_ROLES or not parent_path or acc.parent is None:
            return ""
        here = _bounds(acc)
        if here is None:
            return ""
        if parent_path not in self._by_parent:
            self._by_parent[parent_path] = _labels_among(acc.parent)
        return nearest_label(here, self._by_parent[parent_path])


def _labels_among(parent: Any) -> list[tuple[str, Region]]:
    labels: list[tuple[str, Region]] = []
    for i in range(parent.childCount):
        sibling = parent.getChildAtIndex(i)
        if sibling is not None and sibling.getRoleName() in LABEL_ROLES and sibling.name:
            where = _bounds(sibling)
            if where is not None:
                labels.append((sibling.name, where))
    return labels


def nearest_label(field: Region, labels: list[tuple[str, Region]]) -> str:
    """Of `labels`, the one a person reads as the field's: on its row and left of it
    (the nearest), else above it and over its columns (the nearest)."""
    middle = field.y + field.height / 2
    left = [
        (field.x - (b.x + b.width), name)
        for name, b in labels
        if b.y <= middle <= b.y + b.height and b.x + b.width <= field.x + LABEL_SLACK
    ]
    if left:
        return min(left)[1]
    above = [
        (field.y - (b.y + b.height), name)
        for name, b in labels
        if b.y + b.height <= field.y + LABEL_SLACK
        and b.x < field.x + field.width
        and field.x < b.x + b.width
    ]
    return min(above)[1] if above else ""


# Finding


class Hit(NamedTuple):
    rank: tuple[int, int, int]
    acc: Any
    path: str


def role_matches(wanted: str | None, role: str) -> bool:
    if wanted is None:
        return True
    key = wanted.casefold().replace("_", " ").replace("-", " ")
    return role in ROLE_ALIASES.get(key.replace(" ", ""), frozenset({key}))


def text_rank(query: str | None, text: str) -> int | None:
    """How well `text` answers `query`: 0 the same, 1 it starts so, 2 it holds it, None
    not at all (case aside)."""
    if query is None:
        return 0
    q, t = query.casefold().strip(), text.casefold().strip()
    if not t:
        return None
    if t == q:
        return 0
    if t.startswith(q):
        return 1
    return 2 if q in t else None


def _walk(acc: Any, path: str, seen: list[int]) -> Iterator[tuple[Any, str]]:
    """Every widget under `acc` (itself first), depth first, `MAX_WALK` at most."""
    stack = [(acc, path, 0)]
    while stack and seen[0] < MAX_WALK:
        node, at, depth = stack.pop()
        seen[0] += 1
        yield node, at
        if depth < a.MAX_NODE_DEPTH:
            count = node.childCount
            for i in reversed(range(count)):
                child = node.getChildAtIndex(i)
                if child is not None:
                    stack.append((child, f"{at}/{i}", depth + 1))


def _find(query: a.NodeQuery, labels: Labels, where: Where) -> list[Hit]:
    """The widgets `query` names, best first: by its path, or those of its role whose name
    (or label) holds its text, showing ones first, then in the tree's order."""
    if query.path is not None:
        return [Hit((0, 0, 0), _at_path(query.path, where), query.path)]
    if query.query is None and query.role is None:
        raise BadRequest("a node query needs `query`, `role` or `path`")
    hits: list[Hit] = []
    seen = [0]
    for segment, app in _apps(where, query.app):
        for acc, path in _walk(app, segment, seen):
            hit = _hit(acc, path, query, len(hits), labels)
            if hit is not None:
                hits.append(hit)
    return sorted(hits)


def _hit(acc: Any, path: str, query: a.NodeQuery, order: int, labels: Labels) -> Hit | None:
    role = acc.getRoleName()
    if not role_matches(query.role, role):
        return None
    text = acc.name or ""
    rank = text_rank(query.query, text)
    if rank is None and not text and query.query is not None:
        rank = text_rank(query.query, labels.of(acc, path, role))
    if rank is None:
        return None
    showing = acc.getState().contains(_pyatspi().STATE_SHOWING)
    return Hit((0 if showing else 1, rank, order), acc, path)


def _one(query: a.NodeQuery, labels: Labels, where: Where) -> tuple[Any, str]:
    hits = _find(query, labels, where)
    if not hits:
        raise NotFound(f"no widget matches {_said(query)}")
    return hits[0].acc, hits[0].path


def _said(query: a.NodeQuery) -> str:
    parts = [f"{k} {v!r}" for k, v in (("query", query.query), ("role", query.role)) if v]
    return " and ".join(parts) + (f" in {query.app!r}" if query.app else "")


# Acting


def _invoke(acc: Any, path: str, name: str | None) -> str:
    names = _actions(acc)
    if not names:
        raise BadRequest(f"the {acc.getRoleName()} at {path} has no action")
    index = 0 if name is None else _index_of(names, name)
    if index is None:
        raise BadRequest(f"the widget at {path} has no action {name!r} (it has {names})")
    if not acc.queryAction().doAction(index):
        raise Failed(f"the widget at {path} refused its action {names[index]!r}")
    return names[index]


def _index_of(names: list[str], name: str) -> int | None:
    folded = [n.casefold() for n in names]
    return folded.index(name.casefold()) if name.casefold() in folded else None


def _set(acc: Any, path: str, value: str) -> None:
    setters: list[tuple[str, Callable[[Any], bool]]] = [
        ("queryEditableText", lambda i: bool(i.setTextContents(value))),
        ("queryValue", lambda i: _set_number(i, value)),
    ]
    for query, set_it in setters:
        try:
            interface = getattr(acc, query)()
        except NotImplementedError:
            continue
        if not set_it(interface):
            raise Failed(f"the widget at {path} did not take the value")
        return
    if acc.getState().contains(_pyatspi().STATE_EDITABLE):
        if not _component(acc).grabFocus():
            raise Failed(f"the widget at {path} did not take the focus")
        raise TypeInstead(path)
    raise BadRequest(f"the {acc.getRoleName()} at {path} takes no value")


def _read_typed(path: str, value: str, where: Where) -> r.NodeDone:
    deadline = time.monotonic() + TYPED_SHOWS_S
    node = _node(_at_path(path, where), path, Labels())
    while node.value != value and time.monotonic() < deadline:
        time.sleep(0.05)
        node = _node(_at_path(path, where), path, Labels())
    return r.NodeDone(op="set", node=node)


def _set_number(value_interface: Any, value: str) -> bool:
    try:
        number = float(value)
    except ValueError:
        raise BadRequest(f"this widget takes a number, not {value!r}") from None
    value_interface.currentValue = number
    return True


__all__ = [
    "TypeInstead",
    "Where",
    "Widgets",
    "nearest_label",
    "role_matches",
    "run",
    "split_path",
    "text_rank",
]
