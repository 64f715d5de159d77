"""What the client's and the CLI's end-to-end tests share: the fixtures of a real holmd in
a subprocess (kits.holmd), and the types of the fixtures that run `holm`."""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterator

import pytest
from click.testing import Result
from kits.holmd import HOLM, TOKEN, Holmd

# `holm ARGS…` in-process (CliRunner), and as a real subprocess.
RunHolm = Callable[..., Result]
RunHolmProcess = Callable[..., "subprocess.CompletedProcess[bytes]"]

__all__ = ["HOLM", "TOKEN", "Holmd", "RunHolm", "RunHolmProcess", "box", "holmd", "memory_holmd"]


# The fixtures both suites use: conftest.py of tests/cli and tests/client import them.


@pytest.fixture(scope="session")
def holmd() -> Iterator[Holmd]:
    server = Holmd()
    server.start()
    yield server
    server.close()


@pytest.fixture(scope="module")
def memory_holmd() -> Iterator[Holmd]:
    """A holmd of its own for one module, on the in-memory runtime: no desktop."""
    server = Holmd(runtime="memory")
    server.start()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture(scope="module")
def box(holmd: Holmd) -> Iterator[str]:
    """A box with the defaults for the tests of one module; removed after them."""
    box_id = holmd.create()
    yield box_id
    holmd.remove(box_id)
