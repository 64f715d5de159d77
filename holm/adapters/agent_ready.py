"""Waiting for a new box's agent, the same for every runtime: its socket must accept (the
file shows at bind(), a moment before listen()), then the agent must say its desktop is up.
What differs is how a runtime tells that its box ended meanwhile, and what it adds to a
failure (its logs): both are given."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from holm.adapters.agent_desktop import AgentDesktop
from holm.errors import HolmError, Timeout, Transport, Unavailable

SOCKET_POLL_S = 0.02


async def await_agent(
    box_id: str,
    socket: Path | Callable[[], Awaitable[AgentDesktop]],
    timeout_s: float,
    *,
    check_alive: Callable[[], Awaitable[None]],
    check_every_s: float = 0.0,
    logs: Callable[[], Awaitable[str]],
) -> AgentDesktop:
    """The box's agent, connected and with its desktop up. `socket` is its Unix socket on
    this host, or what connects to it elsewhere (raising `Transport` until it listens).
    `check_alive` raises when the box ended (its message says how), asked at most every
    `check_every_s` while the agent does not listen yet; `logs` is what the box's logs end
    with, quoted in a failure (the box is removed after it, its logs with it)."""
    connect = (lambda: AgentDesktop.connect(socket)) if isinstance(socket, Path) else socket
    deadline = time.monotonic() + timeout_s
    next_check = time.monotonic() + check_every_s
    while True:
        try:
            desktop = await connect()
            break
        except Transport:
            if time.monotonic() >= next_check:
                next_check = time.monotonic() + check_every_s
                await check_alive()
            if time.monotonic() > deadline:
                raise Timeout(f"box {box_id}: its agent did not listen in time") from None
        await asyncio.sleep(SOCKET_POLL_S)
    try:
        await desktop.ready(max(deadline - time.monotonic(), 1.0))
    except HolmError as exc:
        await desktop.close()
        await check_alive()
        message = f"box {box_id} did not come up: {exc.message}"
        tail = await logs()
        if tail:
            message += f"\n{tail}"
        if isinstance(exc, Timeout):
            raise Timeout(message) from None
        raise Unavailable(message, retryable=False) from None
    except BaseException:
        await desktop.close()
        raise
    return desktop


__all__ = ["await_agent"]
