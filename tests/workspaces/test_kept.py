"""Workspaces and keys are kept in the state dir: a restarted holmd on the same state dir
takes the same keys (and a key removed before stays refused), the boxes keep their owner
(it is in their traces), and the file holds each key's SHA-256, never the key, with mode
0600. `holm workspace` and `holm key` do it all from the command line."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import stat
import sys
from pathlib import Path

from workspaces_kit import TOKEN, ids, served_app, workspace_with_a_box

import holm
from holm.adapters.memory.runtime import MemoryWorld
from holm.http.workspaces import WORKSPACES_FILE

# The `holm` console script beside this Python, run on this tree's `holm` package.
HOLM = Path(sys.executable).with_name("holm")
TREE = Path(holm.__file__).parent.parent


async def test_keys_survive_a_restart_and_the_file_holds_no_key(tmp_path: Path) -> None:
    world = MemoryWorld()
    async with served_app(tmp_path, world) as server:
        a = await workspace_with_a_box(server, "alpha")
        b = await workspace_with_a_box(server, "beta")
        gone = await server.ok("POST", "/v1/keys", json={"workspace": "alpha"})
        await server.ok("DELETE", f"/v1/keys/{gone['id']}")

    path = tmp_path / WORKSPACES_FILE
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    raw = path.read_bytes()
    for key in (a.key, b.key, gone["key"]):
        secret = key.removeprefix("holm_sk_")
        assert secret.encode() not in raw and secret[:12].encode() not in raw
    kept = json.loads(raw)
    assert {k["sha256"] for k in kept["keys"]} == {
        hashlib.sha256(key.encode()).hexdigest() for key in (a.key, b.key)
    }

    async with served_app(tmp_path, world) as server:
        assert ids(await server.ok("GET", "/v1/boxes", a.key)) == {a.box}
        assert (await server.ok("GET", f"/v1/boxes/{a.box}", a.key))["owner"] == a.id
        status, refused = await server.call("GET", f"/v1/boxes/{a.box}", b.key)
        assert (status, refused["code"]) == (404, "not_found")
        status, _ = await server.call("GET", "/v1/boxes", gone["key"])
        assert status == 401
        names = await server.ok("GET", "/v1/workspaces")
        assert [(ws["id"], ws["name"]) for ws in names["workspaces"]] == [
            (a.id, "alpha"),
            (b.id, "beta"),
        ]


async def test_boxes_a_server_takes_back_without_their_traces_keep_their_owner(
    tmp_path: Path,
) -> None:
    # With the memory store a restarted server knows its boxes only from their runtime
    # ("A box that it takes back after a restart starts a new trace, marked adopted"), and
    # "owner is the workspace that launched the box" still.
    world = MemoryWorld()
    async with served_app(tmp_path, world, storage_backend="memory") as server:
        a = await workspace_with_a_box(server, "alpha")
        launched = await server.ok("POST", "/v1/boxes", json={})
    async with served_app(tmp_path, world, storage_backend="memory") as server:
        assert ids(await server.ok("GET", "/v1/boxes", a.key)) == {a.box}
        got = await server.ok("GET", f"/v1/boxes/{a.box}", a.key)
        assert (got["owner"], got["adopted"]) == (a.id, True)
        theirs = await server.ok("GET", f"/v1/boxes/{launched['id']}")
        assert "owner" not in theirs


async def test_a_key_file_others_could_read_is_made_private_at_start(tmp_path: Path) -> None:
    world = MemoryWorld()
    async with served_app(tmp_path, world) as server:
        a = await workspace_with_a_box(server, "alpha")
    os.chmod(tmp_path / WORKSPACES_FILE, 0o644)
    async with served_app(tmp_path, world) as server:
        assert ids(await server.ok("GET", "/v1/boxes", a.key)) == {a.box}
    assert stat.S_IMODE((tmp_path / WORKSPACES_FILE).stat().st_mode) == 0o600


async def holm_cli(url: str, *args: str, token: str = TOKEN) -> tuple[int, str, str]:
    """`holm ARGS…` as a real process (this test's server runs in this event loop)."""
    env = {
        "PATH": "/usr/bin:/bin",
        "PYTHONPATH": str(TREE),
        "HOLM_SERVER_URL": url,
        "HOLM_SERVER_TOKEN": token,
    }
    process = await asyncio.create_subprocess_exec(
        str(HOLM), *args, env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    out, err = await process.communicate()
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


async def test_the_cli_makes_lists_and_removes_workspaces_and_keys(tmp_path: Path) -> None:
    async with served_app(tmp_path, MemoryWorld()) as server:
        code, out, _ = await holm_cli(server.url, "workspace", "create", "alpha")
        assert code == 0 and out.startswith("ws_")
        workspace = out.strip()
        code, out, err = await holm_cli(server.url, "key", "create", "--workspace", "alpha")
        assert code == 0 and out.startswith("holm_sk_") and "not shown again" in err
        key = out.strip()
        key_id = err.split(":", 1)[0]
        # The key is a workspace's: `holm` with it launches that workspace's boxes.
        code, out, _ = await holm_cli(server.url, "new", token=key)
        assert code == 0
        box = out.strip()
        assert (await server.ok("GET", f"/v1/boxes/{box}"))["owner"] == workspace
        # …and cannot make keys.
        code, _, err = await holm_cli(server.url, "key", "ls", token=key)
        assert code == 7 and "denied" in err
        code, out, _ = await holm_cli(server.url, "key", "ls", "--workspace", "alpha", "--json")
        listed = json.loads(out)
        assert code == 0 and [(k["id"], k["workspace"]) for k in listed] == [(key_id, workspace)]
        assert key not in out
        code, out, _ = await holm_cli(server.url, "workspace", "ls")
        assert code == 0 and workspace in out and "alpha" in out
        code, out, _ = await holm_cli(server.url, "key", "rm", key_id)
        assert (code, out.strip()) == (0, key_id)
        code, _, err = await holm_cli(server.url, "ls", token=key)
        assert code == 7 and "bearer token" in err
