"""The recording routes and the `record` action as the server keeps them, on the in-memory
double (tests/cli/test_record.py records real screens): what each verb records in the trace,
and a box without the `video` feature refusing before anything runs or is recorded."""

from __future__ import annotations

from http_kit import Client, error_of, kinds, new_box, ok_json, trace_entries

RECORDING = "/v1/boxes/{box}/screens/0/recording"


async def test_start_and_stop_are_acted_entries_and_status_is_not_recorded(
    client: Client,
) -> None:
    box = await new_box(client)
    url = RECORDING.format(box=box)
    assert await ok_json(await client.get(url)) == {"recording": False}
    started = await ok_json(await client.post(url, json={"fps": 5}))
    assert started["recording"] and started["fps"] == 5 and started["path"].endswith(".mp4")
    assert await ok_json(await client.get(url)) == started
    stopped = await ok_json(await client.delete(url))
    assert not stopped["recording"] and stopped["path"] == started["path"]
    assert await ok_json(await client.get(url)) == stopped

    acted = [e for e in await trace_entries(client, box) if e["kind"] == "acted"]
    assert [e["action"] for e in acted] == [
        {"type": "record", "what": {"do": "start", "fps": 5}},
        {"type": "record", "what": {"do": "stop"}},
    ]
    assert all(e["ok"] and e["screen"] == 0 and e.get("batch") is None for e in acted)


async def test_an_empty_body_starts_at_twelve_fps(client: Client) -> None:
    box = await new_box(client)
    started = await ok_json(await client.post(RECORDING.format(box=box)))
    assert started["fps"] == 12


async def test_a_second_start_and_a_stop_of_nothing_fail_and_record_nothing(
    client: Client,
) -> None:
    box = await new_box(client)
    url = RECORDING.format(box=box)
    assert "not recording" in await error_of(await client.delete(url), 422, "failed")
    await ok_json(await client.post(url, json={}))
    assert "recording already" in await error_of(await client.post(url, json={}), 422, "failed")
    acted = [e for e in await trace_entries(client, box) if e["kind"] == "acted"]
    assert [e["action"]["what"]["do"] for e in acted] == ["start"]


async def test_fps_out_of_range_is_a_bad_request(client: Client) -> None:
    box = await new_box(client)
    url = RECORDING.format(box=box)
    for fps in (0, 31):
        message = await error_of(await client.post(url, json={"fps": fps}), 400, "bad_request")
        assert "fps" in message
    assert "acted" not in kinds(await trace_entries(client, box))


async def test_a_box_without_the_video_feature_refuses_to_record(client: Client) -> None:
    box = await new_box(client, {"spec": {"desktop": {"features": ["wide_fonts"]}}})
    url = RECORDING.format(box=box)
    for response in (await client.post(url, json={}), await client.get(url)):
        message = await error_of(response, 400, "unsupported")
        assert "`video` feature" in message
    # A batch holding a record step is refused whole: its click does not run either.
    batch = {
        "actions": [
            {"type": "click", "at": {"x": 1, "y": 1}},
            {"type": "record", "what": {"do": "start"}},
        ]
    }
    response = await client.post(f"/v1/boxes/{box}/screens/0/actions", json=batch)
    assert "`video` feature" in await error_of(response, 400, "unsupported")
    assert "acted" not in kinds(await trace_entries(client, box))


async def test_the_default_features_and_video_named_record(client: Client) -> None:
    box = await new_box(client, {"spec": {"desktop": {"features": ["video"]}}})
    batch = {"actions": [{"type": "record", "what": {"do": "start"}}]}
    done = await ok_json(await client.post(f"/v1/boxes/{box}/screens/0/actions", json=batch))
    assert done["results"][0]["ok"] and done["results"][0]["value"]["recording"]


async def test_a_fork_starts_and_stops_a_recording_of_its_own(client: Client) -> None:
    box = await new_box(client)
    url = RECORDING.format(box=box)
    await ok_json(await client.post(url, json={"fps": 3}))
    await ok_json(await client.delete(url))
    forked = await ok_json(await client.post(f"/v1/boxes/{box}/fork", json={}))
    assert (forked["replay"]["attempted"], forked["replay"]["ok"]) == (2, 2)
    fork = forked["box"]["id"]
    acted = [e for e in await trace_entries(client, fork) if e["kind"] == "acted"]
    assert [e["action"]["what"] for e in acted] == [{"do": "start", "fps": 3}, {"do": "stop"}]
    own = await ok_json(await client.get(RECORDING.format(box=fork)))
    assert not own["recording"] and own["fps"] == 3 and "path" in own
