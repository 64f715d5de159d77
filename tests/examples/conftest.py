"""Fixtures of the examples' tests: the real holmd of the client's and the CLI's end-to-end
tests (tests/cli/e2e_kit.py), and one box that every example drives (each one opens its
own page first), removed after them."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "cli"))
sys.path.insert(0, str(ROOT / "examples"))

import e2e_kit  # noqa: E402
from e2e_kit import Holmd  # noqa: E402

from holm import Box  # noqa: E402

holmd = e2e_kit.holmd


@pytest.fixture(scope="session")
def shared_box(holmd: Holmd) -> Iterator[Box]:
    with Box.create(url=holmd.url, token=holmd.token) as box:
        yield box
