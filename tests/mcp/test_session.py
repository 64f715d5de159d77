"""A session of the SDK's client on a box of the in-memory runtime: every tool, and the
trace has exactly the entries the spec's recording table says (docs/mcp.md)."""

from __future__ import annotations

import asyncio
import base64
import io
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx2
import mcp_types as types
import pytest
from mcp import MCPError
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp_kit import ACCEPT, INIT, TOKEN, call, holmd, json_of, mcp_session
from PIL import Image

from holm.client import HolmClient
from holm.wire.entries import kind_of


async def kinds_of(url: str, box_id: str) -> list[tuple[str, Any]]:
    """The trace's entries (frames aside, which a watcher adds when it sees a change) as
    (kind, action type or None)."""
    async with HolmClient(url, TOKEN) as client:
        page = await client.trace(box_id)
    out: list[tuple[str, Any]] = []
    for entry in page.entries:
        raw: Any = entry
        kind = type(entry).__struct_config__.tag
        if kind == "frame":
            continue
        action = getattr(raw, "action", None)
        out.append((str(kind), None if action is None else type(action).__struct_config__.tag))
    return out


async def test_every_tool_records_as_the_spec_says(tmp_path: Path) -> None:
    async with holmd(tmp_path) as url, mcp_session(url) as s:
        box = json_of(await call(s, "launch_box"))
        b = box["id"]
        # Replayed input: one `acted` entry each.
        await call(s, "open_url", box=b, url="https://example.com")
        await call(s, "click", box=b, at={"x": 10, "y": 20})
        await call(s, "double_click", box=b, at={"x": 11, "y": 21})
        typed = json_of(await call(s, "type_text", box=b, text="hello"))
        assert typed == {"typed": 5}
        await call(s, "press_key", box=b, chord=["ctrl", "l"], then=["enter"])
        await call(s, "drag", box=b, **{"from": {"x": 1, "y": 1}, "to": {"x": 50, "y": 60}})
        await call(s, "scroll", box=b, at={"x": 5, "y": 5}, dy=3)
        await call(s, "move", box=b, to={"x": 7, "y": 8})
        await call(s, "wait_until_still", box=b, settle_ms=0, within_ms=100)
        await call(s, "open_app", box=b, app="xterm")
        done = json_of(
            await call(
                s,
                "batch",
                box=b,
                actions=[{"type": "click", "at": {"x": 3, "y": 4}}, {"type": "type", "text": "x"}],
            )
        )
        assert [step["ok"] for step in done["results"]] == [True, True]
        # Through Engine.act: executed, file_written, file_read, clipboard_set/read.
        ran = json_of(await call(s, "run_command", box=b, argv=["echo", "hi"]))
        assert (ran["code"], ran["stdout"]) == (0, "hi\n")
        contents = base64.b64encode(b"some text\n").decode()
        await call(s, "write_file", box=b, path="/tmp/a.txt", contents_base64=contents)
        read = json_of(await call(s, "read_file", box=b, path="/tmp/a.txt"))
        assert read == {"path": "/tmp/a.txt", "size": 10, "text": "some text\n"}
        await call(s, "clipboard", box=b, text="copied")
        got = json_of(await call(s, "clipboard", box=b))
        assert got["text"] == "copied"
        # Reads: not recorded.
        listed = json_of(await call(s, "list_files", box=b, path="/tmp"))
        assert "a.txt" in [e["name"] for e in listed["entries"]]
        await call(s, "grep", box=b, pattern="some", path="/tmp")
        windows = json_of(await call(s, "windows", box=b))
        assert "xterm" in [w["class"] for w in windows["windows"]]
        status = json_of(await call(s, "box_status", box=b))
        assert status["state"] == "ready"
        shot = await call(s, "screenshot", box=b)
        about = json_of(shot)
        image = shot.content[1]
        assert isinstance(image, types.ImageContent) and image.mime_type == "image/png"
        # The double's picture is a small stand-in; the real box's test checks its size.
        assert Image.open(io.BytesIO(base64.b64decode(image.data))).format == "PNG"
        assert (about["width"], about["height"]) == (box["width"], box["height"])
        again = await call(s, "screenshot", box=b, have=about["hash"])
        assert json_of(again)["unchanged"] is True and len(again.content) == 1
        lines = (await call(s, "trace", box=b)).content[0]
        assert isinstance(lines, types.TextContent)
        assert "open_url https://example.com" in lines.text

        assert await kinds_of(url, b) == [
            ("box_created", None),
            ("box_ready", None),
            ("acted", "open_url"),
            ("acted", "click"),
            ("acted", "double_click"),
            ("acted", "type"),
            ("acted", "press"),
            ("acted", "drag"),
            ("acted", "scroll"),
            ("acted", "move"),
            ("acted", "wait_still"),
            ("acted", "launch"),
            ("app_launched", None),
            ("acted", "click"),
            ("acted", "type"),
            ("executed", None),
            ("file_written", None),
            ("file_read", None),
            ("clipboard_set", None),
            ("clipboard_read", None),
        ]
        # Each entry is the agent's but `box_ready`, which the server records once the box
        # it started is up, as over REST.
        async with HolmClient(url, TOKEN) as client:
            entries = (await client.trace(b)).entries
        not_agents = [(kind_of(e), e.actor) for e in entries if e.actor != "agent"]
        assert not_agents == [("box_ready", "system")]

        forked = json_of(await call(s, "fork_box", box=b))
        assert forked["box"]["state"] == "ready"
        assert forked["replay"]["ok"] == forked["replay"]["attempted"] == 13
        assert [skip["kind"] for skip in forked["replay"]["skipped"]] == [
            "file_written",
            "clipboard_set",
        ]
        removed = json_of(await call(s, "remove_box", box=b))
        assert removed["state"] == "gone"
        # The trace stays after the box: no entry but box_deleted was added by reads.
        assert (await kinds_of(url, b))[-1] == ("box_deleted", None)


