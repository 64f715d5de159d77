"""One step of a batch: an `Action` done on a screen, and the result it reads back.

Results are plain dicts (JSON-ready, bytes as base64), the `results` of an action batch.
"""

from __future__ import annotations

import asyncio
import base64
import time
from typing import TYPE_CHECKING, Any

import msgspec

from holm.adapters.agent.input import Input
from holm.adapters.agent.screen import Screen
from holm.errors import BadRequest, Unsupported
from holm.wire import actions as a

if TYPE_CHECKING:
    from holm.adapters.agent.agent import Agent


def _xy(point: a.Point | None) -> tuple[int, int] | None:
    return None if point is None else (point.x, point.y)


def _at(where: tuple[int, int]) -> dict[str, Any]:
    return {"at": {"x": where[0], "y": where[1]}}


def _hold_ms(hold_ms: int | None) -> tuple[int, bool]:
    """The hold time and whether it was asked for (else the batch's end releases)."""
    if hold_ms is None:
        return a.DEFAULT_HOLD_MS, False
    if not 0 < hold_ms <= a.MAX_HOLD_MS:
        raise BadRequest(f"hold_ms must be 1 to {a.MAX_HOLD_MS}")
    return hold_ms, True


# Release tasks nobody awaits, kept referenced until they end.
_pending: set[asyncio.Task[None]] = set()


def _release_later(screen: Screen, kind: str, name: str, token: int, after_ms: int) -> None:
    loop = asyncio.get_running_loop()

    def release() -> None:
        task = loop.create_task(screen.on_input(lambda i: i.release_if(kind, name, token)))
        _pending.add(task)
        task.add_done_callback(_pending.discard)

    loop.call_later(after_ms / 1000, release)


def _seeded(seed: int | None, motion: a.Motion) -> int | None:
    """A human path with no seed gets one, returned in the result so it can be replayed."""
    if motion == "human" and seed is None:
        return time.time_ns() % 2**31
    return seed


def _motion_result(where: tuple[int, int], motion: a.Motion, seed: int | None) -> dict[str, Any]:
    result = _at(where)
    if motion == "human":
        result["seed"] = seed
    return result


async def act(agent: Agent, index: int, action: a.Action) -> dict[str, Any]:
    match action:
        case a.Exec(what=what):
            return msgspec.to_builtins(await agent.exec(what.argv, what.timeout_ms))  # type: ignore[no-any-return]
        case a.ReadFile(path=path):
            data = await agent.read_file(path)
            return {
                "path": path,
                "size": len(data),
                "contents_base64": base64.b64encode(data).decode(),
            }
        case a.WriteFile(what=what):
            try:
                data = base64.b64decode(what.contents_base64, validate=True)
            except ValueError:
                raise BadRequest("contents_base64 is not valid base64") from None
            await agent.write_file(what.path, data)
            return {"path": what.path, "size": len(data)}
        case a.ListFiles(path=path):
            return {"files": msgspec.to_builtins(await agent.list_files(path))}
        case a.Grep(what=g):
            matches, cut = await agent.grep(g.pattern, g.path, g.include, g.ignore_case, g.limit)
            return {"matches": msgspec.to_builtins(matches), "cut": cut}
        case a.Glob(what=g):
            paths, cut = await agent.glob(g.pattern, g.path, g.limit)
            return {"paths": paths, "cut": cut}
        case a.Apps():
            return {
                "apps": [
                    {"name": app.name, "description": app.description}
                    for app in agent.catalog.names()
                ]
            }
        case a.Wait(ms=ms):
            if not 0 <= ms <= a.MAX_WAIT_MS:
                raise BadRequest(f"wait ms must be 0 to {a.MAX_WAIT_MS}")
            await asyncio.sleep(ms / 1000)
            return {"waited_ms": ms}
    screen = agent.screen(index)
    return await _on_screen(agent, screen, action)


