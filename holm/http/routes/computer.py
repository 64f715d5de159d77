"""The computer-use formats of models, natively: one model action per request, done as
holm's own actions and answered as the model's next message needs it
(holm/http/computer_use.py)."""

from __future__ import annotations

from aiohttp import web

from holm.wire import computer_use as cu

from .. import computer_use as run
from ..routing import Route, body_of, box_and_screen, engine_of, json_response, query_of
from .screens import SCREEN


async def anthropic(request: web.Request) -> web.Response:
    act = await body_of(request, cu.AnthropicAction)
    query = query_of(request, cu.ComputerQuery)
    box_id, screen = box_and_screen(request)
    engine = engine_of(request)
    scale = await run.scaler_of(engine, box_id, query)
    steps, reading = run.anthropic_steps(act, scale)
    zoom = None
    if reading == "zoom":
        zoom = scale.region(run.needs(act.region, "region", "zoom"))
    answer = await run.run(engine, box_id, screen, steps, reading, scale, query, zoom)
    return json_response(run.anthropic_result(answer, scale))


async def openai(request: web.Request) -> web.Response:
    # One action (tagged by `type`) or several (`actions`): a key `"actions"` can only be a
    # key, since a quote inside a JSON string is escaped.
    if b'"actions"' in await request.read():
        acts = (await body_of(request, cu.OpenAIActions)).actions
    else:
        acts = [await body_of(request, cu.OpenAIAction)]  # type: ignore[arg-type]
    query = query_of(request, cu.ComputerQuery)
    box_id, screen = box_and_screen(request)
    engine = engine_of(request)
    scale = await run.scaler_of(engine, box_id, query)
    steps = [step for act in acts for step in run.openai_steps(act, scale)]
    answer = await run.run(engine, box_id, screen, steps, "screenshot", scale, query)
    return json_response(run.openai_result(answer, scale))


ROUTES = [
    Route(
        "POST",
        f"{SCREEN}/computer/anthropic",
        anthropic,
        "Do one action of Anthropic's computer tool, as the model emitted it",
        query=cu.ComputerQuery,
        body=cu.AnthropicAction,
        response=cu.AnthropicResult,
        idempotent=True,
    ),
    Route(
        "POST",
        f"{SCREEN}/computer/openai",
        openai,
        "Do one action of OpenAI's computer tool (or a call's `actions`), as the model emitted it",
        query=cu.ComputerQuery,
        # `{"actions": [...]}` too, which a schema of msgspec's cannot say beside the
        # tagged actions (an untagged Struct in a union of tagged ones).
        body=cu.OpenAIAction,
        response=cu.OpenAIResult,
        idempotent=True,
    ),
]