async def test_a_box_is_answered_as_the_rest_api_answers_it(tmp_path: Path) -> None:
    """A box's JSON is its REST call's: its viewer URLs are this server's viewer pages, not
    the runtime's sockets (for a real box, paths in the server's state dir)."""
    rest = httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"})
    async with holmd(tmp_path) as url, mcp_session(url) as s, rest:
        launched = json_of(await call(s, "launch_box"))
        b = launched["id"]
        over_rest = (await rest.get(f"{url}/v1/boxes/{b}")).json()
        assert over_rest["viewer_urls"] == [f"{url}/v1/boxes/{b}/screens/0/view"]
        assert launched == over_rest
        assert json_of(await call(s, "box_status", box=b)) == over_rest
        listed = json_of(await call(s, "list_boxes"))
        assert listed == (await rest.get(f"{url}/v1/boxes")).json()
        forked = json_of(await call(s, "fork_box", box=b))["box"]
        assert forked == (await rest.get(f"{url}/v1/boxes/{forked['id']}")).json()
        removed = json_of(await call(s, "remove_box", box=b))
        assert removed["viewer_urls"] == over_rest["viewer_urls"]


async def test_read_file_gives_text_or_the_rest_calls_base64(tmp_path: Path) -> None:
    """`read_file` is the one box tool whose JSON is not its REST call's: a UTF-8 file comes
    as `text`, which a model reads; other bytes as `contents_base64`, as over REST."""
    async with holmd(tmp_path) as url, mcp_session(url) as s:
        b = json_of(await call(s, "launch_box"))["id"]
        for path, data in (("/tmp/t.txt", "héllo\n".encode()), ("/tmp/b.bin", b"\xff\x00")):
            contents = base64.b64encode(data).decode()
            await call(s, "write_file", box=b, path=path, contents_base64=contents)
        text = json_of(await call(s, "read_file", box=b, path="/tmp/t.txt"))
        assert text == {"path": "/tmp/t.txt", "size": 7, "text": "héllo\n"}
        raw = json_of(await call(s, "read_file", box=b, path="/tmp/b.bin"))
        assert raw == {"path": "/tmp/b.bin", "size": 2, "contents_base64": "/wA="}


