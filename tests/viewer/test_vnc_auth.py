"""RFB's VNC authentication (holm/vnc_auth.py) against known values, and the door's limit
on wrong passwords (door.Failures) on a clock the test moves."""

from __future__ import annotations

import pytest

from holm.http.viewer.door import Failures
from holm.secrets_box import SecretsBox
from holm.vnc_auth import ALPHABET, answers, des_key, fits, password_of, response_to

CHALLENGE = b"0123456789abcdef"
# `printf 0123456789abcdef | openssl enc -provider legacy -provider default -des-ecb
#  -nopad -K 0e86ceceeef64e26 | xxd -p`: DES of the challenge under "password"'s VNC key.
PASSWORD_RESPONSE = bytes.fromhex("5645abeb5f1e6475e8feb11beb66ea19")


def test_the_key_is_the_password_with_each_byte_s_bits_reversed() -> None:
    # "p" is 0x70 = 01110000, reversed 00001110 = 0x0e; the rest zero-padded to 8 bytes.
    assert des_key("password") == bytes.fromhex("0e86ceceeef64e26")
    assert des_key("p") == bytes.fromhex("0e00000000000000")
    with pytest.raises(ValueError, match="at most 8"):
        des_key("ninechars")


def test_the_response_is_des_of_the_challenge_as_openssl_makes_it() -> None:
    assert response_to(CHALLENGE, "password") == PASSWORD_RESPONSE
    assert answers(CHALLENGE, PASSWORD_RESPONSE, "password")
    assert not answers(CHALLENGE, PASSWORD_RESPONSE, "passwore")
    assert not answers(b"1123456789abcdef", PASSWORD_RESPONSE, "password")


def test_the_response_is_what_vncdotool_answers() -> None:
    from vncdotool.rfb import _vnc_des, des_encrypt

    for password in ("a", "Sesame1", "8charsXY"):
        assert response_to(CHALLENGE, password) == des_encrypt(_vnc_des(password), CHALLENGE)


def test_what_can_be_a_vnc_password() -> None:
    assert fits("8charsXY") is None
    assert "empty" in (fits("") or "")
    assert "at most 8" in (fits("ninechars") or "")
    assert "Latin-1" in (fits("pass→") or "")


def test_a_made_password_is_eight_readable_characters_from_its_seed() -> None:
    made = password_of(bytes(range(32)))
    assert len(made) == 8 and set(made) <= set(ALPHABET)
    assert password_of(bytes(range(32))) == made
    assert password_of(bytes(range(1, 33))) != made
    with pytest.raises(ValueError):
        password_of(b"short")


def test_a_derived_secret_is_the_key_s_and_the_label_s() -> None:
    box = SecretsBox(bytes(32))
    assert box.derived(b"vnc-password:box_a") == SecretsBox(bytes(32)).derived(
        b"vnc-password:box_a"
    )
    assert box.derived(b"vnc-password:box_a") != box.derived(b"vnc-password:box_b")
    assert box.derived(b"vnc-password:box_a") != SecretsBox(b"\1" * 32).derived(
        b"vnc-password:box_a"
    )


def test_the_door_shuts_after_too_many_wrong_passwords_for_its_window() -> None:
    now = [0.0]
    failures = Failures(limit=3, window=60.0, clock=lambda: now[0])
    for _ in range(2):
        failures.add()
    assert not failures.shut()
    failures.add()
    assert failures.shut()
    now[0] = 59.9
    assert failures.shut()
    # The first failure is a minute old: two left, under the limit.
    now[0] = 60.0
    assert not failures.shut()
