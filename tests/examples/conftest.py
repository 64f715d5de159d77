"""Fixtures of the examples' tests: the real holmd of the client's and the CLI's end-to-end
tests (tests/cli/e2e_kit.py), and one box that every example drives (each one opens its
own page first), removed after them."""

from __future__ import annotations

from collections.abc import Iterator

import e2e_kit
import pytest
from e2e_kit import Holmd

from holm import Box

holmd = e2e_kit.holmd


@pytest.fixture(scope="session")
def shared_box(holmd: Holmd) -> Iterator[Box]:
    with Box.create(url=holmd.url, token=holmd.token) as box:
        yield box
