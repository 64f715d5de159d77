"""The vendor API (rest-api.md, "Runtimes and images"): a front holmd adds another holmd as
a runtime of provider `holm`, shows it with its `can`, changes and removes it, keeps it
across a restart, and refuses what it cannot do with the documented error body."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from http_kit import engine_of, error_of, ok_json
from vendor_kit import BACK_TOKEN, back_server, front_server, holm_vendor

from holm.secrets_box import new_key
from holm.wire.entries import SERVER_TRACE, kind_of


async def test_a_holmd_added_as_a_runtime_is_shown_with_its_can_and_no_secret(
    tmp_path: Path,
) -> None:
    async with back_server(tmp_path / "back") as (_, url), front_server(tmp_path / "f") as front:
        added = await ok_json(await front.post("/v1/runtimes", json=holm_vendor("far", url)))
        assert added["provider"] == "holm" and added["fields"] == {"url": url}
        assert added["secrets"] == ["api_key"] and BACK_TOKEN not in str(added)
        # Its `can` is the other server's default runtime's (the memory double: no viewer).
        assert added["can"]["viewer"] is False and added["can"]["profile"] is True
        listed = await ok_json(await front.get("/v1/runtimes"))
        assert [r["name"] for r in listed["runtimes"]] == ["far", "memory"]
        one = await ok_json(await front.get("/v1/runtimes/far"))
        assert one == added
        again = await front.post("/v1/runtimes", json=holm_vendor("far", url))
        assert "already" in await error_of(again, 409, "denied")
        own = await front.post("/v1/runtimes", json=holm_vendor("memory", url))
        await error_of(own, 409, "denied")


async def test_what_cannot_be_a_runtime_is_refused_with_the_reason(tmp_path: Path) -> None:
    async with front_server(tmp_path / "f") as front:
        e2b = {"name": "cloud", "provider": "e2b", "secrets": {"api_key": "k"}}
        message = await error_of(await front.post("/v1/runtimes", json=e2b), 400, "unsupported")
        assert "no client for E2B" in message
        odd = {"name": "odd", "provider": "nimbus"}
        assert "holm" in await error_of(
            await front.post("/v1/runtimes", json=odd), 400, "bad_request"
        )
        no_url = {"name": "far", "provider": "holm"}
        await error_of(await front.post("/v1/runtimes", json=no_url), 400, "bad_request")
        extra = holm_vendor("far", "http://127.0.0.1:1")
        extra["fields"]["colour"] = "red"
        message = await error_of(await front.post("/v1/runtimes", json=extra), 400, "bad_request")
        assert "'colour'" in message
        bad_name = holm_vendor("Far Away", "http://127.0.0.1:1")
        await error_of(await front.post("/v1/runtimes", json=bad_name), 400, "bad_request")
        patched = await front.patch("/v1/runtimes/memory", json={"fields": {}})
        assert "this server's own" in await error_of(patched, 400, "unsupported")
        await error_of(await front.delete("/v1/runtimes/nowhere"), 404, "not_found")
        assert (await front.get("/v1/runtimes")).status == 200
        assert not [e for e in await events(front) if e["kind"].startswith("runtime.")]


async def events(front: object) -> list[dict[str, object]]:
    page = await ok_json(await front.get("/v1/events"))  # type: ignore[attr-defined]
    return list(page["events"])


async def test_a_runtime_a_box_uses_is_not_removed_and_one_no_box_uses_is(
    tmp_path: Path,
) -> None:
    async with (
        back_server(tmp_path / "back") as (back, url),
        front_server(tmp_path / "f", events_delay_ms=0) as front,
    ):
        await ok_json(await front.post("/v1/runtimes", json=holm_vendor("far", url)))
        box = await ok_json(await front.post("/v1/boxes", json={"placement": {"runtime": "far"}}))
        assert box["state"] == "ready" and box["runtime"] == "far"
        refused = await front.delete("/v1/runtimes/far")
        assert box["id"] in await error_of(refused, 409, "denied")
        headers = {"x-holm-confirm-delete": "true"}
        await ok_json(await front.delete(f"/v1/boxes/{box['id']}", headers=headers))
        # The other server removed its box too.
        theirs = await ok_json(
            await back.get("/v1/boxes", headers={"Authorization": f"Bearer {BACK_TOKEN}"})
        )
        assert theirs["boxes"] == []
        await ok_json(await front.delete("/v1/runtimes/far"))
        await error_of(await front.get("/v1/runtimes/far"), 404, "not_found")
        kinds = [(e["kind"], e.get("runtime")) for e in await events(front)]
        assert ("runtime.added", "far") in kinds and ("runtime.removed", "far") in kinds


async def test_a_runtime_changed_keeps_its_secrets_and_takes_the_new_fields(
    tmp_path: Path,
) -> None:
    async with (
        back_server(tmp_path / "back") as (_, url),
        front_server(tmp_path / "f", events_delay_ms=0) as front,
    ):
        wrong = holm_vendor("far", url, token="not-the-token")
        await ok_json(await front.post("/v1/runtimes", json=wrong))
        # Its token is refused by the other server: no box, and the reason says why.
        made = await front.post("/v1/boxes", json={"placement": {"runtime": "far"}})
        assert "api_key" in await error_of(made, 503, "unavailable")
        changed = await front.patch("/v1/runtimes/far", json={"secrets": {"api_key": BACK_TOKEN}})
        assert (await ok_json(changed))["secrets"] == ["api_key"]
        box = await ok_json(await front.post("/v1/boxes", json={"placement": {"runtime": "far"}}))
        assert box["state"] == "ready"
        # A field changed (the same URL with a slash) keeps the secret it had.
        moved = await front.patch("/v1/runtimes/far", json={"fields": {"url": url + "/"}})
        assert (await ok_json(moved))["fields"] == {"url": url + "/"}
        acted = await front.post(
            f"/v1/boxes/{box['id']}/screens/0/actions",
            json={"actions": [{"type": "click", "at": {"x": 3, "y": 4}}]},
        )
        assert (await ok_json(acted))["results"][0]["ok"] is True
        assert "runtime.changed" in [e["kind"] for e in await events(front)]


async def test_a_runtime_added_and_its_boxes_outlive_a_restart(tmp_path: Path) -> None:
    key = new_key()
    async with back_server(tmp_path / "back") as (_, url):
        async with front_server(tmp_path / "f", secrets_key=key) as front:
            await ok_json(await front.post("/v1/runtimes", json=holm_vendor("far", url)))
            placed = {"placement": {"runtime": "far"}}
            box = (await ok_json(await front.post("/v1/boxes", json=placed)))["id"]
        async with front_server(tmp_path / "f", secrets_key=key) as again:
            assert (await ok_json(await again.get("/v1/runtimes/far")))["provider"] == "holm"
            view = await ok_json(await again.get(f"/v1/boxes/{box}"))
            assert view["state"] == "ready" and view["runtime"] == "far"
            acted = await again.post(
                f"/v1/boxes/{box}/screens/0/actions",
                json={"actions": [{"type": "type", "text": "after"}]},
            )
            assert (await ok_json(acted))["results"][0]["ok"] is True


async def test_a_wrong_secrets_key_stops_the_server_with_the_reason(tmp_path: Path) -> None:
    async with back_server(tmp_path / "back") as (_, url):
        async with front_server(tmp_path / "f", secrets_key=new_key()) as front:
            await ok_json(await front.post("/v1/runtimes", json=holm_vendor("far", url)))
        with pytest.raises(ValueError, match=r"runtime 'far'.*secrets key"):
            async with front_server(tmp_path / "f", secrets_key=new_key()):
                pass
        with pytest.raises(ValueError, match="HOLM_SECRETS_KEY is no secrets key"):
            async with front_server(tmp_path / "f", secrets_key="short"):
                pass


async def test_a_prune_long_after_keeps_the_runtimes_added(tmp_path: Path) -> None:
    """The server trace is never old as a whole, and a prune keeps its runtime entries:
    a runtime added does not go with the retention of the entries."""
    async with back_server(tmp_path / "back") as (_, url):
        async with front_server(tmp_path / "f") as front:
            await ok_json(await front.post("/v1/runtimes", json=holm_vendor("far", url)))
            await ok_json(await front.post("/v1/runtimes", json=holm_vendor("near", url)))
            await ok_json(await front.delete("/v1/runtimes/near"))
            engine = engine_of(front)
            later = int(time.time() * 1000) + 30 * 24 * 3600 * 1000
            await engine.store.prune(later, engine.journal.keep)
            kinds = [kind_of(e) for e in await engine.store.read(SERVER_TRACE, None, 100)]
            assert kinds == ["runtime_added", "runtime_added", "runtime_removed"]
        async with front_server(tmp_path / "f") as again:
            names = [
                r["name"] for r in (await ok_json(await again.get("/v1/runtimes")))["runtimes"]
            ]
            assert names == ["far", "memory"]
