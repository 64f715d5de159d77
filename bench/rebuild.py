"""How long rebuilding projections from a long trace takes: a box's state (`fold`), the events
feed and the text, from a JSONL file of N entries, with the decode time printed apart.

    .venv/bin/python bench/rebuild.py [N]      (default 100000; the target is < 1 s)
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from holm.events.codec import decode_lines, encode_entry
from holm.events.local import read_trace_file
from holm.projections import events_from_traces, fold, render_lines
from holm.wire.actions import Action, Click, OpenUrl, Type
from holm.wire.entries import (
    Acted,
    BoxCreated,
    BoxReady,
    Entry,
    Executed,
    FrameSeen,
    TakeoverEnded,
    TakeoverStarted,
    step_key,
)
from holm.wire.spec import Placement, Spec, spec_digest
from holm.wire.values import Point

T = TypeVar("T")


def make_trace(n: int) -> list[Entry]:
    """A browser session: steps, frames, a command now and then, a takeover each 5000."""
    t0 = 1_790_000_000_000
    spec = Spec()
    entries: list[Entry] = [
        BoxCreated(
            seq=0,
            at_ms=t0,
            actor="agent",
            box_id="box_bench",
            runtime="local",
            spec=spec,
            placement=Placement(expires_after_secs=3600),
            spec_digest=spec_digest(spec),
            expires_at_ms=t0 + 3_600_000,
        ),
        BoxReady(seq=1, at_ms=t0 + 900, actor="system", viewer_urls=["http://127.0.0.1/v/0"]),
    ]
    for seq in range(2, n):
        at = t0 + 1000 + seq * 50
        action: Action
        match seq % 10:
            case 0 | 3 | 6:
                action = Click(at=Point(x=seq % 1280, y=seq % 800))
            case 1:
                action = Type(text=f"hello {seq}")
            case 2:
                action = OpenUrl(url=f"https://example.com/{seq}")
            case 9:
                entries.append(
                    Executed(
                        seq=seq,
                        at_ms=at,
                        actor="agent",
                        argv=["ls", "/tmp"],
                        code=0,
                        timed_out=False,
                        key=step_key("executed", ["ls", "/tmp"]),
                        stdout="a\nb\n",
                    )
                )
                continue
            case 4 if seq % 5000 == 4:
                entries.append(TakeoverStarted(seq=seq, at_ms=at, actor="agent", screen=0))
                continue
            case 5 if seq % 5000 == 5:
                entries.append(TakeoverEnded(seq=seq, at_ms=at, actor="agent", screen=0))
                continue
            case _:
                entries.append(
                    FrameSeen(
                        seq=seq,
                        at_ms=at,
                        actor="agent",
                        screen=0,
                        frame=f"sha256:{seq:064x}",
                        width=1280,
                        height=800,
                    )
                )
                continue
        entries.append(
            Acted(
                seq=seq,
                at_ms=at,
                actor="agent",
                screen=0,
                action=action,
                ok=True,
                key=step_key(str(action.__struct_config__.tag), action),
            )
        )
    return entries


def timed(what: str, work: Callable[[], T]) -> tuple[T, float]:
    """Run `work`, print its wall and CPU time (CPU time is what to read on a busy
    machine: other processes stretch the wall time, not it), give the CPU seconds."""
    start, start_cpu = time.perf_counter(), time.process_time()
    result = work()
    wall, cpu = time.perf_counter() - start, time.process_time() - start_cpu
    print(f"{what:<38} {wall * 1000:8.1f} ms wall {cpu * 1000:8.1f} ms CPU")
    return result, cpu


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    entries = make_trace(n)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "box_bench.jsonl"
        path.write_bytes(b"".join(encode_entry(e) for e in entries))
        print(f"{n} entries, {path.stat().st_size / 1e6:.1f} MB of JSONL")
        read, decode_s = timed("read + decode (read_trace_file)", lambda: read_trace_file(path))
        decoded = read.entries
        timed("read + decode (one msgspec pass)", lambda: decode_lines(path.read_bytes()))
    state, fold_s = timed("fold (box state)", lambda: fold(decoded))
    assert state is not None and state.last_seq == n - 1
    total = f"{(decode_s + fold_s) * 1000:8.1f} ms CPU"
    print(f"{'box state: read_trace_file + fold':<38} {total}  (target < 1000)")
    timed("events feed from scratch", lambda: events_from_traces({"box_bench": decoded}))
    timed("text of every entry", lambda: sum(1 for _ in render_lines(decoded)))


if __name__ == "__main__":
    main()
