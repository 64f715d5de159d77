"""Secrets sealed before they are stored: AES-256-GCM (an AEAD, from `cryptography`) under
one key of the server, each sealed value bound to what it belongs to by its associated data
(`aad`, e.g. `b"runtime:cloud"`), so a sealed value copied onto another record does not
open there.

The key is `HOLM_SECRETS_KEY` (32 bytes, URL-safe base64, as `new_key()` makes it), or else
the one made at first start in `<state_dir>/secrets.key` (mode 0600, made whole or not at
all, reused on later starts). Replicas that share a store must share the key: give each the
same `HOLM_SECRETS_KEY`. A sealed value that does not open under the key (another key, or
a changed value) raises `SecretsKeyError`, never an empty secret.

A sealed value is one byte of version (1), a 12-byte random nonce, then the ciphertext with
its 16-byte tag.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import hashlib
import hmac
import logging
import os
import secrets
from pathlib import Path

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

log = logging.getLogger(__name__)

KEY_FILE = "secrets.key"
KEY_BYTES = 32
_VERSION = b"\x01"
_NONCE_BYTES = 12


class SecretsKeyError(ValueError):
    """The key cannot be had, or does not open what was sealed."""


def new_key() -> str:
    """A new key, as `HOLM_SECRETS_KEY` takes it."""
    return base64.urlsafe_b64encode(secrets.token_bytes(KEY_BYTES)).decode()


def _decoded_key(text: str, where: str) -> bytes:
    try:
        key = base64.urlsafe_b64decode(text.strip().encode())
    except (binascii.Error, ValueError):
        key = b""
    if len(key) != KEY_BYTES:
        raise SecretsKeyError(
            f"{where} is no secrets key: it must be {KEY_BYTES} bytes in URL-safe base64 "
            '(python3 -c "import holm.secrets_box as s; print(s.new_key())")'
        )
    return key


class SecretsBox:
    """Seals and opens values under one key."""

    def __init__(self, key: bytes) -> None:
        if len(key) != KEY_BYTES:
            raise SecretsKeyError(f"a secrets key is {KEY_BYTES} bytes, not {len(key)}")
        self._aead = AESGCM(key)
        # A key of its own for `derived`, so that no derived value says anything of the
        # key that seals.
        self._derive_key = hashlib.sha256(b"holm derive\0" + key).digest()

    def __repr__(self) -> str:
        return "SecretsBox(<key>)"

    @classmethod
    def of_setting(cls, env_key: str | None, state_dir: Path) -> SecretsBox:
        """The box of `HOLM_SECRETS_KEY` when set, else of the key file in `state_dir`
        (made when missing). Blocking: call it at start."""
        if env_key:
            return cls(_decoded_key(env_key, "HOLM_SECRETS_KEY"))
        path = state_dir / KEY_FILE
        return cls(_decoded_key(_kept_key(path), str(path)))

    def derived(self, label: bytes) -> bytes:
        """32 bytes that only this key makes from `label` (HMAC-SHA256): a secret of a
        thing (a box's VNC password) that every server with the key remakes, so it is
        never stored."""
        return hmac.new(self._derive_key, label, hashlib.sha256).digest()

    def seal(self, plaintext: bytes, aad: bytes) -> bytes:
        nonce = secrets.token_bytes(_NONCE_BYTES)
        return _VERSION + nonce + self._aead.encrypt(nonce, plaintext, aad)

    def open(self, sealed: bytes, aad: bytes) -> bytes:
        if sealed[:1] != _VERSION or len(sealed) < 1 + _NONCE_BYTES + 16:
            raise SecretsKeyError("a sealed secret of an unknown format")
        nonce, body = sealed[1 : 1 + _NONCE_BYTES], sealed[1 + _NONCE_BYTES :]
        try:
            return self._aead.decrypt(nonce, body, aad)
        except InvalidTag:
            raise SecretsKeyError(
                "a stored secret does not open with this server's secrets key "
                "(HOLM_SECRETS_KEY, or secrets.key in the state dir): was the key changed?"
            ) from None


def _kept_key(path: Path) -> str:
    """The key in `path`, or a new one written there (0600) first."""
    with contextlib.suppress(FileNotFoundError):
        return path.read_text()
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    key = new_key()
    partial = path.with_name(f".{path.name}.{os.getpid()}")
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    try:
        os.write(fd, key.encode() + b"\n")
        os.fsync(fd)
    finally:
        os.close(fd)
    try:
        # Not over a key another process made meanwhile: what it sealed stays openable.
        os.link(partial, path)
    except FileExistsError:
        return path.read_text()
    finally:
        partial.unlink()
    log.info("made a secrets key in %s (never shown; HOLM_SECRETS_KEY overrides it)", path)
    return key


__all__ = ["KEY_FILE", "SecretsBox", "SecretsKeyError", "new_key"]