async def test_a_refusal_is_a_tool_error(tmp_path: Path) -> None:
    async with holmd(tmp_path) as url, mcp_session(url) as s:
        unknown = await s.call_tool("click", {"box": "box_nope", "at": {"x": 1, "y": 1}})
        assert unknown.is_error
        assert isinstance(unknown.content[0], types.TextContent)
        assert unknown.content[0].text.startswith("not_found:")
        b = json_of(await call(s, "launch_box"))["id"]
        bad = await s.call_tool("scroll", {"box": b, "dy": 1000})
        assert bad.is_error and "bad_request" in bad.content[0].text  # type: ignore[union-attr]
        spelled = await s.call_tool("type_text", {"box": b, "txt": "hi"})
        assert spelled.is_error and "txt" in spelled.content[0].text  # type: ignore[union-attr]
        # Nothing refused was recorded.
        assert await kinds_of(url, b) == [("box_created", None), ("box_ready", None)]


async def test_mcp_needs_the_token(tmp_path: Path) -> None:
    async with holmd(tmp_path) as url, httpx2.AsyncClient() as http:
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": TOKEN}):
            for method in ("POST", "GET", "DELETE"):
                answer = await http.request(
                    method,
                    f"{url}/mcp",
                    headers={**ACCEPT, **headers},
                    json=INIT if method == "POST" else None,
                )
                assert answer.status_code == 401, (method, headers, answer.text)
                metadata = f"{url}/.well-known/oauth-protected-resource"
                challenge = f'Bearer resource_metadata="{metadata}"'
                assert answer.headers["WWW-Authenticate"] == challenge
                refused = answer.json()
                assert refused["code"] == "denied"
                # And the JSON-RPC error an MCP client reads from an answer that is no 2xx.
                assert refused["jsonrpc"] == "2.0" and refused["id"] is None
                assert refused["error"]["message"].startswith("denied: a valid bearer token")
        good = {**ACCEPT, "Authorization": f"Bearer {TOKEN}"}
        answer = await http.post(f"{url}/mcp", headers=good, json=INIT)
        assert answer.status_code == 200, answer.text
        # The answer is one JSON body (no event stream: a tool sends nothing before its
        # result).
        assert answer.headers["content-type"].startswith("application/json")
        assert answer.json()["result"]["serverInfo"]["name"] == "holm"
        # A body that is not JSON is refused as on every route (a page may send text/plain).
        plain = {**good, "Content-Type": "text/plain"}
        answer = await http.post(f"{url}/mcp", headers=plain, content=b"{}")
        assert answer.status_code == 415
        # A page of another site is refused before the token is even looked at.
        answer = await http.post(
            f"{url}/mcp", headers={**good, "Origin": "https://evil.example"}, json=INIT
        )
        assert answer.status_code == 403


async def test_the_sdk_client_with_a_wrong_token_says_so(tmp_path: Path) -> None:
    """What the `mcp` SDK's client does on a 401, as `holm mcp-config` configures a client
    (a bearer header, no OAuth provider): it does not look at `WWW-Authenticate` at all; it
    reads the body as a JSON-RPC error and raises that, so the user reads holm's message,
    which names the token. (With an OAuth provider, the next test.)"""
    async with holmd(tmp_path) as url:
        # The SDK's task groups wrap it, once for each.
        with pytest.raises(BaseExceptionGroup) as refused:
            async with mcp_session(url, token="not-the-token"):
                pass
    (raised,) = _leaves(refused.value)
    assert isinstance(raised, MCPError), raised
    error = raised.error
    assert error.code == -32600
    assert error.message == "denied: a valid bearer token is needed (Authorization: Bearer …)"


