"""A tool's input schema as a model reads it: msgspec's schema of the wire types, less
what costs a model tokens and tells it nothing.

- No `title`s: msgspec titles each struct with its name, which its `$defs` key already is.
- No variant a tool refuses: `batch` takes every action but cookies and browser states
  (`NOT_IN_BATCH`, which the engine refuses in a batch), so their variants leave its
  action union, and so do the `$defs` only they used.
- No `$defs` that nothing refers to.

`compact_schema` then writes the same in fewer bytes (every tool's list is in each request
a model's client makes: docs/mcp.md, "Size"), and in `batch` names the steps that other
tools already describe rather than repeat them.

What is left is still the wire types' own schema, generated: every argument it admits
decodes into them, and a step it names decodes with the arguments of the tool it names
(tests/mcp/test_schemas.py, tests/mcp/test_tool_list.py).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

_REF = "#/$defs/"
# The keys whose value maps names to schemas, not a schema itself: a field may be called
# `title`.
_NAMED = ("properties", "$defs", "patternProperties")


def lean_schema(schema: dict[str, Any], refused: frozenset[str] = frozenset()) -> dict[str, Any]:
    """`schema` without titles, without the union variants whose `$defs` are `refused`, and
    without `$defs` nothing refers to."""
    out: dict[str, Any] = _without(schema, refused)
    return _pruned(out)


def _pruned(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` without the `$defs` nothing refers to."""
    out = dict(schema)
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


_NOTHING = object()
# A subschema written out this many times or more, and at least this long, is written once
# in `$defs` and referred to.
_SHARED_TIMES = 2
_SHARED_BYTES = 40


def compact_schema(
    schema: dict[str, Any],
    referred: Mapping[str, str] | None = None,
    most: int | None = None,
) -> dict[str, Any]:
    """`schema` in fewer bytes and the same sense to a model:

    - a one-value `enum` as `const`; no `discriminator` (each variant's `const` tag tells
      them apart); no empty `required`;
    - an optional field without its `null` variant (absent is null), and no default that
      an absent field implies anyway (false, 0, an empty list or object, null);
    - `additionalProperties: false` on the top object only (`_closed_at_the_top`), and no
      struct docstrings;
    - with `referred` (the `$defs` names of structs that are other tools' arguments), the
      variants of a union that are those tools' arguments named with the tool, and with
      `most` the variants larger than that named too (`_referred`);
    - a `$defs` entry used once written where it is used, and a subschema written out
      more than once written once, in `$defs`.
    """
    out: dict[str, Any] = _closed_at_the_top(_compacted(schema))
    if referred:
        out = _referred(out, referred, most)
    return _shared(_inlined(_pruned(out)))


