"""The tool list a model reads on every request (holm/http/mcp/schemas.py): at most 20,000
bytes, every tool in it, each tool's schema whole, and each one still called as its schema
says through the `mcp` SDK's own client. `batch` names the tool of a step that is another
tool's arguments instead of repeating them: such a step, given that tool's arguments,
is one a batch takes."""

from __future__ import annotations

import json
import re
from pathlib import Path

import httpx2
import msgspec
import pytest
from jsonschema import Draft202012Validator
from mcp_kit import ACCEPT, EXAMPLES, INIT, TOKEN, holmd, json_of, mcp_session

from holm.errors import BadRequest
from holm.http.mcp.tools import BY_NAME, TOOLS
from holm.wire import actions as a

MOST_BYTES = 20_000


async def test_the_list_is_at_most_20000_bytes_and_has_every_tool(tmp_path: Path) -> None:
    async with holmd(tmp_path) as url, httpx2.AsyncClient() as http:
        headers = {**ACCEPT, "Authorization": f"Bearer {TOKEN}"}
        opened = await http.post(f"{url}/mcp", headers=headers, json=INIT)
        headers["mcp-session-id"] = opened.headers["mcp-session-id"]
        headers["mcp-protocol-version"] = INIT["params"]["protocolVersion"]
        listed = await http.post(
            f"{url}/mcp", headers=headers, json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
        )
    assert listed.status_code == 200, listed.text
    size = len(listed.content)
    print(f"tools/list: {size} bytes for {len(TOOLS)} tools")
    assert size <= MOST_BYTES
    # The body is compact JSON already: nothing a client could strip.
    body = listed.json()
    assert len(json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()) <= size
    assert [tool["name"] for tool in body["result"]["tools"]] == [tool.name for tool in TOOLS]


async def test_each_tool_as_the_sdk_lists_it_takes_its_example(tmp_path: Path) -> None:
    """Through the SDK's client: each listed schema is a valid JSON Schema, admits the
    tool's example and says what a model must give; then each example is called, on a box
    of the in-memory runtime, and answers without an error."""
    assert set(EXAMPLES) == set(BY_NAME)
    async with holmd(tmp_path) as url, mcp_session(url) as s:
        listed = {tool.name: tool for tool in (await s.list_tools()).tools}
        assert set(listed) == set(EXAMPLES)
        box = json_of(await s.call_tool("launch_box", {}))["id"]
        for name, example in EXAMPLES.items():
            schema = listed[name].input_schema
            Draft202012Validator.check_schema(schema)
            where = {"box": box} if "box" in schema["properties"] else {}
            arguments = {**where, **example}
            errors = [e.message for e in Draft202012Validator(schema).iter_errors(arguments)]
            assert not errors, (name, errors)
            # A required argument left out is refused by the schema as by the tool.
            for required in schema.get("required", []):
                less = {k: v for k, v in arguments.items() if k != required}
                assert not Draft202012Validator(schema).is_valid(less), (name, required)
            answer = await s.call_tool(name, arguments)
            assert not answer.is_error, (name, answer.content)


def _by_reference() -> dict[str, str]:
    """The batch steps the batch schema names a tool for: `type` tag → the tool's words."""
    schema = BY_NAME["batch"].input_schema()
    variants = schema["properties"]["actions"]["items"]["anyOf"]
    (folded,) = [v for v in variants if "the arguments of the tool" in v.get("description", "")]
    told = folded["description"].split(": ", 1)[1].split("; ")
    out: dict[str, str] = {}
    for part in told:
        tag, _, tool = part.partition(": ")
        out[tag] = tool or f"{tag}'s"
    assert list(out) == folded["properties"]["type"]["enum"]
    return out


@pytest.mark.parametrize("tag", sorted(_by_reference()))
def test_a_step_by_reference_takes_its_tools_arguments(tag: str) -> None:
    """`"type": "exec"` with `what: run_command's` means: the arguments the run_command
    tool's schema admits, less `box`, are this step's `what`; the batch decodes them."""
    told = _by_reference()[tag]
    inside = re.fullmatch(r"what: (.*)", told)
    tools = re.findall(r"(\w+)'s(?: \((\w+): (\w+)\))?", inside.group(1) if inside else told)
    assert tools, told
    for tool_name, field, value in tools:
        tool = BY_NAME[tool_name]
        example = EXAMPLES[tool_name]
        assert Draft202012Validator(tool.input_schema()).is_valid({"box": "b", **example})
        fields = {**example, field: value} if field else dict(example)
        step = {"type": tag, "what": fields} if inside else {"type": tag, **fields}
        decoded = BY_NAME["batch"].decode({"box": "b", "actions": [step]})
        (action,) = decoded.value.actions
        assert a.type_of(action) == tag


def test_the_batch_schema_names_every_step_a_batch_takes() -> None:
    schema = BY_NAME["batch"].input_schema()
    variants = schema["properties"]["actions"]["items"]["anyOf"]
    named: list[str] = []
    for variant in variants:
        tag = variant["properties"]["type"]
        named += tag["enum"] if "enum" in tag else [tag["const"]]
    taken = [
        kind.__struct_config__.tag
        for kind in a.Action.__args__
        if not issubclass(kind, a.NOT_IN_BATCH)
    ]
    assert sorted(named) == sorted(taken)
    validator = Draft202012Validator(schema)
    for refused in ({"type": "cookies", "what": {"op": "get"}}, {"type": "state_save"}):
        assert not validator.is_valid({"box": "b", "actions": [refused]})


def test_a_field_the_schema_leaves_open_is_still_refused_by_its_tool() -> None:
    """Only a tool's own arguments say `additionalProperties: false`; a misspelled field
    deeper in is refused by the tool, with its name."""
    for tool, arguments in (
        ("batch", {"box": "b", "actions": [{"type": "key_up", "kye": "a"}]}),
        ("click", {"box": "b", "at": {"x": 1, "y": 2, "z": 3}}),
        ("batch", {"box": "b", "actions": [{"type": "exec", "what": {"arg": ["ls"]}}]}),
    ):
        with pytest.raises(BadRequest, match=r"kye|`z`|arg"):
            BY_NAME[tool].decode(arguments)
    assert not Draft202012Validator(BY_NAME["click"].input_schema()).is_valid(
        {"box": "b", "a": {"x": 1, "y": 2}}
    )
    with pytest.raises(msgspec.ValidationError):
        msgspec.convert({"type": "key_up", "kye": "a"}, a.Action)
