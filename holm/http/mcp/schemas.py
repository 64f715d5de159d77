"""A tool's input schema as a model reads it: msgspec's schema of the wire types, less
what costs a model tokens and tells it nothing.

- No `title`s: msgspec titles each struct with its name, which its `$defs` key already is.
- No variant a tool refuses: `batch` takes every action but cookies and browser states
  (`NOT_IN_BATCH`, which the engine refuses in a batch), so their variants leave its
  action union, and so do the `$defs` only they used.
- No `$defs` that nothing refers to.

What is left is still the wire types' own schema: every argument it admits decodes into
them (tests/mcp/test_schemas.py).
"""

from __future__ import annotations

from typing import Any

_REF = "#/$defs/"
# The keys whose value maps names to schemas, not a schema itself: a field may be called
# `title`.
_NAMED = ("properties", "$defs", "patternProperties")


def lean_schema(schema: dict[str, Any], refused: frozenset[str] = frozenset()) -> dict[str, Any]:
    """`schema` without titles, without the union variants whose `$defs` are `refused`, and
    without `$defs` nothing refers to."""
    out: dict[str, Any] = _without(schema, refused)
    defs: dict[str, Any] = out.get("$defs", {})
    used = _reached({k: v for k, v in out.items() if k != "$defs"}, defs)
    if defs:
        out["$defs"] = {name: body for name, body in defs.items() if name in used}
        if not out["$defs"]:
            del out["$defs"]
    return out


def _without(node: Any, refused: frozenset[str]) -> Any:
    """A schema node without titles and refused variants (its `$defs` kept whole but for
    the refused; `lean_schema` prunes them)."""
    if isinstance(node, list):
        return [_without(item, refused) for item in node if not _refers_to(item, refused)]
    if not isinstance(node, dict):
        return node
    kept: dict[str, Any] = {}
    for key, value in node.items():
        if key == "title" and isinstance(value, str):
            continue
        if key in _NAMED and isinstance(value, dict):
            kept[key] = {
                name: _without(body, refused)
                for name, body in value.items()
                if not (key == "$defs" and name in refused)
            }
        elif key == "discriminator" and isinstance(value, dict):
            mapping = value.get("mapping", {})
            kept[key] = {
                **value,
                "mapping": {
                    tag: ref
                    for tag, ref in mapping.items()
                    if ref.removeprefix(_REF) not in refused
                },
            }
        else:
            kept[key] = _without(value, refused)
    return kept


def _refers_to(node: Any, refused: frozenset[str]) -> bool:
    return isinstance(node, dict) and node.get("$ref", "").removeprefix(_REF) in refused


def _reached(root: Any, defs: dict[str, Any]) -> set[str]:
    """The `$defs` that `root` refers to, and those they refer to, and so on."""
    reached: set[str] = set()
    todo = [root]
    while todo:
        node = todo.pop()
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith(_REF):
                name = ref.removeprefix(_REF)
                if name not in reached and name in defs:
                    reached.add(name)
                    todo.append(defs[name])
            todo.extend(node.values())
        elif isinstance(node, list):
            todo.extend(node)
    return reached


__all__ = ["lean_schema"]
