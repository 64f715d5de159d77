"""One real local box (bubblewrap, Xvfb, Chromium) per test module, for the page actions."""

from __future__ import annotations

import shutil
import tempfile
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest_asyncio

from holm.adapters.base import Desktop
from holm.adapters.local.runtime import LocalRuntime
from holm.wire.spec import Placement, Spec

# The kits of the HTTP tests (a holmd over local boxes).

# The X displays these tests may use (the machine is shared with other test runs).
DISPLAY_BASE = 360
DISPLAY_COUNT = 10


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def desktop() -> AsyncIterator[Desktop]:
    state_dir = Path(tempfile.mkdtemp(prefix="hp-", dir="/tmp"))
    runtime = LocalRuntime(
        state_dir / "boxes",
        f"pages-{uuid.uuid4().hex[:8]}",
        display_base=DISPLAY_BASE,
        display_count=DISPLAY_COUNT,
    )
    box_id = f"box_{uuid.uuid4().hex[:12]}"
    try:
        await runtime.create(box_id, Spec(), Placement())
        yield await runtime.desktop(box_id)
    finally:
        await runtime.delete(box_id)
        await runtime.close()
        shutil.rmtree(state_dir, ignore_errors=True)
