"""A person's typed text, kept sealed (docs/trace.md, "What a person did"): what a person
types through the control viewer is recorded as a `type` whose text is left out
(`text: ""`, its length in `bytes`) and whose ciphertext is in the entry's `sealed`, under
a data key of that trace's own (AES-256-GCM, bound to the trace). The data key is kept apart
from the entries (`holm.events.trace_keys`), sealed under the server's key, so shredding it
(`DELETE …/trace/secrets`) makes every sealed text of the trace unreadable for good while
the entries stay. `HOLM_RECORD_PERSON_TEXT=off` keeps no ciphertext at all.
"""

from __future__ import annotations

import base64
import secrets
from typing import TYPE_CHECKING

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from holm.events.trace_keys import TraceKeys

if TYPE_CHECKING:
    from .engine import Engine

_VERSION = b"\x01"
_NONCE_BYTES = 12


def _key_aad(trace: str) -> bytes:
    return f"trace-key:{trace}".encode()


def _text_aad(trace: str) -> bytes:
    return f"person-text:{trace}".encode()


class PersonText:
    def __init__(self, engine: Engine, keys: TraceKeys) -> None:
        self._engine = engine
        self._keys = keys
        self._open: dict[str, AESGCM] = {}

    async def _data_key(self, trace: str, *, make: bool) -> AESGCM | None:
        known = self._open.get(trace)
        if known is not None:
            return known
        box = await self._engine.secrets_box()
        sealed = await self._keys.get(trace)
        if sealed is None:
            if not make:
                return None
            await self._keys.put(trace, box.seal(secrets.token_bytes(32), _key_aad(trace)))
            # The first key kept wins, should two writers have made one at once.
            sealed = await self._keys.get(trace)
            assert sealed is not None
        aead = AESGCM(box.open(sealed, _key_aad(trace)))
        self._open[trace] = aead
        return aead

    async def seal(self, trace: str, text: str) -> str:
        aead = await self._data_key(trace, make=True)
        assert aead is not None
        nonce = secrets.token_bytes(_NONCE_BYTES)
        sealed = _VERSION + nonce + aead.encrypt(nonce, text.encode(), _text_aad(trace))
        return base64.urlsafe_b64encode(sealed).decode()

    async def open(self, trace: str, sealed: str) -> str | None:
        """The text, or None when the trace's key was shredded (or never made)."""
        aead = await self._data_key(trace, make=False)
        if aead is None:
            return None
        data = base64.urlsafe_b64decode(sealed.encode())
        nonce, body = data[1 : 1 + _NONCE_BYTES], data[1 + _NONCE_BYTES :]
        try:
            return aead.decrypt(nonce, body, _text_aad(trace)).decode()
        except InvalidTag:
            return None

    async def shred(self, trace: str) -> bool:
        self._open.pop(trace, None)
        return await self._keys.drop(trace)


__all__ = ["PersonText"]
