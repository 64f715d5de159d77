"""RFB's VNC Authentication (security type 2, RFC 6143 §7.2.2), the server's half: a
16-byte random challenge, which the client answers with the challenge encrypted by DES
under the password, each key byte's bits in reverse order (as every VNC server and client
does; RFC 6143 leaves it out, errata 4951 has it).

The key is the password's first 8 bytes, padded with zeros: RFB's password is at most 8
characters, so holmd refuses a longer one rather than let a client's truncation pass for
it. DES is weak and is what the standard clients speak: the door (door.py) limits attempts
and the docs say to keep it on loopback or behind a tunnel.

Single DES is TripleDES with the 8-byte key repeated (K1 = K2 = K3), which `cryptography`
keeps under `hazmat.decrepit`.
"""

from __future__ import annotations

import hmac
import secrets

from cryptography.hazmat.decrepit.ciphers.algorithms import TripleDES
from cryptography.hazmat.primitives.ciphers import Cipher, modes

CHALLENGE_BYTES = 16
MAX_PASSWORD = 8
# Letters and digits a person can read out and type: no 0/O, 1/l/I.
ALPHABET = "abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789"


def _reversed_bits(byte: int) -> int:
    return int(f"{byte:08b}"[::-1], 2)


def des_key(password: str) -> bytes:
    """The DES key of a password as VNC makes it: 8 bytes, zero-padded, bits reversed."""
    raw = password.encode("latin-1")
    if len(raw) > MAX_PASSWORD:
        raise ValueError(f"a VNC password is at most {MAX_PASSWORD} characters (RFB's DES key)")
    return bytes(_reversed_bits(b) for b in raw.ljust(MAX_PASSWORD, b"\0"))


def response_to(challenge: bytes, password: str) -> bytes:
    """What a client that knows `password` answers to `challenge`."""
    if len(challenge) != CHALLENGE_BYTES:
        raise ValueError(f"an RFB challenge is {CHALLENGE_BYTES} bytes")
    key = des_key(password)
    encryptor = Cipher(TripleDES(key * 3), modes.ECB()).encryptor()
    return encryptor.update(challenge) + encryptor.finalize()


def new_challenge() -> bytes:
    return secrets.token_bytes(CHALLENGE_BYTES)


def answers(challenge: bytes, response: bytes, password: str) -> bool:
    """Whether `response` is the right answer to `challenge`, compared in constant time."""
    return hmac.compare_digest(response_to(challenge, password), response)


def password_of(seed: bytes) -> str:
    """An 8-character password drawn from `seed` (at least 8 bytes, uniformly random or a
    keyed digest): 8 × log2(56) ≈ 46 bits, as much as RFB's 8 characters carry here."""
    if len(seed) < MAX_PASSWORD:
        raise ValueError("a password seed is at least 8 bytes")
    number = int.from_bytes(seed, "big")
    chars = []
    for _ in range(MAX_PASSWORD):
        number, index = divmod(number, len(ALPHABET))
        chars.append(ALPHABET[index])
    return "".join(chars)


def fits(password: str) -> str | None:
    """Why `password` cannot be a VNC password, or None when it can."""
    if not password:
        return "a VNC password cannot be empty"
    try:
        raw = password.encode("latin-1")
    except UnicodeEncodeError:
        return "a VNC password is Latin-1 text (RFB's DES key is its bytes)"
    if len(raw) > MAX_PASSWORD:
        return f"a VNC password is at most {MAX_PASSWORD} characters (RFB's DES key)"
    return None


__all__ = [
    "CHALLENGE_BYTES",
    "MAX_PASSWORD",
    "answers",
    "des_key",
    "fits",
    "new_challenge",
    "password_of",
    "response_to",
]
