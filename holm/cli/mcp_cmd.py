"""`holm mcp-config`: the snippet an MCP client (Claude Code, Cursor, an agent framework)
needs to reach holmd's `/mcp`: its URL and the bearer header, with the token found where
every `holm` command finds it (`holm.client.server_token`)."""

from __future__ import annotations

import json

import click

from holm.client import server_token, server_url

from .remote import TOKEN_HELP


def mcp_config(url: str, token: str | None, name: str = "holm") -> dict[str, object]:
    """The `mcpServers` entry for holmd at `url`: Streamable HTTP, with the token if any."""
    server: dict[str, object] = {"type": "http", "url": url.rstrip("/") + "/mcp"}
    if token:
        server["headers"] = {"Authorization": f"Bearer {token}"}
    return {"mcpServers": {name: server}}


@click.command("mcp-config")
@click.option(
    "--url",
    help="holmd's address. Default: $HOLM_SERVER_URL, else $HOLM_SERVER_ADDR, else 127.0.0.1:8080.",
)
@click.option("--token", help=TOKEN_HELP)
@click.option("--name", default="holm", show_default=True, help="The server's name in the snippet.")
def mcp_config_command(url: str | None, token: str | None, name: str) -> None:
    """Print the MCP client configuration for this server's /mcp (URL and bearer header).

    The output holds the token: keep it where you keep secrets."""
    base = url or server_url()
    chosen = token if token is not None else server_token(url=base)
    click.echo(json.dumps(mcp_config(base, chosen, name), indent=2))


COMMANDS: tuple[click.Command, ...] = (mcp_config_command,)