class _NoTokens:
    """An OAuth client's storage that has nothing stored."""

    async def get_tokens(self) -> None:
        return None

    async def set_tokens(self, tokens: Any) -> None:
        raise AssertionError("holm issued no token")

    async def get_client_info(self) -> None:
        return None

    async def set_client_info(self, info: Any) -> None:
        raise AssertionError("holm registered no client")


async def test_an_oauth_client_learns_there_is_no_oauth(tmp_path: Path) -> None:
    """The SDK's client given an OAuth provider runs OAuth on the 401: it reads the metadata
    the header names (the SDK's parser refuses it, for it names no authorization server),
    falls back to the server root's OAuth endpoints, and fails at client registration,
    whose 404 says to give the token in the client's config: the error it raises."""
    from mcp.client.auth import OAuthClientProvider
    from mcp.client.auth.exceptions import OAuthRegistrationError
    from mcp.shared.auth import OAuthClientMetadata

    asked: list[str] = []

    async def seen(request: httpx2.Request) -> None:
        asked.append(f"{request.method} {request.url.path}")

    async with holmd(tmp_path) as url:
        metadata = OAuthClientMetadata(redirect_uris=["http://127.0.0.1:9/callback"])  # type: ignore[list-item]
        provider = OAuthClientProvider(f"{url}/mcp", metadata, _NoTokens())
        with pytest.raises(BaseExceptionGroup) as refused:
            async with (
                httpx2.AsyncClient(auth=provider, event_hooks={"request": [seen]}) as http,
                streamable_http_client(f"{url}/mcp", http_client=http) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
    (raised,) = _leaves(refused.value)
    assert isinstance(raised, OAuthRegistrationError), raised
    assert "holm issues no OAuth clients or tokens" in str(raised)
    assert "Authorization: Bearer" in str(raised)
    assert asked[:2] == ["POST /mcp", "GET /.well-known/oauth-protected-resource"]
    assert asked[-1] == "POST /register"


def _leaves(group: BaseException) -> list[BaseException]:
    if isinstance(group, BaseExceptionGroup):
        return [leaf for inner in group.exceptions for leaf in _leaves(inner)]
    return [group]


async def test_a_body_over_the_limit_is_refused(tmp_path: Path) -> None:
    """The bridge reads a body whole before the SDK sees it: one sent in chunks, with no
    length announced, is stopped at HOLM_MAX_BODY_BYTES as on every route."""
    async with holmd(tmp_path, max_body_bytes=4096) as url, httpx2.AsyncClient() as http:
        good = {**ACCEPT, "Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}

        async def chunks() -> AsyncIterator[bytes]:
            yield b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"pad": "'
            for _ in range(8):
                yield b"x" * 1024
            yield b'"}}'

        answer = await http.post(f"{url}/mcp", headers=good, content=chunks())
        assert answer.status_code == 413, answer.text
        assert answer.json()["code"] == "bad_request"
        # A body within the limit still opens a session.
        answer = await http.post(f"{url}/mcp", headers=good, json=INIT)
        assert answer.status_code == 200, answer.text


async def test_trace_pages_and_batch_shows_its_frame(tmp_path: Path) -> None:
    async with holmd(tmp_path) as url, mcp_session(url) as s:
        b = json_of(await call(s, "launch_box"))["id"]
        done = await call(
            s, "batch", box=b, actions=[{"type": "move", "to": {"x": 1, "y": 2}}], want=["frame"]
        )
        shown = json_of(done)
        assert "png_base64" not in shown["frame"] and shown["frame"]["hash"]
        assert isinstance(done.content[1], types.ImageContent)
        first = (await call(s, "trace", box=b, limit=1)).content[0]
        assert isinstance(first, types.TextContent)
        assert first.text.splitlines() == [
            first.text.splitlines()[0],
            "(more: call trace with after=0)",
        ]
        assert "created" in first.text.splitlines()[0]
        rest = (await call(s, "trace", box=b, after=0)).content[0]
        assert isinstance(rest, types.TextContent)
        assert "move" in rest.text and rest.text.splitlines()[-1].startswith("(end")
        # A page after the first goes on from there: its first line is the entry after
        # `after`, not a note that the trace was pruned before it.
        assert rest.text.splitlines()[0].split()[0] == "1", rest.text


async def test_a_picture_comes_in_the_format_asked(tmp_path: Path) -> None:
    """`format` (and a batch's `frame_format`) is the REST call's: the image block is the
    JPEG or WebP asked for, as an image, not a PNG whatever was asked, nor base64 text."""
    async with holmd(tmp_path) as url, mcp_session(url) as s:
        b = json_of(await call(s, "launch_box"))["id"]
        shot = await call(s, "screenshot", box=b, format="jpeg", quality=50)
        picture = shot.content[1]
        assert isinstance(picture, types.ImageContent) and picture.mime_type == "image/jpeg"
        assert Image.open(io.BytesIO(base64.b64decode(picture.data))).format == "JPEG"
        move = {"type": "move", "to": {"x": 1, "y": 2}}
        done = await call(s, "batch", box=b, actions=[move], want=["frame"], frame_format="webp")
        shown = json_of(done)["frame"]
        assert shown["format"] == "webp" and "image_base64" not in shown
        picture = done.content[1]
        assert isinstance(picture, types.ImageContent) and picture.mime_type == "image/webp"
        assert Image.open(io.BytesIO(base64.b64decode(picture.data))).format == "WEBP"


async def test_an_event_stream_answers_its_headers_at_once_and_ends_with_its_session(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A client waits for a GET's headers before it listens: they come when the SDK starts
    the stream, not with its first event (which may come a long while later). A client
    that closed its stream before the session ends is simply gone."""
    async with holmd(tmp_path) as url, httpx2.AsyncClient(timeout=5) as http:
        good = {**ACCEPT, "Authorization": f"Bearer {TOKEN}"}
        opened = await http.post(f"{url}/mcp", headers=good, json=INIT)
        session = {
            **good,
            "Mcp-Session-Id": opened.headers["Mcp-Session-Id"],
            "Mcp-Protocol-Version": opened.json()["result"]["protocolVersion"],
        }
        done = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert (await http.post(f"{url}/mcp", headers=session, json=done)).status_code == 202
        async with (
            httpx2.AsyncClient(timeout=5) as leaving,
            leaving.stream("GET", f"{url}/mcp", headers=session) as stream,
        ):
            assert stream.status_code == 200
            assert stream.headers["content-type"].startswith("text/event-stream")
        with caplog.at_level(logging.WARNING):
            assert (await http.delete(f"{url}/mcp", headers=session)).status_code == 200
            await asyncio.sleep(0.5)
    failed = [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]
    assert not failed, [r.getMessage() for r in failed]


async def test_fork_box_with_a_count_makes_that_many_boxes_up_to_a_seq(tmp_path: Path) -> None:
    async with holmd(tmp_path) as url, mcp_session(url) as s:
        b = json_of(await call(s, "launch_box"))["id"]
        json_of(await call(s, "run_command", box=b, argv=["echo", "one"]))
        async with HolmClient(url, TOKEN) as client:
            up_to = (await client.trace(b)).entries[-1].seq
        json_of(await call(s, "run_command", box=b, argv=["echo", "two"]))
        forked = json_of(await call(s, "fork_box", box=b, up_to=up_to, count=3))
        assert len({branch["box"]["id"] for branch in forked["branches"]}) == 3
        assert {branch["replay"]["attempted"] for branch in forked["branches"]} == {1}
        refused = await s.call_tool("fork_box", {"box": b, "count": 17})
        assert refused.is_error
