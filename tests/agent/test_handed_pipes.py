"""The remote docker runtime's relay (`exec_stream.RELAY`, run here as the box runs it: a
python3 whose stdin and stdout are pipes, as an exec's are) handing its pipes to the agent
(`holm/agent/handed_pipes.py`), against the real agent of this folder: the agent then
answers over those pipes itself, and the relay only waits; an agent without the socket is
relayed as before; the relay's end follows the stream's."""

from __future__ import annotations

import asyncio
import os
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import NamedTuple

from agent_kit import SYSTEM_PYTHON, RunningAgent
from kits.procfs import held_open

from holm.adapters.agent_desktop import AgentDesktop
from holm.adapters.docker.exec_stream import RELAY
from holm.agent.handed_pipes import PIPES_SOCKET

BOUND_S = 30.0


class Relayed(NamedTuple):
    proc: asyncio.subprocess.Process
    desktop: AgentDesktop
    # Our ends of the relay's stdin and stdout, and those pipes as /proc names them.
    stdin: asyncio.StreamWriter
    pipes: set[str]


@asynccontextmanager
async def relay(agent: RunningAgent, handed_to: str) -> AsyncIterator[Relayed]:
    """The relay run on pipes of ours, once it has said `+`; an AgentDesktop over them."""
    loop = asyncio.get_running_loop()
    in_read, in_write = os.pipe()
    out_read, out_write = os.pipe()
    pipes = {f"pipe:[{os.fstat(fd).st_ino}]" for fd in (in_write, out_read)}
    proc = await asyncio.create_subprocess_exec(
        *(SYSTEM_PYTHON, "-I", "-c", RELAY, str(agent.socket), "5", handed_to),
        stdin=in_read,
        stdout=out_write,
        stderr=asyncio.subprocess.DEVNULL,
    )
    os.close(in_read)
    os.close(out_write)
    reader = asyncio.StreamReader(limit=1 << 20)
    reading, _ = await loop.connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(out_read, "rb", buffering=0)
    )
    transport, protocol = await loop.connect_write_pipe(
        lambda: asyncio.StreamReaderProtocol(asyncio.StreamReader()),
        os.fdopen(in_write, "wb", buffering=0),
    )
    writer = asyncio.StreamWriter(transport, protocol, reader, loop)
    try:
        assert await asyncio.wait_for(reader.readexactly(1), BOUND_S) == b"+"
        desktop = AgentDesktop(reader, writer)
        try:
            yield Relayed(proc, desktop, writer, pipes)
        finally:
            await desktop.close()
    finally:
        writer.close()
        reading.close()
        if proc.returncode is None:
            proc.kill()
        await proc.wait()


def pipes_of(pid: int) -> set[str]:
    """The pipes `pid` holds open, as /proc names them (`pipe:[inode]`)."""
    return held_open(pid, "pipe")


async def _let_go(pipes: set[str], pid: int) -> bool:
    """Whether `pid` holds none of `pipes` within BOUND_S."""
    deadline = asyncio.get_running_loop().time() + BOUND_S
    while pipes & pipes_of(pid):
        if asyncio.get_running_loop().time() >= deadline:
            return False
        await asyncio.sleep(0.01)
    return True


async def test_the_relay_hands_its_pipes_to_the_agent(agent: RunningAgent) -> None:
    async with relay(agent, str(agent.run_dir / PIPES_SOCKET)) as relayed:
        await relayed.desktop.ping()
        info = await relayed.desktop.info()
        assert len(info.screens) == 2
        # The agent reads and writes the exec's pipes; the relay keeps neither. It closes
        # its copies right after handing them over, which can be after the agent answered
        # (the relay's `+` goes first, so the agent may be asked before the hand-over).
        assert relayed.pipes <= pipes_of(agent.proc.pid)
        assert await _let_go(relayed.pipes, relayed.proc.pid)
        relayed.stdin.close()
        # The stream's end (stdin closed) ends the agent's service, then the relay.
        assert await asyncio.wait_for(relayed.proc.wait(), BOUND_S) == 0
        assert await _let_go(relayed.pipes, agent.proc.pid)


async def test_an_agent_without_the_socket_is_relayed(agent: RunningAgent) -> None:
    async with relay(agent, str(agent.run_dir / "no-such.sock")) as relayed:
        await relayed.desktop.ping()
        assert relayed.pipes <= pipes_of(relayed.proc.pid)
        assert not relayed.pipes & pipes_of(agent.proc.pid)
        relayed.stdin.close()
        assert await asyncio.wait_for(relayed.proc.wait(), BOUND_S) == 0


async def test_a_connection_that_hands_nothing_is_closed(agent: RunningAgent) -> None:
    loop = asyncio.get_running_loop()
    with socket.socket(socket.AF_UNIX) as conn:
        conn.setblocking(False)
        await loop.sock_connect(conn, str(agent.run_dir / PIPES_SOCKET))
        await loop.sock_sendall(conn, b"+")
        assert await asyncio.wait_for(loop.sock_recv(conn, 1), BOUND_S) == b""
    async with relay(agent, str(agent.run_dir / PIPES_SOCKET)) as relayed:
        await relayed.desktop.ping()
