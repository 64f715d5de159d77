"""A local box on disk: its folder under `<state_dir>/boxes/<box_id>/` and its `box.json`.

The folder is the box: a runtime keeps nothing about a box in memory that it could not
read again from here, so a new holmd (a new runtime object) takes over the running boxes
of the last one by reading their folders.

    <box_id>/
      box.json     the record below (spec, placement, server, displays, processes)
      box.log      what bwrap and the agent wrote to stdout and stderr
      home/        /home/box in the box
      run/         /run/holm in the box: agent.sock, vnc-<i>.sock

home/ and run/ belong to the box's host uid (`BoxRecord.box_uid`), the rest to holmd.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Literal

import msgspec

from holm.adapters.local.box_ids import BOX_UID
from holm.wire.spec import Placement, Spec

RECORD = "box.json"
LOCK = ".lock"
_BOX_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")


class BoxRecord(msgspec.Struct, kw_only=True):
    box_id: str
    spec: Spec
    placement: Placement
    server_id: str | None
    created_at_ms: int
    # The workspace that launched the box, for a server that adopts it without its trace.
    owner: str | None = None
    # `running` from the launch until a stop; a running box whose processes are gone
    # crashed, and is listed as stopped.
    state: Literal["running", "stopped"] = "running"
    # The first of the box's consecutive X displays, while it runs.
    display_base: int | None = None
    # The box's pid-namespace init (the inner bwrap), by pid and start time.
    init_pid: int | None = None
    init_start: int | None = None
    # The outer bwrap, which holmd reaps when it is its parent.
    bwrap_pid: int | None = None
    started_at_ms: int | None = None
    # The `cgroup.procs` files of the box's memory, cpu and pids groups.
    cgroups: list[str] = msgspec.field(default_factory=list)
    # The box's user-mode network stack (pasta), by pid and start time, while it runs.
    net_pid: int | None = None
    net_start: int | None = None
    # Where that pasta writes its pid, until holmd has read it.
    net_pidfile: str | None = None
    # Started for the warm pool and not claimed yet (runtime.SpareBoxes).
    spare: bool = False
    # The host uid of root in the box, the first of its range of ids (box_ids.py), given
    # when the box is made and kept for its life; none for a box made before boxes had
    # ranges of their own, whose range is the first.
    box_uid: int | None = None

    @property
    def host_uid(self) -> int:
        return BOX_UID if self.box_uid is None else self.box_uid


_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder(BoxRecord)


def valid_box_id(box_id: str) -> bool:
    return _BOX_ID.match(box_id) is not None


class BoxPaths:
    def __init__(self, boxes_dir: Path, box_id: str) -> None:
        self.dir = boxes_dir / box_id
        self.record = self.dir / RECORD
        self.log = self.dir / "box.log"
        self.home = self.dir / "home"
        self.run = self.dir / "run"
        self.agent_socket = self.run / "agent.sock"

    def vnc_socket(self, screen: int) -> Path:
        return self.run / f"vnc-{screen}.sock"


def read_record(path: Path) -> BoxRecord | None:
    try:
        return _decoder.decode(path.read_bytes())
    except FileNotFoundError:
        return None


def write_record(path: Path, record: BoxRecord) -> None:
    """Replace the record whole: a reader sees the old one or the new one, never half."""
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "wb") as f:
        f.write(_encoder.encode(record))
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def read_records(boxes_dir: Path) -> list[BoxRecord]:
    records = []
    if boxes_dir.is_dir():
        for entry in sorted(boxes_dir.iterdir()):
            if entry.is_dir() and (record := read_record(entry / RECORD)) is not None:
                records.append(record)
    return records


@contextlib.contextmanager
def locked(boxes_dir: Path) -> Iterator[None]:
    """Held while displays are given out, across every runtime on this state dir."""
    with open(boxes_dir / LOCK, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def host_x_displays() -> set[int]:
    """X displays listening on abstract sockets in holmd's network namespace. Boxes have
    network namespaces of their own, so these names cannot clash with theirs any more;
    boxes still avoid them so that a box's display numbers are not the host's too."""
    taken = set()
    with contextlib.suppress(OSError), open("/proc/net/unix") as f:
        for line in f:
            match = re.search(r"@/tmp/\.X11-unix/X(\d+)\s*$", line)
            if match:
                taken.add(int(match.group(1)))
    return taken


def pick_display_base(taken: Iterable[int], screens: int, first: int, count: int) -> int | None:
    """The lowest base of `screens` consecutive free displays in [first, first+count)."""
    busy = set(taken)
    for base in range(first, first + count - screens + 1):
        if busy.isdisjoint(range(base, base + screens)):
            return base
    return None
