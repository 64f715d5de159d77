"""Secrets by name in steps (beyond the spec): a `type` or a `fill` may give `secret: NAME`
instead of its text, and an `exec` may give `{"secret": NAME}` for an argument or an
environment variable. The engine puts each value in just before the step goes to the box;
what the trace keeps is the step as it was sent, with the name (and, for typed text, the
value's length), never the value.

Values come from the request (`secrets` beside a batch's steps or a fork's request) or else
from the box's workspace's own secrets (`PUT /v1/secrets/{name}`, `WorkspaceSecrets`). A
name with no value refuses the whole request before anything runs, naming it: a step that
types nothing would say `ok` for a sign-in that never happened.

Whatever a box answers is scrubbed of the values before it is recorded or answered (an
`exec` that echoes its variable, an error that quotes what it could not fill): the caller
gave the value, but an answer is logged, kept by MCP clients and shown in trace pages.
"""

from __future__ import annotations

import asyncio
import base64
import logging
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, TypeVar

import msgspec

from holm.errors import BadRequest, HolmError
from holm.wire import actions as a
from holm.wire.actions import names_in
from holm.wire.entries import PAGE_MAX, SERVER_TRACE, Entry, SecretRemoved, SecretSet
from holm.wire.results import ExecResult

from .journal import entry, stored

if TYPE_CHECKING:
    from .engine import Engine

log = logging.getLogger(__name__)

# What a secret's value becomes in anything a box answered.
SHOWN = "•••"
T = TypeVar("T")


def missing_message(missing: Iterable[str]) -> str:
    names = ", ".join(sorted(missing))
    return (
        f"no value for the secret {names}: give it in `secrets` beside the steps, or set it "
        "for the workspace (PUT /v1/secrets/{name})"
    )


def with_values(action: a.Action, values: Mapping[str, str]) -> a.Action:
    """The action as the box gets it: each secret's value in place of its name."""

    def value(name: str) -> str:
        if name not in values:
            raise BadRequest(missing_message([name]))
        return values[name]

    def item(given: str | a.SecretRef) -> str | a.SecretRef:
        return value(given.secret) if isinstance(given, a.SecretRef) else given

    match action:
        case a.Type(secret=str() as name):
            return msgspec.structs.replace(action, text=value(name), secret=None)
        case a.OnPage(what=a.FillOp(secret=str() as name) as fill):
            what = msgspec.structs.replace(fill, text=value(name), secret=None)
            return msgspec.structs.replace(action, what=what)
        case a.Exec(what=what) if names_in([action]):
            argv = [item(arg) for arg in what.argv]
            env = {key: item(given) for key, given in what.env.items()}
            return a.Exec(what=msgspec.structs.replace(what, argv=argv, env=env))
    return action


def secret_bytes(action: a.Action, values: Mapping[str, str]) -> int | None:
    """The length in bytes of the text a `type` or `fill` typed from a secret, which the
    trace keeps beside the secret's name; None for any other step."""
    match action:
        case a.Type(secret=str() as name) | a.OnPage(what=a.FillOp(secret=str() as name)):
            return len(values.get(name, "").encode())
    return None


def scrubbed_text(text: str, values: Iterable[str]) -> str:
    # Longest first, so a value inside another is not left half shown.
    for value in sorted((v for v in values if v), key=len, reverse=True):
        text = text.replace(value, SHOWN)
    return text


def scrubbed_result(result: T, values: Iterable[str]) -> T:
    """An exec's output without the values (the one result a box writes freely into)."""
    values = list(values)
    if values and isinstance(result, ExecResult):
        return msgspec.structs.replace(
            result,
            stdout=scrubbed_text(result.stdout, values),
            stderr=scrubbed_text(result.stderr, values),
        )
    return result


def scrubbed_error(error: HolmError, values: Iterable[str]) -> HolmError:
    values = list(values)
    message = scrubbed_text(error.message, values)
    if message == error.message:
        return error
    return type(error)(message, retryable=error.retryable)


