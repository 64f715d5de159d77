"""A docker box's way out, the same as a local box's: the container has no network of the
engine's (`network_mode="none"`, so no bridge, no address another box or the host's
bridge could reach), and pasta is attached to its namespace as to a local box's
(`holm.adapters.local.network`, where the rules that keep the host's addresses out are).

The container's labels cannot change once it runs, so which pasta serves it is kept in
the box's folder (`pasta.json`, next to its run folder, out of the box's reach). A
restarted holmd finds it there: it neither loses the pasta of a box that runs on nor
starts a second one. The record names the pidfile while pasta comes up (a holmd that
dies meanwhile leaves it to the next one), then pasta's pid and start time.

Every holmd whose runtime lists the box's engine under that runtime's name can find a
box's pasta ended (replicas on a shared engine; two test processes on one): each change
of the record is made under a lock on the box's folder (`pasta.lock`, flock), and a
renewal looks again under it, so two of them never start a pasta each for one box, and
none starts one for a box whose pasta another just ended on its delete.

Everything here blocks: call it from a thread.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

import msgspec

from holm.adapters.local import network, procs
from holm.adapters.local.network import NetworkFailed

RECORD = "pasta.json"
LOCK = "pasta.lock"
LOG = "pasta.log"
END_GRACE_S = 1.0
LOG_TAIL_CHARS = 1500


class PastaRecord(msgspec.Struct, omit_defaults=True):
    pidfile: str | None = None
    pid: int | None = None
    start: int | None = None


def attach(init_pid: int, box_dir: Path) -> None:
    """Give the container whose init is `init_pid` (the engine's `State.Pid`) its way out;
    returns once it is up. Whatever pasta an earlier run of the box left goes first."""
    box_dir.mkdir(parents=True, exist_ok=True)
    with _locked(box_dir):
        _end(box_dir)
        _attach(init_pid, box_dir, again=False)


def attach_again(init_pid: int, box_dir: Path) -> bool:
    """Give a running box whose pasta ended (`lost`) a new one; False when, looked at
    under the lock, it has one (another holmd gave it one meanwhile) or none was started
    (its delete ended it). Its namespace keeps the rules made at its start. Should this
    fail, the box stays `lost`, to be tried again."""
    if not box_dir.is_dir():
        return False
    with _locked(box_dir):
        if not lost(box_dir):
            return False
        dead = _read(box_dir)
        try:
            _attach(init_pid, box_dir, again=True)
        except NetworkFailed:
            if dead is not None:
                _write(box_dir, dead)
            raise
        return True


def lost(box_dir: Path) -> bool:
    """Whether the box's pasta came up and has ended since (it crashed, or was killed)."""
    record = _read(box_dir)
    if record is None or record.pid is None or record.start is None:
        return False
    return not procs.is_alive(record.pid, record.start)


def _attach(init_pid: int, box_dir: Path, *, again: bool) -> None:
    attaching = network.attach(init_pid, 0, box_dir / LOG, again=again)
    _write(box_dir, PastaRecord(pidfile=str(attaching.pidfile)))
    try:
        pid, start = attaching.wait()
    except NetworkFailed as exc:
        (box_dir / RECORD).unlink(missing_ok=True)
        raise NetworkFailed(f"{exc}: {log_tail(box_dir)}") from None
    _write(box_dir, PastaRecord(pid=pid, start=start))


def end(box_dir: Path) -> None:
    """End the box's pasta, if it has one."""
    if not box_dir.is_dir():
        return
    with _locked(box_dir):
        _end(box_dir)


def _end(box_dir: Path) -> None:
    record = _read(box_dir)
    if record is None:
        return
    if record.pid is not None and record.start is not None:
        procs.end_one(record.pid, record.start, END_GRACE_S)
    if record.pidfile is not None:
        network.end_left_behind(Path(record.pidfile))
    (box_dir / RECORD).unlink(missing_ok=True)


def log_tail(box_dir: Path) -> str:
    with contextlib.suppress(OSError):
        return (box_dir / LOG).read_text(errors="replace").strip()[-LOG_TAIL_CHARS:]
    return "(no log)"


@contextlib.contextmanager
def _locked(box_dir: Path) -> Iterator[None]:
    fd = os.open(box_dir / LOCK, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _read(box_dir: Path) -> PastaRecord | None:
    try:
        return msgspec.json.decode((box_dir / RECORD).read_bytes(), type=PastaRecord)
    except (OSError, msgspec.DecodeError):
        return None


def _write(box_dir: Path, record: PastaRecord) -> None:
    box_dir.mkdir(parents=True, exist_ok=True)
    part = box_dir / f"{RECORD}.part"
    part.write_bytes(msgspec.json.encode(record))
    part.replace(box_dir / RECORD)


__all__ = ["NetworkFailed", "attach", "attach_again", "end", "log_tail", "lost"]
