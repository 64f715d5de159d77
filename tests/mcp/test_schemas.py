"""The tools' input schemas as a model reads them (holm/http/mcp/schemas.py): msgspec's
schemas of the wire types, less titles, refused variants and `$defs` nothing uses, made
compact (test_tool_list.py). What a schema admits, the tool decodes; a refused step, the
batch schema does not admit."""

from __future__ import annotations

from typing import Any

import pytest
from jsonschema import Draft202012Validator
from jsonschema.validators import validator_for

from holm.errors import BadRequest
from holm.http.mcp.schemas import lean_schema
from holm.http.mcp.tools import BY_NAME, TOOLS

BATCH_STEPS: list[dict[str, Any]] = [
    {"type": "click", "at": {"x": 50, "y": 60}},
    {"type": "type", "text": "hi"},
    {"type": "press", "chord": ["enter"]},
    {"type": "open_url", "url": "https://example.com"},
    {"type": "exec", "what": {"argv": ["ls", "-l"]}},
    {"type": "on_page", "what": {"op": "fill", "query": "Name", "text": "Ada"}},
    {"type": "await_window", "what": {"title": "Editor"}},
]
REFUSED_STEPS: list[dict[str, Any]] = [
    {"type": "cookies", "what": {"op": "get"}},
    {"type": "state_save"},
    {"type": "state_load", "what": {"name": "signed-in"}},
]


def refs(node: Any) -> set[str]:
    if isinstance(node, dict):
        found = {node["$ref"]} if isinstance(node.get("$ref"), str) else set()
        return found.union(*(refs(value) for value in node.values()))
    if isinstance(node, list):
        return set().union(*(refs(item) for item in node))
    return set()


def titles(node: Any, named: bool = False) -> int:
    """How many `title` keys are schema keywords (not property names)."""
    if isinstance(node, list):
        return sum(titles(item) for item in node)
    if not isinstance(node, dict):
        return 0
    own = 0 if named else int(isinstance(node.get("title"), str))
    return own + sum(
        titles(value, named=key in ("properties", "$defs")) for key, value in node.items()
    )


@pytest.mark.parametrize("tool", TOOLS, ids=lambda tool: tool.name)
def test_each_schema_is_whole_and_lean(tool: Any) -> None:
    schema = tool.input_schema()
    validator_for(schema).check_schema(schema)
    defs = schema.get("$defs", {})
    used = refs({key: value for key, value in schema.items() if key != "$defs"}) | refs(defs)
    assert used <= {f"#/$defs/{name}" for name in defs}, "a $ref with no $defs entry"
    assert {f"#/$defs/{name}" for name in defs} <= used, "a $defs entry nothing refers to"
    assert titles(schema) == 0


def test_a_batch_schema_admits_what_a_batch_takes_and_no_refused_step() -> None:
    tool = BY_NAME["batch"]
    validator = Draft202012Validator(tool.input_schema())
    for step in BATCH_STEPS:
        arguments = {"box": "box_1", "actions": [step]}
        assert validator.is_valid(arguments), step
        assert tool.decode(arguments).value.actions
    for step in REFUSED_STEPS:
        arguments = {"box": "box_1", "actions": [step]}
        assert not validator.is_valid(arguments), step
    # A step's misspelled field is the tool's to refuse (test_tool_list.py): the schema
    # closes only the tool's own arguments.
    with pytest.raises(BadRequest, match="titel"):
        tool.decode({"box": "box_1", "actions": [{"type": "await_window", "what": {"titel": "x"}}]})


def test_lean_keeps_what_is_still_used() -> None:
    schema = {
        "title": "Root",
        "type": "object",
        "properties": {
            "title": {"type": "string", "title": "Title"},
            "step": {
                "anyOf": [{"$ref": "#/$defs/A"}, {"$ref": "#/$defs/B"}],
                "discriminator": {
                    "propertyName": "type",
                    "mapping": {"a": "#/$defs/A", "b": "#/$defs/B"},
                },
            },
        },
        "$defs": {
            "A": {"title": "A", "type": "object", "properties": {"c": {"$ref": "#/$defs/C"}}},
            "B": {"title": "B", "type": "object", "properties": {"d": {"$ref": "#/$defs/D"}}},
            "C": {"type": "integer"},
            "D": {"type": "integer"},
            "E": {"type": "integer"},
        },
    }
    assert lean_schema(schema, frozenset({"B"})) == {
        "type": "object",
        "properties": {
            "title": {"type": "string"},
            "step": {
                "anyOf": [{"$ref": "#/$defs/A"}],
                "discriminator": {"propertyName": "type", "mapping": {"a": "#/$defs/A"}},
            },
        },
        "$defs": {
            "A": {"type": "object", "properties": {"c": {"$ref": "#/$defs/C"}}},
            "C": {"type": "integer"},
        },
    }
