"""`holm mcp-config` prints what an MCP client needs, and that is enough to reach /mcp."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner
from mcp_kit import TOKEN, holmd, mcp_session

from holm.cli import main


def run(*args: str, env: dict[str, str]) -> dict[str, dict[str, dict[str, object]]]:
    result = CliRunner(env=env).invoke(main, ["mcp-config", *args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    parsed: dict[str, dict[str, dict[str, object]]] = json.loads(result.output)
    return parsed


async def test_the_snippet_reaches_mcp(tmp_path: Path) -> None:
    async with holmd(tmp_path) as url:
        server = run(env={"HOLM_SERVER_URL": url, "HOLM_SERVER_TOKEN": TOKEN})["mcpServers"]["holm"]
        assert server == {
            "type": "http",
            "url": f"{url}/mcp",
            "headers": {"Authorization": f"Bearer {TOKEN}"},
        }
        headers = server["headers"]
        assert isinstance(headers, dict)
        token = headers["Authorization"].removeprefix("Bearer ")
        async with mcp_session(str(server["url"]).removesuffix("/mcp"), token) as session:
            assert (await session.list_tools()).tools


def test_the_token_comes_from_where_the_client_finds_it(tmp_path: Path) -> None:
    (tmp_path / "token").write_text("from-the-file\n")
    env = {
        "HOLM_SERVER_URL": "http://127.0.0.1:9999",
        "HOLM_STATE_DIR": str(tmp_path),
        "HOLM_SERVER_TOKEN": "",
    }
    server = run("--name", "desk", env=env)["mcpServers"]["desk"]
    assert server["headers"] == {"Authorization": "Bearer from-the-file"}
    # A server off this machine is never sent the local token.
    remote = run("--url", "http://holm.example:8080", env=env)["mcpServers"]["holm"]
    assert remote == {"type": "http", "url": "http://holm.example:8080/mcp"}
