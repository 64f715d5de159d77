"""What the workspace tests share: holmd's real app served in this process (kits.app), and
two workspaces with a key and a box each."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kits.app import TOKEN, ServedApp, bearer, served_app

from holm.adapters.memory.runtime import MemoryWorld


@dataclass(frozen=True)
class Workspace:
    id: str
    name: str
    key: str
    key_id: str
    box: str


async def workspace_with_a_box(server: ServedApp, name: str) -> Workspace:
    """A workspace made with the server token, a key of it, and a box launched with it."""
    made = await server.ok("POST", "/v1/workspaces", json={"name": name})
    key = await server.ok("POST", "/v1/keys", json={"workspace": name})
    box = await server.ok("POST", "/v1/boxes", key["key"], json={})
    return Workspace(made["id"], name, key["key"], key["id"], box["id"])


def ids(listed: Mapping[str, Any]) -> set[str]:
    return {box["id"] for box in listed["boxes"]}


@contextlib.asynccontextmanager
async def two_workspaces(state_dir: Path) -> AsyncIterator[tuple[ServedApp, Workspace, Workspace]]:
    """holmd with the workspaces `alpha` and `beta`, each with a key and a box."""
    async with served_app(state_dir, MemoryWorld()) as server:
        alpha = await workspace_with_a_box(server, "alpha")
        yield server, alpha, await workspace_with_a_box(server, "beta")


__all__ = [
    "TOKEN",
    "ServedApp",
    "Workspace",
    "bearer",
    "ids",
    "served_app",
    "two_workspaces",
    "workspace_with_a_box",
]