def _aad(workspace: str, name: str) -> bytes:
    return f"secret:{workspace}:{name}".encode()


class WorkspaceSecrets:
    """Each workspace's named secrets, as the server trace has them (`secret_set`,
    `secret_removed`: the last of a name's is what it is), so a restarted server, and every
    server that reads the same store, has them; with replicas, each holmd folds in what the
    others append as its feed follower reads it (engine/ownership.py), so a secret set
    through one holmd is typed by the holmd that runs the box. Values are sealed before they
    are written and opened only to be typed."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._records: dict[tuple[str, str], SecretSet] = {}
        # The seq of the last entry folded for each name: the follower may bring an entry
        # again, or after this holmd's own later one.
        self._folded: dict[tuple[str, str], int] = {}
        self._lock = asyncio.Lock()

    async def load(self) -> None:
        """Fold the server trace's secret entries (at start)."""
        after: int | None = None
        while True:
            page = await stored(self._engine.store.read(SERVER_TRACE, after, PAGE_MAX))
            if not page:
                break
            for item in page:
                self.fold(item)
            after = page[-1].seq

    def fold(self, item: Entry) -> None:
        """An entry of the server trace: a secret's, newer than the last of its name, is
        what the name is from now; any other is not the secrets'."""
        if not isinstance(item, SecretSet | SecretRemoved):
            return
        key = item.workspace, item.name
        if item.seq <= self._folded.get(key, -1):
            return
        self._folded[key] = item.seq
        if isinstance(item, SecretSet):
            self._records[key] = item
        else:
            self._records.pop(key, None)

    def names(self, workspace: str) -> dict[str, SecretSet]:
        return {name: r for (ws, name), r in sorted(self._records.items()) if ws == workspace}

    async def put(self, workspace: str, name: str, value: str) -> SecretSet:
        box = await self._engine.secrets_box()
        data = value.encode()
        sealed = base64.urlsafe_b64encode(box.seal(data, _aad(workspace, name))).decode()
        async with self._lock:
            made = entry(
                SecretSet, "agent", workspace=workspace, name=name, bytes=len(data), sealed=sealed
            )
            (kept,) = await self._engine.journal.append(SERVER_TRACE, [made])
            assert isinstance(kept, SecretSet)
            self.fold(kept)
        return kept

    async def remove(self, workspace: str, name: str) -> bool:
        async with self._lock:
            if (workspace, name) not in self._records:
                return False
            gone = entry(SecretRemoved, "agent", workspace=workspace, name=name)
            self.fold((await self._engine.journal.append(SERVER_TRACE, [gone]))[0])
        return True

    async def values(self, workspace: str, names: Iterable[str]) -> dict[str, str]:
        """The values of those of `names` the workspace has."""
        found: dict[str, str] = {}
        for name in names:
            record = self._records.get((workspace, name))
            if record is not None:
                box = await self._engine.secrets_box()
                sealed = base64.urlsafe_b64decode(record.sealed.encode())
                found[name] = box.open(sealed, _aad(workspace, name)).decode()
        return found


async def values_for(
    engine: Engine, workspace: str | None, names: set[str], given: Mapping[str, str]
) -> dict[str, str]:
    """The value of every name: the request's first, else the workspace's; a name with
    neither refuses the request."""
    values = {name: given[name] for name in names if name in given}
    wanted = names - values.keys()
    if wanted:
        values |= await engine.secrets.values(workspace or "", wanted)
    missing = names - values.keys()
    if missing:
        raise BadRequest(missing_message(missing))
    return values


__all__ = [
    "SHOWN",
    "WorkspaceSecrets",
    "missing_message",
    "names_in",
    "scrubbed_error",
    "scrubbed_result",
    "scrubbed_text",
    "secret_bytes",
    "values_for",
    "with_values",
]