async def _on_screen(agent: Agent, screen: Screen, action: a.Action) -> dict[str, Any]:
    match action:
        case a.Move(to=to, motion=motion, seed=seed, pause_ms=pause_ms):
            seed = _seeded(seed, motion)
            if not 0 <= pause_ms <= a.MAX_WAIT_MS:
                raise BadRequest(f"pause_ms must be 0 to {a.MAX_WAIT_MS}")
            await screen.on_input(lambda i: i.move((to.x, to.y), motion, seed, pause_ms))
            return _motion_result((to.x, to.y), motion, seed)
        case a.Click(at=at, button=button, held=held, motion=motion, seed=seed):
            seed = _seeded(seed, motion)
            where = await screen.on_input(lambda i: i.click(_xy(at), button, held, motion, seed))
            return _motion_result(where, motion, seed)
        case a.DoubleClick(at=at, button=button, motion=motion, seed=seed):
            seed = _seeded(seed, motion)
            where = await screen.on_input(lambda i: i.click(_xy(at), button, [], motion, seed, 2))
            return _motion_result(where, motion, seed)
        case a.Drag(to=to, from_=start, button=button, held=held, motion=motion, seed=seed):
            seed = _seeded(seed, motion)

            def drag(i: Input) -> tuple[int, int]:
                first = _xy(start) or i.position()
                return i.drag([first, (to.x, to.y)], button, held, motion, seed)

            return _motion_result(await screen.on_input(drag), motion, seed)
        case a.Path(through=through, button=button, held=held, motion=motion, seed=seed):
            if len(through) < 2:
                raise BadRequest("a path goes through at least 2 points")
            seed = _seeded(seed, motion)
            points = [(p.x, p.y) for p in through]
            where = await screen.on_input(lambda i: i.drag(points, button, held, motion, seed))
            return _motion_result(where, motion, seed)
        case a.MouseDown(at=at, button=button, motion=motion, seed=seed, hold_ms=hold_ms):
            seed = _seeded(seed, motion)
            hold, explicit = _hold_ms(hold_ms)
            release_at = int(time.time() * 1000) + hold

            def down(i: Input) -> tuple[tuple[int, int], int]:
                where = i.button_down(_xy(at), button, motion, seed)
                return where, i.hold(i.buttons, button, release_at, explicit)

            where, token = await screen.on_input(down)
            _release_later(screen, "button", button, token, hold)
            return {**_motion_result(where, motion, seed), "release_at_ms": release_at}
        case a.MouseUp(at=at, button=button):
            return _at(await screen.on_input(lambda i: i.button_up(_xy(at), button)))
        case a.Scroll(at=at, dx=dx, dy=dy):
            return _at(await screen.on_input(lambda i: i.scroll(_xy(at), dx, dy)))
        case a.Type(text=text, delay_ms=delay_ms):
            return {"typed": await screen.on_input(lambda i: i.type_text(text, delay_ms))}
        case a.Press(chord=chord, then=then, held=held):
            if not chord and not then:
                raise BadRequest("press needs keys in `chord` or `then`")
            await screen.on_input(lambda i: i.press(chord, then, held))
            return {"pressed": [*chord, *then]}
        case a.KeyDown(key=key, hold_ms=hold_ms):
            hold, explicit = _hold_ms(hold_ms)
            release_at = int(time.time() * 1000) + hold

            def key_down(i: Input) -> int:
                i.key_down(key)
                return i.hold(i.keys, key, release_at, explicit)

            token = await screen.on_input(key_down)
            _release_later(screen, "key", key, token, hold)
            return {"key": key, "release_at_ms": release_at}
        case a.KeyUp(key=key):
            await screen.on_input(lambda i: i.key_up(key))
            return {"key": key}
        case a.WaitStill(settle_ms=settle_ms, within_ms=within_ms):
            for name, value in (("settle_ms", settle_ms), ("within_ms", within_ms)):
                if not 0 <= value <= a.MAX_WAIT_MS:
                    raise BadRequest(f"{name} must be 0 to {a.MAX_WAIT_MS}")
            return await screen.wait_still(settle_ms, within_ms)
        case a.AwaitWindow(what=what):
            if not 0 <= what.within_ms <= a.MAX_WAIT_MS:
                raise BadRequest(f"within_ms must be 0 to {a.MAX_WAIT_MS}")
            found = await screen.wait_window(what.class_, what.title, what.within_ms)
            return {"window": msgspec.to_builtins(found)}
        case a.Capture(what=what):
            if what.tab is not None:
                raise Unsupported("a page capture (tab) comes with page actions")
            frame = await screen.frame(
                window=what.window, region=what.region, scale=what.scale, pointer=what.pointer
            )
            return {
                "hash": frame.hash,
                "unchanged": False,
                "width": frame.width,
                "height": frame.height,
                "png_base64": base64.b64encode(frame.png or b"").decode(),
            }
        case a.Cursor():
            point = await screen.cursor()
            return {"x": point.x, "y": point.y}
        case a.Windows(active=active):
            if active:
                front = await screen.active_window()
                return {"window": None if front is None else msgspec.to_builtins(front)}
            return {"windows": msgspec.to_builtins(await screen.windows())}
        case a.OnWindow(window=window, what=what):
            return await _on_window(screen, window, what)
        case a.Launch(app=app, args=args):
            found = await agent.launch(screen.index, app, args)
            return {"window": msgspec.to_builtins(found)}
        case a.Clipboard(selection=selection, text=new_text):
            if new_text is None:
                return {"text": await screen.clipboard_get(selection)}
            await screen.clipboard_set(selection, new_text)
            return {"set": True, "length": len(new_text)}
        case a.OpenUrl(url=url, target=target):
            return await agent.pages(screen.index).open_url(url, target)
        case a.Tabs():
            return {"tabs": await agent.pages(screen.index).tabs()}
        case a.OnTab(tab=tab, close=close):
            return await agent.pages(screen.index).on_tab(tab, close)
        case a.Record():
            raise Unsupported("recording needs the `video` feature, which this box does not have")
        case a.OnNode():
            raise Unsupported("native widgets need the `accessibility` feature")
        case _:
            raise Unsupported(f"{type(action).__name__} is not supported by this agent yet")


async def _on_window(screen: Screen, window: str, what: a.WindowOp) -> dict[str, Any]:
    match what.do:
        case "focus":
            await screen.focus_window(window)
            return {"window": window}
        case "close":
            await screen.close_window(window)
            return {"window": window, "closed": True}
        case "arrange":
            if what.how is None:
                raise BadRequest("arrange needs `how`")
            found = await screen.arrange_window(window, what.how)
            return {"window": msgspec.to_builtins(found)}
    raise BadRequest(f"unknown window operation {what.do!r}")