def _compacted(node: Any) -> Any:
    if isinstance(node, list):
        return [_compacted(item) for item in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in _NAMED and isinstance(value, dict):
            out[key] = {name: _compacted(body) for name, body in value.items()}
        elif key != "discriminator":
            out[key] = _compacted(value)
    variants = out.get("anyOf")
    if isinstance(variants, list) and out.get("default", _NOTHING) is None:
        kept = [v for v in variants if v != {"type": "null"}]
        if len(kept) < len(variants):
            del out["default"], out["anyOf"]
            out = {**kept[0], **out} if len(kept) == 1 else {**out, "anyOf": kept}
    enum = out.get("enum")
    if isinstance(enum, list) and len(enum) == 1:
        del out["enum"]
        out["const"] = enum[0]
    if _implied(out.get("default", _NOTHING)):
        del out["default"]
    if out.get("required") == []:
        del out["required"]
    if out.get("type") == "object":
        # A struct's docstring, written for the code's readers; the tool says what it does.
        out.pop("description", None)
    return out


def _closed_at_the_top(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` with `additionalProperties: false` on its top object only: the tool
    refuses an unknown field at any depth itself (`unknown field …`), so saying it for
    each nested object tells a model nothing more."""

    def opened(node: Any) -> Any:
        if isinstance(node, list):
            return [opened(item) for item in node]
        if not isinstance(node, dict):
            return node
        return {
            key: opened(value)
            for key, value in node.items()
            if not (key == "additionalProperties" and value is False)
        }

    top = schema.get("additionalProperties")
    out = {key: opened(value) for key, value in schema.items()}
    if top is False:
        out["additionalProperties"] = False
    return out


def _implied(default: Any) -> bool:
    """A default a model assumes of an absent field: no flag, no count, no list, no value."""
    return default is False or default == 0 or default is None or default in ([], {})


def _referred(
    schema: dict[str, Any], referred: Mapping[str, str], most: int | None
) -> dict[str, Any]:
    """`schema` with the variants of each union folded, but for the small ones:

    - a variant that is a tool's own arguments (a `$defs` entry `referred` names), or
      that has them as its `what` (`exec`'s `what` is `run_command`'s; `on_page`'s may be
      `click_element`'s), is its tag in one variant with the others, which names the tool
      of each: the tool's schema has the fields;
    - with `most`, any other variant whose fields take more than `most` bytes (its own
      unions folded first, with the `$defs` only it uses) is its tag in another variant,
      which says where its fields are told.
    """
    defs: dict[str, Any] = dict(schema.get("$defs", {}))
    uses = _refs(schema, {})
    alone = {name: body for name, body in defs.items() if uses.get(name) == 1}

    def name_of(node: Any) -> str:
        ref = node.get("$ref", "") if isinstance(node, dict) else ""
        return ref.removeprefix(_REF) if isinstance(ref, str) else ""

    def body(node: Any) -> dict[str, Any]:
        found = defs.get(name_of(node), node)
        return found if isinstance(found, dict) else {}

    def tool_of(node: Any) -> str | None:
        """The tool whose arguments `node` is, or has as its `what`."""
        if name_of(node) in referred:
            return f"{referred[name_of(node)]}'s"
        what = body(node).get("properties", {}).get("what")
        if what is None:
            return None
        inner = tool_of(what)
        if inner is None:
            tools = [
                f"{referred[name_of(v)]}'s ({tag[0]}: {tag[1]})"
                for v in body(what).get("anyOf", [])
                if name_of(v) in referred and (tag := _tag(body(v))) is not None
            ]
            inner = ", ".join(tools) if tools else None
        return None if inner is None else f"what: {inner}"

    def fold(node: Any) -> Any:
        if isinstance(node, list):
            return [fold(item) for item in node]
        if not isinstance(node, dict):
            return node
        out = {key: fold(value) for key, value in node.items()}
        variants = out.get("anyOf")
        if not isinstance(variants, list):
            return out
        kept: list[Any] = []
        by_tool: dict[Any, str] = {}
        named: list[Any] = []
        field = None
        for variant in variants:
            tag = _tag(body(variant))
            if tag is None or field not in (None, tag[0]):
                kept.append(variant)
                continue
            tool = tool_of(variant)
            if tool is not None:
                by_tool[tag[1]] = tool
            elif most is not None and len(_key(_resolved(fold(body(variant)), alone))) > most:
                named.append(tag[1])
            else:
                kept.append(variant)
                continue
            field = tag[0]
        folded = []
        if by_tool:
            told = "; ".join(
                tag if tool == f"{tag}'s" else f"{tag}: {tool}" for tag, tool in by_tool.items()
            )
            folded.append(_tags(field, list(by_tool), f"the arguments of the tool: {told}"))
        if named:
            folded.append(_tags(field, named, "fields as in holm's REST API (docs/api.md)"))
        if folded:
            out["anyOf"] = [*folded, *kept]
        return out

    out: dict[str, Any] = fold(schema)
    if "$defs" in out:
        out["$defs"] = {name: fold(value) for name, value in out["$defs"].items()}
    return out


def _tags(field: Any, tags: list[Any], description: str) -> dict[str, Any]:
    return {
        "description": description,
        "type": "object",
        "properties": {field: {"enum": tags}},
        "required": [field],
    }


def _resolved(node: Any, defs: Mapping[str, Any], depth: int = 4) -> Any:
    """`node` with its `$ref`s to `defs` written out, `depth` levels down."""
    if isinstance(node, list):
        return [_resolved(item, defs, depth) for item in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref", "")
    if depth > 0 and isinstance(ref, str) and ref.removeprefix(_REF) in defs:
        return _resolved(defs[ref.removeprefix(_REF)], defs, depth - 1)
    return {key: _resolved(value, defs, depth) for key, value in node.items()}


def _tag(body: dict[str, Any]) -> tuple[str, Any] | None:
    """The field and value that pick this variant of a union, if it has one."""
    for field, value in body.get("properties", {}).items():
        if "const" in value and field in body.get("required", ()):
            return field, value["const"]
    return None


def _refs(node: Any, found: dict[str, int]) -> dict[str, int]:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith(_REF):
            found[ref.removeprefix(_REF)] = found.get(ref.removeprefix(_REF), 0) + 1
        for value in node.values():
            _refs(value, found)
    elif isinstance(node, list):
        for item in node:
            _refs(item, found)
    return found


def _inlined(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` with each `$defs` entry that one `$ref` uses written in its place (unless
    it refers to itself)."""
    defs: dict[str, Any] = dict(schema.get("$defs", {}))
    while True:
        counts = _refs(schema, {})
        once = [
            name
            for name, times in counts.items()
            if times == 1 and name in defs and name not in _refs(defs[name], {})
        ]
        if not once:
            return schema
        name = once[0]
        body = defs.pop(name)
        schema = _put(schema, name, body)
        defs = {key: _put(value, name, body) for key, value in defs.items()}
        schema = {**schema, "$defs": defs} if defs else _without_defs(schema)


def _without_defs(schema: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in schema.items() if key != "$defs"}


def _put(node: Any, name: str, body: Any) -> Any:
    """`node` with the `$ref` to `name` replaced by `body` (a `$ref` beside other keywords
    keeps them)."""
    if isinstance(node, list):
        return [_put(item, name, body) for item in node]
    if not isinstance(node, dict):
        return node
    if node.get("$ref") == _REF + name:
        rest = {key: value for key, value in node.items() if key != "$ref"}
        return {**body, **rest}
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "$defs":
            out[key] = value  # the caller puts it into each entry
        elif key in _NAMED and isinstance(value, dict):
            out[key] = {sub: _put(schema, name, body) for sub, schema in value.items()}
        else:
            out[key] = _put(value, name, body)
    return out


def _shared(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` with each subschema it writes out `_SHARED_TIMES` or more (a field's, an
    item's, a variant's), and that is `_SHARED_BYTES` or longer, in `$defs`, named after
    the field it was first found under."""
    defs: dict[str, Any] = dict(schema.get("$defs", {}))
    counts: dict[str, int] = {}
    names: dict[str, str] = {}
    bodies: dict[str, Any] = {}

    def count(node: Any, name: str, top: bool) -> None:
        if isinstance(node, list):
            for item in node:
                count(item, name, False)
            return
        if not isinstance(node, dict):
            return
        if not top and "$ref" not in node:
            key = _key(node)
            if len(key) >= _SHARED_BYTES:
                counts[key] = counts.get(key, 0) + 1
                names.setdefault(key, name)
                bodies[key] = node
        for field, value in node.items():
            if field in _NAMED and isinstance(value, dict):
                for sub, body in value.items():
                    count(body, sub if field == "properties" else name, field == "$defs")
            else:
                count(value, name, False)

    count(schema, "value", True)
    shared: dict[str, str] = {}
    # The longest first: a shorter one inside it is then counted once, in `$defs`.
    for key, times in sorted(counts.items(), key=lambda kv: -len(kv[0])):
        if times < _SHARED_TIMES:
            continue
        name = "".join(part.capitalize() for part in names[key].split("_"))
        while name in defs:
            name += "_"
        defs[name] = bodies[key]
        shared[key] = name
    if not shared:
        return schema

    def refer(node: Any, top: bool) -> Any:
        if isinstance(node, list):
            return [refer(item, False) for item in node]
        if not isinstance(node, dict):
            return node
        name = None if top else shared.get(_key(node))
        if name is not None:
            return {"$ref": _REF + name}
        return {
            field: (
                {sub: refer(body, field == "$defs") for sub, body in value.items()}
                if field in _NAMED and isinstance(value, dict)
                else refer(value, False)
            )
            for field, value in node.items()
        }

    return _pruned(refer({**schema, "$defs": defs}, True))


def _key(node: Any) -> str:
    return json.dumps(node, sort_keys=True, separators=(",", ":"))


__all__ = ["compact_schema", "lean_schema"]
